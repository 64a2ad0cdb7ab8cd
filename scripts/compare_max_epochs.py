"""The frozen stopping rule at two maxima: what it keeps on the full 60-epoch calibration curves
(replayed) beside what it kept in runs of the same seeds trained with a larger maximum.

The learning-rate schedule (6% warm-up, then cosine to zero) runs over the maximum, so a larger
maximum changes every run's trajectory: at epoch 35 of a 120-epoch run the learning rate is still
~85% of its peak, where at epoch 35 of a 60-epoch run it is ~40%.  This script sets the two side
by side for each (task, PE, seed) found in both roots:

    python scripts/compare_max_epochs.py FULL60_DIR RULE_DIR [--patience 8]

FULL60_DIR holds run folders trained to 60 epochs with a patience that never fires
(docs/figures/calibration-stopping in git history); RULE_DIR holds run folders trained with the
frozen rule at another maximum (docs/figures/calibration-max120 in git history), each with ``metrics.jsonl``,
``train_config.json`` and ``train_summary.json``.  Validation accuracy only: the calibration never
reads a test accuracy.  Nothing here chooses a preset; docs/methods.md records the reading.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from stopping_rules import best_index, patience_rule, replay


def _curve(folder: Path) -> list[dict]:
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()
            if line.strip()]
    return [r for r in rows if "val_acc" in r]


def compare(full_dir: Path, rule_dir: Path, patience: int = 8) -> list[dict]:
    """One row per run folder name present in both roots."""
    rule = patience_rule(patience, loss=True)
    rows = []
    for folder in sorted(p for p in rule_dir.iterdir() if (p / "train_summary.json").is_file()):
        full = full_dir / folder.name
        if not (full / "metrics.jsonl").is_file():
            continue
        cfg = json.loads((folder / "train_config.json").read_text())
        stop = json.loads((folder / "train_summary.json").read_text())["early_stopping"]
        if stop["patience"] != patience or stop["stop_on"] != "accuracy_or_loss":
            raise SystemExit(f"{folder}: trained with patience {stop['patience']} on "
                             f"{stop['stop_on']}, not the rule compared ({patience}, accuracy_or_loss)")
        long = _curve(folder)
        curve = _curve(full)
        n60, fired60 = replay(curve, rule)
        kept60 = best_index([m["val_acc"] for m in curve[:n60]])
        peak_lr = max(m["lr"] for m in long)
        rows.append({
            "run": folder.name, "max": cfg["epochs"],
            "epochs60": n60, "fired60": fired60, "kept60": 100 * curve[kept60]["val_acc"],
            "best60": 100 * max(m["val_acc"] for m in curve),
            "epochs": stop["stopped_epoch"], "fired": stop["fired"],
            "kept": 100 * stop["best_val_acc"],
            "lr_at_stop": long[-1]["lr"] / peak_lr,
        })
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("full60", type=Path)
    ap.add_argument("rule_dir", type=Path)
    ap.add_argument("--patience", type=int, default=8)
    args = ap.parse_args(argv)
    rows = compare(args.full60, args.rule_dir, args.patience)
    if not rows:
        print("no run folder is in both roots", file=sys.stderr)
        return 2
    mx = rows[0]["max"]
    print(f"{'run':42s} | max 60: epochs fired kept% best-in-60% | max {mx}: epochs fired kept% "
          f"lr/peak at stop | kept(max {mx}) - kept(max 60)")
    for r in rows:
        print(f"{r['run']:42s} | {r['epochs60']:>6d} {str(r['fired60']):>5s} {r['kept60']:5.1f} "
              f"{r['best60']:5.1f} | {r['epochs']:>6d} {str(r['fired']):>5s} {r['kept']:5.1f} "
              f"{r['lr_at_stop']:5.2f} | {r['kept'] - r['kept60']:+6.1f}")
    at_max = sum(not r["fired"] for r in rows)
    lower = [r["run"] for r in rows if r["kept"] < r["kept60"] - 10]
    print(f"\n{len(rows)} runs; at the maximum of {mx} with the rule not fired: {at_max}; "
          f"kept more than 10 points below the 60-epoch run's kept accuracy: {len(lower)}"
          + (f" ({', '.join(lower)})" if lower else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
