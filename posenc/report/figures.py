"""Figures of the reproduction report (matplotlib, Agg backend, PNG).

Each function takes plain JSON-derived data (no models) and writes one PNG:

* :func:`accuracy_figure`   -- test accuracy per PE per task, mean with seed interval and
  every seed as a dot (the paper's Fig. 2), with a panel zoomed on the PEs near 100% and the
  task's Bayes ceiling marked;
* :func:`partial_rope_figure` -- distance accuracy against the number of RoPE heads
  (0 = NoPE, k, all) (Fig. 6);
* :func:`deposit_heatmap`   -- mean deposit index per PE (rows) and layer (columns);
* :func:`probe_figure`      -- held-out R^2 of the linear position probe per residual site, in
  layer order (the input embedding first).

Accuracies are in percent on every axis.  Per-layer per-head ablation strips (Fig. 4) are
drawn by :func:`posenc.empirical.analysis.plots.ablation_strip_plot` for each PE over all its
seeds.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional, Sequence

from ..roles import PARTIAL_ROPE
from .measured import site_order
from ..verdicts.accuracy_deposit import layer_means


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


#: the zoomed panel of the accuracy figure shows the PEs whose mean is at least this (percent)
ZOOM_FROM = 90.0


def zoom_range(rows: list[dict[str, Any]], ceiling: Optional[float] = None) -> Optional[tuple[float, float]]:
    """The y-range (percent) of the accuracy figure's zoomed panel of one task: the per-seed
    values and intervals of the PEs whose mean is >= :data:`ZOOM_FROM`, and the task's Bayes
    ceiling, with a margin; None when no PE is that high (the full panel then says it all)."""
    top = [r for r in rows if r["mean"] >= ZOOM_FROM]
    if not top:
        return None
    vals = [v for r in top for v in (*r["values"], r["mean"], *_drawn_interval(r))
            if math.isfinite(v)] + ([ceiling] if ceiling is not None else [])
    low, high = max(min(vals), ZOOM_FROM - 10.0), min(max(vals), 100.0)
    pad = max(0.25, 0.08 * (high - low))
    return max(0.0, low - pad), high + pad


#: a PE's seed interval is drawn from this many seeds on: with 2 seeds the 95% Student-t
#: interval is 12.7 standard errors wide and spans most of the axis, telling nothing
MIN_INTERVAL_SEEDS = 3


def _drawn_interval(row: dict[str, Any]) -> tuple[float, ...]:
    """(low, high) of the seed interval the figure draws, clipped to 0-100%; () when it draws
    none (fewer than :data:`MIN_INTERVAL_SEEDS` seeds, or no interval)."""
    if len(row["values"]) < MIN_INTERVAL_SEEDS or not math.isfinite(row["low"]):
        return ()
    return max(row["low"], 0.0), min(row["high"], 100.0)


def accuracy_figure(table: dict[str, dict[str, dict[str, Any]]], path: Path,
                    ceilings: Sequence[dict[str, Any]] = ()) -> Path:
    """Per task: a panel of every PE on 0-100%, and under it a panel zoomed on the PEs at
    >= :data:`ZOOM_FROM` (:func:`zoom_range`; most PEs sit at 98-100%, which the full axis
    hides).  The task's Bayes ceiling (``ceilings``: :func:`~posenc.report.ceiling.task_ceilings`,
    the first of the task's samplers) is a dashed line in both."""
    plt = _plt()
    tasks = sorted(table)
    ceiling = {}
    for c in ceilings:
        ceiling.setdefault(c["task"], float(c["accuracy"]))
    fig, axes = plt.subplots(2, len(tasks), figsize=(5.5 * len(tasks), 6.6), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 2]})
    for col, task in enumerate(tasks):
        roles = list(table[task])
        rows = [table[task][r] for r in roles]
        full, zoom = axes[0][col], axes[1][col]
        for x, row in enumerate(rows):
            colour = "tab:orange" if "rope" in roles[x] else "tab:blue"
            full.bar(x, row["mean"], color=colour, alpha=0.7)
            drawn = _drawn_interval(row)
            for ax in (full, zoom) if row["mean"] >= ZOOM_FROM else (full,):
                if drawn:
                    ax.errorbar(x, row["mean"], yerr=[[row["mean"] - drawn[0]],
                                                      [drawn[1] - row["mean"]]],
                                color="black", capsize=3)
                ax.scatter([x] * len(row["values"]), row["values"], color="black", s=10, zorder=3)
            if row["mean"] >= ZOOM_FROM:
                zoom.scatter([x], [row["mean"]], color=colour, marker="D", s=28, zorder=4)
        span = zoom_range(rows, ceiling.get(task))
        for ax in (full, zoom):
            if task in ceiling:
                ax.axhline(ceiling[task], color="tab:green", ls="--", lw=1,
                           label=f"Bayes ceiling {ceiling[task]:.1f}%")
            ax.set_xticks(range(len(roles)))
            ax.set_xticklabels(roles, rotation=35, ha="right")
            ax.set_ylabel("test accuracy (%)")
            ax.set_xlim(-0.6, len(roles) - 0.4)
        full.set_ylim(0, 100)
        few = min(len(r["values"]) for r in rows) < MIN_INTERVAL_SEEDS
        full.set_title(f"{task}: mean, seeds as dots" + (
            f" (no interval under {MIN_INTERVAL_SEEDS} seeds)" if few else ", 95% seed interval"),
            fontsize=10)
        if task in ceiling:
            full.legend(fontsize=7, loc="lower right")
        if span is None:
            zoom.set_ylim(ZOOM_FROM, 100.5)
            zoom.set_title(f"zoom: no PE averages >= {ZOOM_FROM:g}%", fontsize=9)
        else:
            zoom.set_ylim(*span)
            zoom.set_title(f"zoom on the PEs averaging >= {ZOOM_FROM:g}% "
                           f"({span[0]:.1f}-{span[1]:.1f}%)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def partial_rope_figure(table: dict[str, dict[str, Any]], n_heads: int, path: Path) -> Path:
    plt = _plt()
    points = [(0, "nope"), *PARTIAL_ROPE, (n_heads, "rope")]
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    xs, ys = [], []
    for k, role in points:
        if role not in table:
            continue
        row = table[role]
        xs.append(k)
        ys.append(row["mean"])
        ax.scatter([k] * len(row["values"]), row["values"], color="grey", s=10)
    ax.plot(xs, ys, marker="o", color="tab:orange")
    ax.set_xlabel("number of RoPE heads (others NoPE)")
    ax.set_ylabel("distance test accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_xticks(xs)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def deposit_heatmap(deposits: dict[str, list[list[Optional[float]]]], path: Path) -> Path:
    """Mean deposit index per PE and layer over the seeds where the layer matters
    (:func:`~posenc.verdicts.accuracy_deposit.layer_means`); grey "-" where it matters on none."""
    import numpy as np

    plt = _plt()
    roles = list(deposits)
    means = [layer_means(rows) for rows in deposits.values()]
    n_layers = max(len(m) for m in means)
    grid = np.ma.masked_invalid([[np.nan if l >= len(m) or m[l][0] is None else m[l][0]
                                  for l in range(n_layers)] for m in means])
    fig, ax = plt.subplots(figsize=(max(4.8, 2.2 + 0.9 * n_layers), 1.2 + 0.42 * len(roles)))
    ax.set_facecolor("0.85")
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="magma", aspect="auto")
    for r in range(len(roles)):
        for l in range(n_layers):
            v = grid[r, l]
            masked = v is np.ma.masked
            ax.text(l, r, "-" if masked else f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="black" if masked or v >= 0.6 else "white")
    ax.set_yticks(range(len(roles)))
    ax.set_yticklabels(roles)
    ax.set_xticks(range(n_layers))
    ax.set_xlabel("layer")
    ax.set_title("deposit index, distance\n(mean over the seeds where the layer matters)",
                 fontsize=9)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def probe_figure(probes: dict[str, list[dict[str, float]]], path: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for role, per_seed in probes.items():
        sites = site_order(per_seed[0])  # the input embedding first, then each block
        mean = [sum(p[s] for p in per_seed) / len(per_seed) for s in sites]
        ax.plot(range(len(sites)), mean, marker="o", label=role)
        ax.set_xticks(range(len(sites)))
        ax.set_xticklabels(sites)
    ax.set_ylabel("held-out R² of position probe")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
