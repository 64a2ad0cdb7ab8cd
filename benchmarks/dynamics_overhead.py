"""Side by side: training without and with dynamics recording (posenc.empirical.analysis.dynamics).

Trains the same config twice into temporary folders -- recording off (``dynamics=None``) and on
(``DynamicsConfig(every=...)``) -- and prints wall-clock and CPU time (this process, all threads)
of each, their ratio, and the time spent inside the recorder itself (timed around
``DynamicsRecorder.record``), which is less noisy on a shared machine than the difference of two
runs.  Checks that both runs give identical metrics (recording never changes training).
Target: on/off < 1.10; off has no recorder code on its path at all.  Run:

    python benchmarks/dynamics_overhead.py [--preset quick] [--pe rope] [--epochs 1]
                                           [--threads 1] [--every 25] [--repeats 1]
                                           [--probe-examples N] [--ablation-every K]
                                           [--ablation-examples N]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from posenc.empirical.analysis import dynamics
from posenc.empirical.config import preset
from posenc.empirical.training.train import train


def timed_train(cfg, dyn):
    spent = {"wall": 0.0, "cpu": 0.0, "records": 0}
    original = dynamics.DynamicsRecorder.record

    def record(self, *args, **kwargs):
        w, c = time.perf_counter(), time.process_time()
        original(self, *args, **kwargs)
        spent["wall"] += time.perf_counter() - w
        spent["cpu"] += time.process_time() - c
        spent["records"] += 1

    dynamics.DynamicsRecorder.record = record
    try:
        with tempfile.TemporaryDirectory() as tmp:
            w, c = time.perf_counter(), time.process_time()
            res = train(cfg, tmp, progress=False, dynamics=dyn)
            total = {"wall": time.perf_counter() - w, "cpu": time.process_time() - c}
    finally:
        dynamics.DynamicsRecorder.record = original
    return res, total, spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--task", default="distance")
    ap.add_argument("--pe", default="rope")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--probe-examples", type=int, default=None)
    ap.add_argument("--ablation-every", type=int, default=None)
    ap.add_argument("--ablation-examples", type=int, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = preset(args.preset, task=args.task, pe=args.pe, epochs=args.epochs,
                 num_threads=args.threads)
    extra = {k: v for k, v in (("probe_examples", args.probe_examples),
                                ("ablation_every", args.ablation_every),
                                ("ablation_examples", args.ablation_examples)) if v is not None}
    dyn = dynamics.DynamicsConfig(every=args.every, **extra)
    print(f"{args.preset} {args.task} {args.pe}, {args.epochs} epoch(s), {args.threads} thread(s), "
          f"record every {args.every} steps ({dyn})")
    rows = []
    for rep in range(args.repeats):  # alternate off / on so that load drifts hit both
        off, t_off, _ = timed_train(cfg, None)
        on, t_on, rec = timed_train(cfg, dyn)
        assert off.metrics == on.metrics, "recording changed the training metrics"
        rows.append((t_off, t_on, rec))
        print(f"repeat {rep}: off wall {t_off['wall']:.1f} s cpu {t_off['cpu']:.1f} s | on wall "
              f"{t_on['wall']:.1f} s cpu {t_on['cpu']:.1f} s | recorder {rec['records']} records, "
              f"wall {rec['wall']:.1f} s cpu {rec['cpu']:.1f} s")
    for key in ("wall", "cpu"):
        off = min(r[0][key] for r in rows)
        on = min(r[1][key] for r in rows)
        inside = min(r[2][key] / (r[1][key] - r[2][key]) for r in rows)
        print(f"{key:>4}: on/off = {on / off:.3f}   recorder / (rest of the run) = {inside:.3f}")


if __name__ == "__main__":
    main()
