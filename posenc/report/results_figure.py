"""The results page's figure of one regime (matplotlib, Agg backend, PNG).

Left, one panel per task: test accuracy per PE, every seed a point, one colour per seed set,
each set's mean a bar.  Right, one panel per PE of :data:`DROP_ROLES` the regime ablated on
distance: per layer, the largest single-head drop (filled) beside the runner-up's in the same
layer (open), every run a point, each set's mean a short line.  The accuracies come from the
report.json files; the drops from the stores' runs (``result.json``'s zero ablation), or the
anchor's results.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from ..atomic import atomic_savefig

if TYPE_CHECKING:
    from .results_page import Regime

#: the PEs whose per-layer drops the figure shows (RoPE, and the paper code's rope model)
DROP_ROLES = ("rope", "absolute+rope")
COLOURS = ("tab:blue", "tab:orange")


def top_two(drops: list[float]) -> tuple[float, float]:
    """(the largest drop, the runner-up's) of one layer's per-head drops; a one-head layer's
    runner-up is 0."""
    d = sorted(drops, reverse=True)
    return d[0], d[1] if len(d) > 1 else 0.0


def layer_pairs(results: list[Any]) -> dict[str, list[list[tuple[float, float]]]]:
    """role -> per run, per layer (top drop, runner-up drop) in points, of the distance runs of
    :data:`DROP_ROLES` with a zero ablation."""
    out: dict[str, list[list[tuple[float, float]]]] = {}
    for res in sorted(results, key=lambda r: (r.role, r.seed)):
        if res.task != "distance" or res.role not in DROP_ROLES or "zero" not in res.ablation:
            continue
        out.setdefault(res.role, []).append(
            [top_two([100.0 * d for d in la["drops"]]) for la in res.ablation["zero"]["layers"]])
    return out


def store_results(store: Path) -> list[Any]:
    """The finished experiment runs of a store (read only: no index is written)."""
    from ..empirical.pipeline.experiment_result import ExperimentResult
    from ..empirical.pipeline.store import RunStore

    rs = RunStore(store, create=False)
    return [ExperimentResult.from_store(rs, rec.id, rec.config) for rec in rs.records()
            if rec.kind == "experiment" and rs.is_done(rec.id)]


def regime_data(reg: Regime) -> tuple[list[str], list[dict[str, dict[str, list[float]]]],
                                      list[dict[str, list[list[tuple[float, float]]]]]]:
    """(set names, per set task -> role -> per-seed accuracy %, per set :func:`layer_pairs`)."""
    if reg.anchor is not None:
        acc: dict[str, dict[str, list[float]]] = {}
        for res in reg.anchor.results:
            acc.setdefault(res.task, {})[res.role] = [100.0 * res.test_acc]
        seeds = sorted({r.seed for r in reg.anchor.results})
        return [f"seed {', '.join(map(str, seeds))}"], [acc], [layer_pairs(reg.anchor.results)]
    names = [s.name for s in reg.sets]
    accs = [{t: {r: list(row["values"]) for r, row in by_role.items()}
             for t, by_role in s.payload["accuracy"].items()} for s in reg.sets]
    return names, accs, [layer_pairs(store_results(s.path)) for s in reg.sets]


def regime_figure(reg: Regime, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    names, accs, pairs = regime_data(reg)
    tasks = sorted({t for a in accs for t in a})
    roles = [r for r in DROP_ROLES if any(r in p for p in pairs)]
    cols = max(len(tasks), len(roles), 1)
    fig, grid = plt.subplots(2 if roles else 1, cols, figsize=(5.2 * cols, 3.9 * (2 if roles else 1)),
                             squeeze=False)
    for ax in [a for row in grid for a in row]:
        ax.set_visible(False)
    n = len(names)
    shift = [0.0] if n == 1 else [-0.18, 0.18]
    for ax, task in zip(grid[0], tasks):
        ax.set_visible(True)
        order = list(dict.fromkeys(r for a in accs for r in a.get(task, {})))
        for i, (name, acc) in enumerate(zip(names, accs)):
            for x, role in enumerate(order):
                vals = acc.get(task, {}).get(role)
                if not vals:
                    continue
                ax.bar(x + shift[i], sum(vals) / len(vals), width=0.34 if n > 1 else 0.6,
                       color=COLOURS[i], alpha=0.3, label=f"{name}: mean" if x == 0 else None)
                ax.scatter([x + shift[i]] * len(vals), vals, color=COLOURS[i], s=12, zorder=3,
                           label=f"{name}: each seed" if x == 0 else None)
        pad = max(0.0, (3 - len(order)) / 2)  # a PE or two: bars of the usual width
        ax.set_xlim(-0.6 - pad, len(order) - 0.4 + pad)
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 102)
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"{task}: test accuracy by PE", fontsize=9)
        ax.legend(fontsize=7, loc="lower left", framealpha=0.9)
    for ax, role in zip(grid[-1] if roles else [], roles):
        ax.set_visible(True)
        top = 0.0
        for i, (name, p) in enumerate(zip(names, pairs)):
            runs = p.get(role, [])
            for layer in range(max((len(r) for r in runs), default=0)):
                at = [r[layer] for r in runs if layer < len(r)]
                for k, (dx, fill) in enumerate(((-0.2, True), (0.2, False))):
                    xs = layer + dx + (shift[i] / 2)
                    ys = [a[k] for a in at]
                    top = max(top, *ys)
                    ax.scatter([xs] * len(ys), ys, s=16, zorder=3, color=COLOURS[i],
                               facecolors=COLOURS[i] if fill else "none",
                               label=(f"{name}: top head" if fill else f"{name}: runner-up")
                               if layer == 0 else None)
                    ax.hlines(sum(ys) / len(ys), xs - 0.06, xs + 0.06, color=COLOURS[i], lw=1.5)
            if runs:
                ax.set_xticks(range(len(runs[0])))
        ax.set_xlabel("layer")
        ax.set_ylabel("accuracy drop (points)")
        ax.set_ylim(min(0.0, ax.get_ylim()[0]), min(100.0, top * 1.25 + 2))
        ax.set_title(f"{role}, distance: per layer, top head's drop and runner-up's", fontsize=9)
        ax.legend(fontsize=7, loc="upper right", ncol=2 if n > 1 else 1, framealpha=0.9)
    fig.suptitle(reg.preset, fontsize=10)
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=100)
    plt.close(fig)
    return path
