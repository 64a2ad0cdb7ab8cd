"""The deposit scan: does the single-head deposit depend on head dim or on head count?

The paper-small task and models (paper-code mode: the paper code's distance task and its
models, posenc's ``paper-small`` preset, its optimiser and budget unchanged) at four attention
shapes, one factor at a time:

=============  ==========  ========  =====  ====  ===================================
regime         heads       head dim  width  d_ff  against
=============  ==========  ========  =====  ====  ===================================
``h8x8-w64``   8           8         64     128   paper-small itself
``h4x16-w64``  4           16        64     128   h8x8-w64: head dim and count, width fixed
``h8x16-w128`` 8           16        128    256   h8x8-w64: head dim at a fixed head count
``h16x8-w128`` 16          8         128    256   h8x16-w128: head dim at a fixed width
=============  ==========  ========  =====  ====  ===================================

and ``h4x16-w64`` against ``h8x16-w128``: head count at a fixed head dim.  The model code
computes a head's dim as width / heads (its attention has no inner width of its own), so a head
of dim 16 at 8 heads needs width 128; d_ff is twice the width there, as the paper code's
(512 at 256).  The paper's own shape (16 heads of dim 16, width 256, 6 layers) is the
``paper`` preset (docs/figures/paper-anchor), GPU-sized.

Roles: RoPE (``count_gen/partialrope.py``'s model, all heads), trans.py's rope (the
absolute+rope role), sinusoidal (absolute) and the relative table; calibration seeds 1000+
(never the report's); every head of every layer ablated in zero and mean mode on 500 test
examples; RoPE's training dynamics recorded as at paper-small.  Each regime is a results store
under ``OUT/<regime>`` (checkpoints dropped once a run is measured); a store resumes from
wherever a scan stopped, a finished run is never redone.  Jobs are seed-major, so
``--seeds 1`` first and ``--seeds 2`` later gives every regime's first seed before any second.

    python scripts/deposit_scan.py run OUT [--regimes h4x16-w64,...] [--seeds 2] [--workers 2]
    python scripts/deposit_scan.py table OUT [--regimes ...] [--seeds 3]   # markdown to stdout
    python scripts/deposit_scan.py curves OUT [--regimes ...]   # OUT/curves.png

The table: regime x role -> per seed the test accuracy, the best validation accuracy and its
epoch, the validation gain over the last 3 epochs (a run stopped while it still learns), the
single-head layers (one head >= 30 points, the layer's others < 5: the report's AD thresholds)
in zero and in mean mode, the
deposit layer (the layer of the largest single-head drop), its top head and runner-up, the
deposit index of that layer, and the run's CPU seconds (one torch thread); then each run's
layers (top drop and runner-up), each regime and role over its seeds, and the same summary of
the report's own paper-small stores (the h8x8-w64 shape on seeds 0-5 and 2000-2005, zero
ablation only).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

PRESET = "paper-small"
ROLES = ("rope", "absolute+rope", "absolute", "relative")
FIRST_SEED = 1000
MODES = ("zero", "mean")
#: regime -> model overrides of the paper-small config (the module doc's table)
REGIMES: dict[str, dict[str, Any]] = {
    "h8x8-w64": {},
    "h4x16-w64": {"model.n_heads": 4},
    "h8x16-w128": {"model.d_model": 128, "model.d_ff": 256},
    "h16x8-w128": {"model.d_model": 128, "model.n_heads": 16, "model.d_ff": 256},
}


def plan(regime: str, seeds: int) -> Any:
    from posenc.reproduction.plan import ReproductionPlan

    if regime not in REGIMES:
        raise SystemExit(f"unknown regime {regime!r}; known: {', '.join(REGIMES)}")
    return ReproductionPlan(preset=PRESET, seeds=seeds, distance_roles=ROLES, count_roles=(),
                            ablation_modes=MODES, overrides=dict(REGIMES[regime]),
                            first_seed=FIRST_SEED, paper_code=True)


def run(out: Path, regimes: list[str], seeds: int, workers: int) -> None:
    from posenc.empirical.pipeline.store import RunStore
    from posenc.reproduction import run_plan

    for regime in regimes:
        p = plan(regime, seeds)
        run_plan(p, RunStore(out / regime), workers=workers, threads=1, bar=False)


#: the report's own paper-small stores (beside the scan's folder) and their first seeds: the
#: h8x8-w64 shape on the report's seeds, ablated in zero mode only
REPORT_STORES = {"paper-small": 0, "paper-small-replicate": 2000}
REPORT_SEEDS = 6


def report_plan(first_seed: int) -> Any:
    from posenc.reproduction.plan import ReproductionPlan

    return ReproductionPlan(preset=PRESET, seeds=REPORT_SEEDS, distance_roles=ROLES,
                            count_roles=(), first_seed=first_seed, paper_code=True)


def results(out: Path, regime: str, seeds: int) -> list[Any]:
    """The finished runs of ``regime``'s plan, each checked against the config it was run for."""
    return _finished(out / regime, plan(regime, seeds))


