"""Calibration of a preset in the paper's regime: candidates on seeds 1000+.

Every candidate starts from the diagnostic grid's ``paper/regime`` cell -- the paper code's
models (paper-code mode) on the paper code's own distance task (the paper's sampler at
vocabulary 574, sides 1..25, gaps 1..70, padded to 128 tokens), posenc's quick model sizes
(d_model 64, 8 heads, 4 layers, d_ff 128) and the quick optimiser (AdamW 1e-3, betas (0.9, 0.98),
6% warm-up then cosine over the maximum, clipping 1.0) -- and changes what :data:`CANDIDATES`
says (examples, batch, epochs, ...).  Patience is the maximum (full curves: the stopping rule is
calibrated on them afterwards), one thread per run, the checkpoint and the per-step trace removed
once a run has finished, a run whose summary is there skipped.  These seeds (1000+) are never
used by the report.

    python scripts/regime_calibration.py OUT --candidates A,B --roles rope,alibi [--seeds 1000]
    python scripts/regime_calibration.py OUT --table
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from diagnostic_grid import DROPPED, _rows, cell_config  # noqa: E402

BASE_CELL = "paper/regime"
#: candidate -> overrides of the base cell's config; 30,000 examples = 18,900 training, 2,100
#: validation and 9,000 test examples (train_frac 0.7, val_frac 0.1)
CANDIDATES: dict[str, dict[str, Any]] = {
    # the first look's budget (18,900 examples x 6 epochs at batch 16): 7,092 steps, ~750 s
    "first_look": {"task.n_samples": 30000, "epochs": 6},
    "b32_n30k_e4": {"task.n_samples": 30000, "batch_size": 32, "epochs": 4},
    "b32_n20k_e6": {"task.n_samples": 20000, "batch_size": 32, "epochs": 6},
    # wave 2 (after wave 1: at batch 32 and lr 1e-3, RoPE had not left 20% by 1,200-1,600 steps)
    "b32_lr2e3_n30k_e4": {"task.n_samples": 30000, "batch_size": 32, "lr": 2e-3, "epochs": 4},
    "b16_n20k_e5": {"task.n_samples": 20000, "epochs": 5},
    # wave 3 (after wave 2: at batch 16 and lr 1e-3 RoPE's jump came at 3,000-4,000 steps and
    # the cosine ran out of learning rate during it, 68.5% at 3,940 steps): a larger peak rate
    "b16_lr2e3_n20k_e5": {"task.n_samples": 20000, "lr": 2e-3, "epochs": 5},
    "b16_lr3e3_n20k_e5": {"task.n_samples": 20000, "lr": 3e-3, "epochs": 5},
    # wave 4 (after the first seed of the sweep at the frozen b16_lr3e3_n20k_e5: sinusoidal,
    # ALiBi, MLA, partial RoPE and the relative table still gained 4-15 points in their last
    # epoch): the same rate over three times the epochs, full curves of every role
    "b16_lr3e3_n20k_e15": {"task.n_samples": 20000, "lr": 3e-3, "epochs": 15},
}


def candidate_config(candidate: str, seed: int, role: str) -> Any:
    from posenc.empirical.config import apply_overrides

    if candidate not in CANDIDATES:
        raise SystemExit(f"unknown candidate {candidate!r}; known: {', '.join(CANDIDATES)}")
    cfg = apply_overrides(cell_config(BASE_CELL, seed, role), CANDIDATES[candidate])
    return apply_overrides(cfg, {"patience": cfg.epochs})


def _run(job: tuple[str, str, int, str]) -> str:
    from posenc.empirical.training.train import train

    candidate, role, seed, out = job
    cfg = candidate_config(candidate, seed, role)
    folder = Path(out) / candidate / cfg.run_id()
    if (folder / "train_summary.json").is_file():
        return f"{candidate} {role} s{seed}: done before"
    cpu0 = time.process_time()
    result = train(cfg, folder, progress=False)
    cpu = time.process_time() - cpu0  # one thread: the run's own cost, whatever the load
    (folder / "cpu_seconds.json").write_text(json.dumps({"cpu_seconds": round(cpu, 1)}))
    for name in DROPPED:
        (folder / name).unlink(missing_ok=True)
    return (f"{candidate} {role} s{seed}: test {100 * result.final_test_acc:.1f}% in "
            f"{result.seconds:.0f} s ({cpu:.0f} s CPU)")


def table(out: Path) -> str:
    """One row per finished run: candidate, role, seed, optimiser steps, batch, peak rate, the
    last epoch's train and validation accuracy, the best validation accuracy (epoch), the test
    accuracy of the kept weights, and the run's CPU seconds (one thread; recorded from wave 4
    on) beside its wall seconds (under a load that varied from run to run)."""
    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.1f}"
    lines = ["| candidate | PE | seed | steps | batch | peak lr | train % (last) | val % (last) | "
             "best val % (epoch) | test % | CPU s | wall s |", "|---" * 12 + "|"]
    for r in _rows(out):
        lines.append(f"| {r['cell']} | {r['pe']} | {r['seed']} | {r['steps']} | {r['batch']} | "
                     f"{r['lr']:g} | {f(r['train_acc'])} | {f(r['val_acc'])} | "
                     f"{f(r['best_val'])} ({r['best_epoch']}) | {f(r['test_acc'])} | "
                     f"{f(r['cpu_seconds'])} | {r['seconds']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--candidates", default="")
    p.add_argument("--roles", default="rope")
    p.add_argument("--seeds", default="1000")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--table", action="store_true", help="print the table of finished runs only")
    args = p.parse_args(argv)
    if args.table:
        print(table(args.out))
        return 0
    seeds = [int(s) for s in args.seeds.split(",")]
    cands = [c for c in args.candidates.split(",") if c]
    roles = [r for r in args.roles.split(",") if r]
    jobs = [(c, r, s, str(args.out)) for s in seeds for c in cands for r in roles]
    for c, r, s, _ in jobs:
        candidate_config(c, s, r)  # refuse a bad candidate or role before any training
    with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=1) as pool:
        for line in pool.imap_unordered(_run, jobs):
            print(line, flush=True)
    print(table(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
