"""The diagnostic grid of the paper's regime: what makes the paper code's models learn or fail.

The RoPE role on the quick distance task (gaps 1..40, sides 1..8), the quick optimiser (AdamW
1e-3, batch 16, 6% warm-up then cosine over 60 epochs, clipping 1.0), calibration seeds the
report never uses (1000+), and a patience that never fires (= the maximum: every epoch's train
and validation accuracy is recorded; a run stops early only at a perfect validation accuracy,
which no later epoch can replace).  The cells cross

* model code: ``standard`` (posenc's pre-LN model, keys and values from the residual stream) or
  ``paper`` (paper-code mode: ``count_gen/partialrope.py``'s model, keys and values from the raw
  input embeddings, classifier over the vocabulary), with
* data: ``clean42`` (the clean sampler at vocabulary 42), ``paper42`` (the paper's sampler at 42:
  ~80% of examples hold an extra trigger) and ``paper574`` (the paper's sampler at the code's 574:
  ~19%), and ``regime``: the paper code's own distance task (the paper's sampler at 574, sides
  1..25, gaps 1..70, padded to 128 tokens),

and optional rows that separate the optimiser from the architecture (``--extra``):
``paperopt``: the paper code's optimiser (AdamW lr 1e-4, betas (0.98, 0.9), weight decay 1e-5,
dropout 0.1) with last-epoch selection (no validation-based choice: patience None, every epoch
evaluated on the test split, the last kept); ``data10x``: ten times the examples (30,000) for a
tenth of the epochs (6), so nearly the same optimiser steps (7,092 against 7,140 at the quick
sizes; the same schedule over them)
sees ten times as many distinct examples.

    python scripts/diagnostic_grid.py OUT [--seeds 1000,1001,1002] [--workers 2]
        [--cells standard/clean42,...] [--extra paper/clean42/paperopt,...] [--roles rope,...]
    python scripts/diagnostic_grid.py OUT --table

Every run goes to ``OUT/<cell>/<run id>`` with its ``metrics.jsonl``, ``train_config.json`` and
``train_summary.json``; the checkpoint and the per-step trace are removed once the run has
finished (the grid reads per-epoch curves), and a run whose summary is there is skipped.
``--table`` prints one row per run: the last epoch's train and validation accuracy, the best
validation accuracy and its epoch, and the test accuracy of the kept weights (the data sets'
Bayes ceilings: ``posenc.empirical.bayes_ceiling``; docs/methods.md states the rule).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
from pathlib import Path
from typing import Any

CODES = ("standard", "paper")
DATA = {"clean42": {"task.sampler": "clean", "task.vocab_size": 42},
        "paper42": {"task.sampler": "paper", "task.vocab_size": 42},
        "paper574": {"task.sampler": "paper", "task.vocab_size": 574},
        # the paper code's distance task: sides 1..25, gaps 1..70, padded to 128 (dis_gen)
        "regime": {"task.sampler": "paper", "task.vocab_size": 574, "task.max_left": 25,
                   "task.max_gap": 70, "task.max_right": 25, "task.seq_len": 128}}
#: rows that separate the optimiser from the architecture
EXTRA = {"paperopt": {"lr": 1e-4, "betas": (0.98, 0.9), "weight_decay": 1e-5,
                      "model.dropout": 0.1, "patience": None, "stop_on": "accuracy"},
         "data10x": {"task.n_samples": 30000, "epochs": 6, "patience": 6}}


#: files a finished grid run does not keep: the grid reads per-epoch curves, not weights or the
#: per-step training trace (~50 bytes a step: 350 KB for a 7,140-step run)
DROPPED = ("checkpoint.pt", "trace.jsonl")


def cell_config(cell: str, seed: int, role_name: str = "rope") -> Any:
    """The TrainConfig of one grid cell ``CODE/DATA[/EXTRA]`` at ``seed`` for the PE role
    ``role_name`` (:data:`posenc.roles.ROLES`: its standard or paper-code spec)."""
    from posenc.empirical.config import apply_overrides, preset
    from posenc.empirical.paper_specs import paper_code_fields
    from posenc.roles import ROLES

    parts = cell.split("/")
    if len(parts) not in (2, 3) or parts[0] not in CODES or parts[1] not in DATA or \
            (len(parts) == 3 and parts[2] not in EXTRA):
        raise SystemExit(f"unknown cell {cell!r}: CODE/DATA[/EXTRA] with CODE in {CODES}, DATA in "
                         f"{tuple(DATA)}, EXTRA in {tuple(EXTRA)}")
    roles = {r.name: r for r in ROLES}
    if role_name not in roles:
        raise SystemExit(f"unknown role {role_name!r}; known: {', '.join(roles)}")
    role = roles[role_name]
    code, data = parts[0], parts[1]
    cfg = preset("quick", "distance", role.paper_spec if code == "paper" else role.spec, seed)
    changes: dict[str, Any] = {"patience": cfg.epochs, "num_threads": 1}
    if code == "paper":
        changes.update(paper_code_fields(cfg.model.spec))
    changes.update(DATA[data])
    if len(parts) == 3:
        changes.update(EXTRA[parts[2]])
    return apply_overrides(cfg, changes)


def _run(job: tuple[str, str, int, str]) -> str:
    from posenc.empirical.training.train import train

    cell, role, seed, out = job
    cfg = cell_config(cell, seed, role)
    folder = Path(out) / cell.replace("/", "_") / cfg.run_id()
    if (folder / "train_summary.json").is_file():
        return f"{cell} {role} s{seed}: done before"
    result = train(cfg, folder, progress=False)
    for name in DROPPED:
        (folder / name).unlink(missing_ok=True)
    return f"{cell} {role} s{seed}: test {100 * result.final_test_acc:.1f}% in {result.seconds:.0f} s"


def _cpu_seconds(folder: Path) -> float | None:
    """The run's CPU seconds where its script recorded them (``cpu_seconds.json``), else None."""
    path = folder / "cpu_seconds.json"
    return json.loads(path.read_text())["cpu_seconds"] if path.is_file() else None