def report_results(figures: Path, name: str) -> list[Any]:
    """The finished runs of the report's paper-small store ``name`` under ``figures``."""
    return _finished(figures / name, report_plan(REPORT_STORES[name]))


def _finished(root: Path, the_plan: Any) -> list[Any]:
    from posenc.empirical.pipeline.experiment_result import ExperimentResult
    from posenc.empirical.pipeline.store import RunStore, run_id

    if not (root / "posenc-store.json").is_file():
        return []
    store = RunStore(root, create=False)
    found = []
    for job in the_plan.jobs():
        rid = run_id(job.config)
        if store.is_done(rid):
            found.append(ExperimentResult.from_store(store, rid, job.config))
    return found


def _layers_text(layers: list[int]) -> str:
    return ",".join(str(x) for x in layers) if layers else "-"


def run_row(res: Any) -> dict[str, Any]:
    """One run's scan columns, from its zero and mean ablation tables."""
    from posenc.verdicts.accuracy_deposit import one_head_carries
    from posenc.verdicts.measured import NC2_READINGS

    shallower: Callable[[int], list[int]] = dict(
        (claim, layers_of) for claim, _, _, layers_of in NC2_READINGS)["NC2 (shallower half)"]

    row: dict[str, Any] = {"acc": 100.0 * res.test_acc, "seed": res.seed,
                           "cpu": res.summary.get("cpu_seconds"), "cpu_complete": cpu_complete(res),
                           **learning(res.metrics or [])}
    for mode in MODES:
        table = (res.ablation or {}).get(mode)
        if table is None:
            row[mode] = None
            continue
        layers = table["layers"]
        single = [la["layer"] for la in layers if one_head_carries(la["drops"])]
        top = max(layers, key=lambda la: la["largest_drop"])
        first, second = _top_two(top["drops"])
        row[mode] = {"single": single, "layer": top["layer"], "head": top["deposit_head"],
                     "top": first, "runner_up": second, "index": top["deposit_index"],
                     "per_layer": [_top_two(la["drops"]) for la in layers],
                     "shallow": any(la in shallower(len(layers)) for la in single)}
    return row


def _top_two(drops: list[float]) -> tuple[float, float]:
    """A layer's largest single-head drop and its runner-up, in points."""
    ranked = sorted((100.0 * d for d in drops), reverse=True)
    return ranked[0], ranked[1] if len(ranked) > 1 else 0.0


def cpu_complete(res: Any) -> bool:
    """Whether a run's ``cpu_seconds`` counts all its training: not for a run resumed from a
    checkpoint that held no CPU time (its summary says ``cpu_seconds_complete`` False, or, written
    before posenc kept it, its ``resumed`` record has no ``earlier_cpu_seconds``)."""
    resumed = res.summary.get("resumed")
    if not resumed:
        return True
    return res.summary.get("cpu_seconds_complete", True) and "earlier_cpu_seconds" in resumed


#: the epochs over which a run counts as still learning when its validation accuracy rose
LATE_EPOCHS = 3


