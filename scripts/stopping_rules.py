"""Replay early-stopping rules on full training curves (calibration of the quick preset).

Each run folder under the given roots was trained to its maximum number of epochs with a
patience that never fires (``posenc train --patience <max>``), so its ``metrics.jsonl`` holds the
whole validation and test history; because the trajectory of a run does not depend on when it is
stopped (the learning-rate schedule runs over the maximum), every stopping rule can be replayed on
that one history: where it would have stopped and which epoch's weights it would have kept.  A
rule *stops before learning* on a run when the validation accuracy of the epoch it keeps is more
than ``--miss`` points below the best validation accuracy the run reached in its maximum budget
(under early stopping a run evaluates its validation split every epoch, its test split only at
the end, so the calibration never reads a test accuracy).

    python scripts/stopping_rules.py CAL_DIR [CAL_DIR ...] [--miss 10] [--csv OUT]

Nothing here chooses the rule: it prints, per rule, the runs it stops before learning and the
epochs it costs; docs/methods.md records the choice.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Sequence

Curve = list[dict]


def best_index(vals: Sequence[float]) -> int:
    """train.py's rule: the earliest strictly best entry."""
    best = 0
    for i, v in enumerate(vals):
        if v > vals[best]:
            best = i
    return best


def replay(curve: Curve, stop: Callable[[Curve], bool]) -> tuple[int, bool]:
    """The number of epochs a rule trains (the first prefix on which ``stop`` fires, else all)
    and whether it fired."""
    for n in range(1, len(curve) + 1):
        if stop(curve[:n]):
            return n, True
    return len(curve), False


def loss_progress_index(losses: Sequence[float], tol: float = 0.0) -> int:
    """The last epoch whose validation loss was below the best before it by more than ``tol``
    times that best (``tol = 0``: the earliest lowest loss, as train.py counts it)."""
    best, last = losses[0], 0
    for i, v in enumerate(losses[1:], start=1):
        if v < best * (1.0 - tol):
            best, last = v, i
    return last


def patience_rule(p: int, min_epochs: int = 0, loss: bool = False,
                  loss_tol: float = 0.0) -> Callable[[Curve], bool]:
    """Stop once ``p`` epochs have not raised the best validation accuracy (or, with ``loss``,
    neither the best accuracy nor the lowest validation loss -- by more than the relative
    ``loss_tol``), at once on a perfect one, never before ``min_epochs``."""
    def stop(c: Curve) -> bool:
        acc = [m["val_acc"] for m in c]
        b = best_index(acc)
        if acc[b] >= 1.0:
            return True
        if len(c) < min_epochs:
            return False
        since = len(c) - 1 - b
        if loss:
            since = min(since, len(c) - 1 - loss_progress_index([m["val_loss"] for m in c],
                                                                   loss_tol))
        return since >= p
    return stop


RULES = {f"patience {p}": patience_rule(p) for p in (5, 8, 10, 15, 20)}
RULES.update({f"min {m} + patience 5": patience_rule(5, m) for m in (15, 20, 25)})
RULES.update({f"min {m} + patience 10": patience_rule(10, m) for m in (15, 20)})
RULES.update({f"acc or loss, patience {p}": patience_rule(p, loss=True) for p in (5, 8, 10)})
# 2026-12-02 (evening): does a tolerance on the loss stop the runs that end at the maximum?
RULES.update({f"acc or loss>{t:.1%}, patience {p}": patience_rule(p, loss=True, loss_tol=t)
              for p in (5, 8) for t in (0.01, 0.02, 0.05)})


def load(roots: Sequence[str]) -> dict[str, tuple[dict, Curve]]:
    runs = {}
    for root in roots:
        for cfg_file in sorted(Path(root).glob("*/train_config.json")):
            metrics = cfg_file.parent / "metrics.jsonl"
            if not metrics.exists():
                continue
            curve = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
            cfg = json.loads(cfg_file.read_text())
            if len(curve) < cfg["epochs"] and max(m["val_acc"] for m in curve) < 1.0:
                continue  # unfinished
            runs[cfg_file.parent.name] = (cfg, curve)
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="+")
    ap.add_argument("--miss", type=float, default=10.0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    runs = load(args.roots)
    print(f"{len(runs)} finished full-length runs")
    for name, (cfg, curve) in runs.items():
        val = [100 * m["val_acc"] for m in curve]
        print(f"  {name}: {len(curve)} epochs, best validation {max(val):.1f}% at epoch "
              f"{1 + best_index(val)}")
    print(f"\n{'rule':28s} {'stopped before learning':>24s} {'at the maximum':>15s} "
          f"{'epochs':>7s} {'mean points lost':>17s}")
    for rule_name, rule in RULES.items():
        misses, epochs, lost, at_max = [], 0, 0.0, 0
        for name, (cfg, curve) in runs.items():
            n, fired = replay(curve, rule)
            at_max += not fired
            kept = best_index([m["val_acc"] for m in curve[:n]])
            acc = 100 * curve[kept]["val_acc"]
            top = max(100 * m["val_acc"] for m in curve)
            epochs += n
            lost += top - acc
            if top - acc > args.miss:
                misses.append(f"{name} ({acc:.0f} vs {top:.0f})")
        print(f"{rule_name:28s} {len(misses):>24d} {at_max:>15d} {epochs:>7d} "
              f"{lost / len(runs):>17.2f}")
        if args.verbose and misses:
            print("      " + "; ".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
