"""The `paper` preset's anchor on one lent GPU: one distance role of the paper
code's models at the paper code's own sizes, data and optimiser, in one prepared command.

A sweep of the `paper` preset needs GPU-hours (docs/methods.md, "paper (the
anchor)"); a lent accelerator gives minutes.  This driver runs the roles it is given one after the
other, each as ``posenc reproduce --preset paper`` would build it (paper-code mode, 100,000
examples of the paper's sampler at vocabulary 574, d_model 256, 16 heads, 6 layers, dropout 0.1,
100 epochs of batch 512 at lr 1e-4, betas (0.98, 0.9)), with two stated changes:

* ``--precision`` (default bfloat16): the forward under bfloat16 autocast (weights, optimiser and
  loss in float32); the paper code runs float32.  Measured 2.6x faster per step at this size on an
  H200 (docs/usage.md); at float32 one run alone does not fit a lease's 10-minute command.
* the head ablation on ``--ablation-examples`` test examples (default 5,000) instead of the whole
  data set (the code's *vis.py; 100,000 examples x 96 heads would cost minutes more).

Before a role trains, its step and its evaluation pass are timed on the device (``--probe-steps``
steps after 3 warm-ups, dropout on, as in training).  A role whose 100 epochs do not fit the
time left before ``--budget`` seconds (less a reserve for the ablation and the probe) is *not
shortened*: a cosine schedule cut to fewer epochs is another preset; it is skipped, and the log
says what it would need.  ``--allow-shorter`` lets the first role run the epochs that fit, said
in the log and the result file ("shortened_from").

Each role's run folder (its checkpoint and per-step trace removed after the analysis) and a
JSON result (summary, per-epoch metrics, the ablation table, the probe, the timing) go under OUT.

    python scripts/paper_anchor.py OUT [--roles absolute+rope] [--budget 540]
    python scripts/paper_anchor.py OUT --dry-run      # a tiny CPU rehearsal of the same code
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

#: the dry run's overrides: the same code path at a size that runs in seconds on a CPU
DRY = {"task.n_samples": 3000, "epochs": 2, "batch_size": 64, "model.d_model": 32,
       "model.n_heads": 4, "model.n_layers": 2, "model.d_ff": 64}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def experiment(role: str, precision: str, device: str, ablation_examples: int, dry: bool):
    from posenc.empirical.config import apply_overrides
    from posenc.reproduction.plan import ReproductionPlan

    plan = ReproductionPlan(preset="paper", seeds=1, distance_roles=(role,), count_roles=())
    exp = plan.experiments()[0]
    cfg = exp.train.replace(precision=precision, device=device)
    if dry:
        cfg = apply_overrides(cfg, DRY)
    return exp.replace(train=cfg, ablation_examples=ablation_examples, ablation_data="test")


def time_step(cfg: Any, steps: int) -> tuple[float, float]:
    """(seconds per training step, seconds per evaluation of the test split) of ``cfg`` on its
    device, with the training loop's own pieces (model, optimiser, forward, autocast)."""
    import torch
    import torch.nn.functional as F

    from posenc.empirical.training.runs import dataset_for, model_for
    from posenc.empirical.training.train import (autocast, evaluate, make_optimizer,
                                                 resolve_device, step_forward)

    dev = resolve_device(cfg.device)
    split = dataset_for(cfg)
    torch.manual_seed(cfg.seed)
    model = model_for(cfg).to(dev)
    opt = make_optimizer(model, cfg)
    forward = step_forward(cfg.step)
    tok = split.train.tokens[: cfg.batch_size].to(dev)
    lab = split.train.labels[: cfg.batch_size].to(dev)
    model.train()
    for i in range(steps + 3):
        if i == 3:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        with autocast(cfg.precision, dev):
            loss = F.cross_entropy(forward(model, tok).float(), lab)
        float(loss.detach())  # the training loop syncs every step too
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip or math.inf)
        opt.step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    per_step = (time.perf_counter() - t0) / steps
    t1 = time.perf_counter()
    evaluate(model, split.test, cfg.eval_batch_size, dev, cfg.precision, cfg.step)
    return per_step, time.perf_counter() - t1


