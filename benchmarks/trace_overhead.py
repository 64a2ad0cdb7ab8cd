"""Side by side: the training trace's per-step cost (posenc.empirical.training.trace) against a train step.

The trace is always on, so instead of two trainings this times, on one model and batch of a
preset's size, (a) a training step (forward, backward, AdamW step) and (b) what the trace adds
to it: the gradient norm (``grad_norm``, or the norm ``clip_grad_norm_`` returns anyway) and
``TraceRecorder.step``; plus (c) ``TraceRecorder.end_epoch`` per epoch amortised over the
epoch's steps.  Prints each per step and the ratio (a + b + c) / a.  Target: < 1.05
(measured 2026-11-30, 1 thread, machine under load: 1.028 at the smoke size, 1.008 at the
quick size).  Run:

    python benchmarks/trace_overhead.py [--preset smoke] [--pe relative_bias:mode=table]
                                        [--steps 200] [--threads 1]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time

import torch
import torch.nn.functional as F

from posenc.empirical.config import preset
from posenc.empirical.training.runs import dataset_for, model_for
from posenc.empirical.training.trace import TraceRecorder, grad_norm


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="smoke")
    ap.add_argument("--pe", default="relative_bias:mode=table")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = preset(a.preset, "distance", a.pe)
    data = dataset_for(cfg).train
    torch.manual_seed(0)
    model = model_for(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    tok, lab = data.tokens[:cfg.batch_size], data.labels[:cfg.batch_size]
    rec = TraceRecorder(tempfile.mkdtemp(), "bench", a.steps, int(data.tokens.shape[1]))
    rec.start(model, 0)
    step_t = extra_t = 0.0
    for _ in range(a.steps):
        t0 = time.perf_counter()
        logits = model(tok).float()
        loss = F.cross_entropy(logits, lab)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        hits = int((logits.argmax(-1) == lab).sum())
        t1 = time.perf_counter()
        rec.step(loss, grad_norm(model.parameters()), hits / len(lab))
        t2 = time.perf_counter()
        step_t += t1 - t0
        extra_t += t2 - t1
    steps_per_epoch = math.ceil(len(data) / cfg.batch_size)
    t0 = time.perf_counter()
    rec.end_epoch(1, model)  # one epoch's record of a.steps steps, written atomically
    epoch_t = (time.perf_counter() - t0) / max(a.steps, steps_per_epoch)  # amortised
    s, e = step_t / a.steps, extra_t / a.steps
    print(f"{a.preset} {a.pe}, {a.steps} steps, {a.threads} thread(s): train step {1e3 * s:.3f} ms, "
          f"trace per step {1e3 * e:.4f} ms + end of epoch {1e3 * epoch_t:.4f} ms per step; "
          f"ratio {(s + e + epoch_t) / s:.4f}")


if __name__ == "__main__":
    main()