def _rows(out: Path) -> list[dict[str, Any]]:
    rows = []
    for summary in sorted(out.glob("*/*/train_summary.json")):
        folder = summary.parent
        cfg = json.loads((folder / "train_config.json").read_text())
        metrics = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines() if x]
        info = json.loads(summary.read_text())
        last = metrics[-1]
        val = [m.get("val_acc") for m in metrics if "val_acc" in m]
        best = max(range(len(val)), key=lambda i: (val[i], -i)) if val else None
        rows.append({"cell": folder.parent.name, "pe": cfg["model"]["pe"], "seed": cfg["seed"],
                     "epochs": last["epoch"],
                     "train_acc": 100 * last["train_acc"],
                     "val_acc": 100 * last["val_acc"] if "val_acc" in last else None,
                     "best_val": 100 * val[best] if val else None,
                     "best_epoch": best + 1 if val else None,
                     "test_acc": 100 * info["final"]["test_acc"],
                     "seconds": info["seconds"], "lr_end": last["lr"] / cfg["lr"],
                     "steps": last.get("step"), "batch": cfg["batch_size"], "lr": cfg["lr"],
                     "cpu_seconds": _cpu_seconds(folder)})
    return rows


def table(out: Path) -> str:
    def f(x: Any) -> str:
        return "-" if x is None else f"{x:.1f}"
    lines = ["| cell | PE | seed | epochs | train acc (last) | val acc (last) | best val (epoch) | "
             "test acc (kept) | s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in _rows(out):
        lines.append(f"| {r['cell']} | {r['pe']} | {r['seed']} | {r['epochs']} | {f(r['train_acc'])} | "
                     f"{f(r['val_acc'])} | {f(r['best_val'])} ({r['best_epoch'] or '-'}) | "
                     f"{f(r['test_acc'])} | {r['seconds']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--seeds", default="1000,1001,1002")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cells", default=",".join(f"{c}/{d}" for c in CODES for d in DATA))
    p.add_argument("--extra", default="", help="extra cells CODE/DATA/EXTRA, comma-separated")
    p.add_argument("--roles", default="rope", help="PE roles, comma-separated (default rope)")
    p.add_argument("--table", action="store_true", help="print the table of finished runs only")
    args = p.parse_args(argv)
    if args.table:
        print(table(args.out))
        return 0
    seeds = [int(s) for s in args.seeds.split(",")]
    cells = [c for c in args.cells.split(",") + args.extra.split(",") if c]
    roles = [r for r in args.roles.split(",") if r]
    for c in cells:
        for r in roles:
            cell_config(c, seeds[0], r)  # refuse a bad cell or role before any training
    # seed-major, paper code first: a partial grid holds whole seeds, the slow runs started early
    jobs = [(c, r, s, str(args.out)) for s in seeds
            for c in sorted(cells, key=lambda c: (c.count("/"), not c.startswith("paper")))
            for r in roles]
    with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=1) as pool:
        for line in pool.imap_unordered(_run, jobs):
            print(line, flush=True)
    print(table(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