def epochs_to_run(epochs: int, per_epoch: float, left: float, may_shorten: bool) -> int:
    """The epochs a role runs: the preset's ``epochs`` when they fit in ``left`` seconds at
    ``per_epoch`` seconds each; else, where ``may_shorten``, as many as fit (at least one);
    else 0 (skipped: a cosine cut to fewer epochs is another preset)."""
    fits = int(left // per_epoch) if per_epoch > 0 else epochs
    if fits >= epochs:
        return epochs
    return fits if may_shorten and fits >= 1 else 0


def deposit_rows(ablation: dict[str, Any]) -> list[dict[str, Any]]:
    """Per layer: the largest single-head drop, its head, the runner-up gap, the deposit index."""
    return [{k: la[k] for k in ("layer", "largest_drop", "deposit_head", "runner_up_gap",
                                "deposit_index")} for la in ablation["layers"]]


def run_role(role: str, a: argparse.Namespace, deadline: float, out: Path, first: bool) -> bool:
    import torch

    from posenc.empirical.analysis.dynamics import DynamicsConfig
    from posenc.empirical.pipeline.experiment import measure
    from posenc.empirical.training.train import train

    device = "cpu" if a.dry_run else "cuda"
    exp = experiment(role, a.precision, device, a.ablation_examples, a.dry_run)
    cfg = exp.train
    per_step, per_eval = time_step(cfg, a.probe_steps)
    n_train = int(round(cfg.task.n_samples * cfg.task.train_frac))
    steps_per_epoch = math.ceil(n_train / cfg.batch_size)
    per_epoch = steps_per_epoch * per_step * a.margin + per_eval
    left = deadline - time.time() - a.reserve
    run_epochs = epochs_to_run(cfg.epochs, per_epoch, left, a.allow_shorter and first)
    log(f"{role}: {per_step * 1e3:.1f} ms/step (batch {cfg.batch_size}, {cfg.precision}), "
        f"test eval {per_eval:.2f} s, {steps_per_epoch} steps/epoch -> {per_epoch:.1f} s/epoch "
        f"with margin {a.margin}; {cfg.epochs} epochs need {cfg.epochs * per_epoch:.0f} s, "
        f"{left:.0f} s left")
    shortened = None
    if run_epochs == 0:
        log(f"{role}: SKIPPED (the preset's {cfg.epochs} epochs do not fit)")
        return False
    if run_epochs < cfg.epochs:
        shortened, cfg = cfg.epochs, cfg.replace(epochs=run_epochs)
        log(f"{role}: SHORTENED from {shortened} to {run_epochs} epochs (cosine over {run_epochs})")
        exp = exp.replace(train=cfg)
    folder = out / role.replace("+", "_plus_")
    dyn = DynamicsConfig.from_dict(exp.dynamics) if exp.dynamics is not None else None
    t0 = time.time()
    res = train(cfg, folder, progress=None, dynamics=dyn)
    log(f"{role}: trained in {time.time() - t0:.0f} s: test {res.final_test_acc:.4f} "
        f"(best epoch's {res.best_test_acc:.4f})")
    result = measure(exp, cfg, str(folder), res, dyn)
    for name in ("checkpoint.pt", "trace.jsonl"):  # (the trace is summarised in the result)
        if (folder / name).exists():
            (folder / name).unlink()
    result.update(role=role, shortened_from=shortened, run_id=cfg.run_id(),
                  timing={"ms_per_step": per_step * 1e3, "eval_seconds": per_eval,
                          "steps_per_epoch": steps_per_epoch, "train_seconds": time.time() - t0},
                  device=torch.cuda.get_device_name() if device == "cuda" else "cpu",
                  torch=torch.__version__, deposit=deposit_rows(result["ablation"]["zero"])
                  if result["ablation"] else None)
    (out / f"{folder.name}.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    for row in result["deposit"] or []:
        log(f"{role}: layer {row['layer']}: largest drop {row['largest_drop']:.3f} (head "
            f"{row['deposit_head']}), runner-up gap {row['runner_up_gap']:.3f}")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--roles", default="absolute+rope", help="comma-separated distance roles")
    ap.add_argument("--budget", type=float, default=540.0, help="seconds for the whole command")
    ap.add_argument("--reserve", type=float, default=60.0,
                    help="seconds kept per role for the ablation, the probe and the files")
    ap.add_argument("--margin", type=float, default=1.1, help="factor on the timed step")
    ap.add_argument("--probe-steps", type=int, default=10)
    ap.add_argument("--precision", default="bfloat16", choices=("float32", "bfloat16"))
    ap.add_argument("--ablation-examples", type=int, default=5000)
    ap.add_argument("--allow-shorter", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="a tiny CPU rehearsal")
    a = ap.parse_args()
    deadline = time.time() + a.budget
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torch
    log(f"torch {torch.__version__}, cuda {torch.cuda.is_available()}"
        + (f" ({torch.cuda.get_device_name()})" if torch.cuda.is_available() else ""))
    done = [r for i, r in enumerate(a.roles.split(",")) if run_role(r, a, deadline, out, i == 0)]
    log(f"done: {', '.join(done) or 'nothing'}")
    (out / "done.json").write_text(json.dumps({"roles": done}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