def learning(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """From a run's epoch records: its best validation accuracy and epoch, the epochs run, and
    the validation gain over the last :data:`LATE_EPOCHS` epochs (points; None when it ran
    fewer), the sign of a run stopped while it still learns."""
    from posenc.empirical.training.train import best_index  # the earliest of ties, as training keeps

    vals = [100.0 * m["val_acc"] for m in metrics if "val_acc" in m]
    if not vals:
        return {"best_val": None, "best_epoch": None, "epochs": len(metrics), "late_gain": None}
    best = best_index(vals)
    late = vals[-1] - vals[-1 - LATE_EPOCHS] if len(vals) > LATE_EPOCHS else None
    return {"best_val": vals[best], "best_epoch": best + 1, "epochs": len(vals), "late_gain": late}


def table(out: Path, regimes: list[str], seeds: int) -> str:
    """The scan's markdown: a row per run, each run's layers, and each regime and role over its
    seeds."""
    rows = {regime: _rows(results(out, regime, seeds)) for regime in regimes}
    report = {f"h8x8-w64 ({name}, seeds {first}-{first + REPORT_SEEDS - 1})":
              _rows(report_results(out.parent, name)) for name, first in REPORT_STORES.items()}
    report = {k: v for k, v in report.items() if v}
    both = {**rows, "h8x8-w64, the report's seeds": [x for v in report.values() for x in v]}
    parts = ["## Where the pattern appears", "", pattern_table(both), "## Runs", "",
             run_table(rows), "## Layers", "", layer_table(rows),
             "## Over seeds", "", seed_summary(rows, seeds)]
    if report:
        parts += ["## The report's paper-small stores (zero ablation only)", "",
                  seed_summary(report, REPORT_SEEDS)]
    return "\n".join(parts)


def _rows(found: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(res.role, run_row(res))
            for res in sorted(found, key=lambda r: (ROLES.index(r.role), r.seed))]


def run_table(rows: dict[str, list[tuple[str, dict[str, Any]]]]) -> str:
    lines = ["| regime | role | seed | test acc % | best val acc % (epoch / of) | "
             f"val gain, last {LATE_EPOCHS} epochs | single-head layers (zero / mean) | "
             "deposit layer: head, drop / runner-up (zero) | deposit index (zero / mean) | "
             "CPU s |", "|" + "---|" * 10]
    for regime, runs in rows.items():
        for role, r in runs:
            z, m = r["zero"], r["mean"]
            single = single_cell(r)
            dep = "?" if z is None else (f"L{z['layer']}: H{z['head']}, {z['top']:.1f} / "
                                         f"{z['runner_up']:.1f}")
            index = " / ".join("?" if x is None else f"{x['index']:.2f}" for x in (z, m))
            cpu = cpu_cell(r)
            val = "?" if r["best_val"] is None else \
                f"{r['best_val']:.1f} ({r['best_epoch']} / {r['epochs']})"
            late = "?" if r["late_gain"] is None else f"{r['late_gain']:+.1f}"
            lines.append(f"| {regime} | {role} | {r['seed']} | {r['acc']:.1f} | {val} | "
                         f"{late} | {single} | {dep} | {index} | {cpu} |")
    return "\n".join(lines) + "\n"


def single_cell(r: dict[str, Any]) -> str:
    """A run row's single-head layers, zero / mean ("?" for a mode not run)."""
    return " / ".join("?" if r[m] is None else _layers_text(r[m]["single"]) for m in MODES)


def cpu_cell(r: dict[str, Any]) -> str:
    """A run row's CPU seconds, marked as a lower bound where a resume lost the earlier calls'."""
    return "?" if r["cpu"] is None else f"{r['cpu']:.0f}" if r["cpu_complete"] else \
        f">= {r['cpu']:.0f} (resumed; the earlier calls' CPU time not kept)"


def layer_table(rows: dict[str, list[tuple[str, dict[str, Any]]]]) -> str:
    """Each run's largest single-head drop per layer, zero ablation, with the layer's runner-up
    after the slash (points); a layer showing the pattern is in bold."""
    n = max((len(r["zero"]["per_layer"]) for runs in rows.values() for _, r in runs
             if r["zero"] is not None), default=0)
    lines = ["| regime | role | seed | test acc % | " + " | ".join(f"layer {i}" for i in range(n))
             + " |", "|" + "---|" * (4 + n)]
    for regime, runs in rows.items():
        for role, r in runs:
            z = r["zero"]
            cells = ["?"] * n if z is None else [
                (f"**{a:.1f} / {b:.1f}**" if i in z["single"] else f"{a:.1f} / {b:.1f}")
                for i, (a, b) in enumerate(z["per_layer"])]
            cells += [""] * (n - len(cells))
            lines.append(f"| {regime} | {role} | {r['seed']} | {r['acc']:.1f} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pattern_table(rows: dict[str, list[tuple[str, dict[str, Any]]]]) -> str:
    """Role x regime: the runs with a single-head layer (zero ablation) of the runs measured, and
    how many of them have one in the shallower half (NC2's reading: the layers below n / 2)."""
    cols = [k for k, v in rows.items() if v]
    lines = ["| role | " + " | ".join(cols) + " |", "|" + "---|" * (1 + len(cols))]
    for role in ROLES:
        cells = []
        for col in cols:
            rs = [r for ro, r in rows[col] if ro == role]
            # every scan model has 4 layers, so the shallower half is layers 0-1 (a test holds it)
            cells.append(f"{_count_of(rs, 'zero')} ({_shallow(rs)} in L0-1)" if rs else "-")
        lines.append(f"| {role} | " + " | ".join(cells) + " |")
    return ("Runs with a single-head layer (zero ablation) of the runs measured, and how many "
            "have one in layer 0 or 1:\n\n" + "\n".join(lines) + "\n")


def _count_of(rs: list[dict[str, Any]], mode: str) -> str:
    measured = [r[mode] for r in rs if r[mode] is not None]
    if not measured:
        return "not run"
    return f"{sum(1 for x in measured if x['single'])} of {len(measured)}"


def _shallow(rs: list[dict[str, Any]]) -> int:
    """How many runs have a single-head layer in the shallower half (zero ablation)."""
    return sum(1 for r in rs if r["zero"] is not None and r["zero"]["shallow"])


def seed_summary(rows: dict[str, list[tuple[str, dict[str, Any]]]], seeds: int) -> str:
    """Regime x role over the seeds run: how many, their test accuracy (mean and range), how many
    show a single-head layer in zero and in mean mode and how many of those (zero) in the
    shallower half (layer 0 or 1), the mean deposit index (zero), and the
    mean CPU seconds of the runs whose CPU time is complete."""
    lines = [f"| regime | role | seeds run (of {seeds}) | test acc %: mean [min, max] | "
             "runs with a single-head layer (zero / mean) | of them in layer 0 or 1 (zero) | "
             "deposit index, mean (zero) | CPU s a run, mean |", "|" + "---|" * 8]
    for regime, runs in rows.items():
        for role in ROLES:
            rs = [r for ro, r in runs if ro == role]
            if not rs:
                continue
            accs = [r["acc"] for r in rs]
            single = " / ".join(_count_of(rs, m) for m in MODES)
            idx = [r["zero"]["index"] for r in rs if r["zero"] is not None]
            cpus = [r["cpu"] for r in rs if r["cpu"] is not None and r["cpu_complete"]]
            lines.append(
                f"| {regime} | {role} | {len(rs)} | {sum(accs) / len(accs):.1f} "
                f"[{min(accs):.1f}, {max(accs):.1f}] | {single} | {_shallow(rs)} | "
                + (f"{sum(idx) / len(idx):.2f}" if idx else "?") + " | "
                + (f"{sum(cpus) / len(cpus):.0f} ({len(cpus)} of {len(rs)})" if cpus else "?")
                + " |")
    return "\n".join(lines) + "\n"


def curves(out: Path, regimes: list[str], seeds: int, path: Path) -> None:
    """Training and validation accuracy per epoch of every finished run: a panel per regime and
    role (rows: regimes; columns: roles), a line per seed (solid: validation; dotted: training)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(regimes), len(ROLES), figsize=(3.2 * len(ROLES),
                             2.4 * len(regimes)), sharex=True, sharey=True, squeeze=False)
    for i, regime in enumerate(regimes):
        runs = results(out, regime, seeds)
        for j, role in enumerate(ROLES):
            ax = axes[i][j]
            for k, res in enumerate(r for r in runs if r.role == role):
                ms = res.metrics or []
                epochs = [m["epoch"] for m in ms]
                color = f"C{k}"
                ax.plot(epochs, [100 * m["val_acc"] for m in ms], color=color,
                        label=f"seed {res.seed}")
                ax.plot(epochs, [100 * m["train_acc"] for m in ms], color=color, ls=":")
            ax.set_title(f"{regime}: {role}", fontsize=9)
            ax.grid(alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=7, loc="lower right")
            if i == len(regimes) - 1:
                ax.set_xlabel("epoch")
            if j == 0:
                ax.set_ylabel("accuracy %")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("what", choices=("run", "table", "curves"))
    ap.add_argument("out", type=Path)
    ap.add_argument("--regimes", default=",".join(REGIMES))
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    regimes = [r for r in args.regimes.split(",") if r]
    for r in regimes:
        if r not in REGIMES:
            ap.error(f"unknown regime {r!r}; known: {', '.join(REGIMES)}")
    if args.what == "run":
        run(args.out, regimes, args.seeds, args.workers)
    elif args.what == "curves":
        curves(args.out, regimes, args.seeds, args.out / "curves.png")
    else:
        sys.stdout.write(table(args.out, regimes, args.seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
