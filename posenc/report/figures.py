"""Figures of the reproduction report (matplotlib, Agg backend, PNG).

Each function takes plain JSON-derived data (no models) and writes one PNG:

* :func:`accuracy_figure`   -- test accuracy per PE per task, mean with seed interval and
  every seed as a dot (the paper's Fig. 2);
* :func:`partial_rope_figure` -- distance accuracy against the number of RoPE heads
  (0 = NoPE, k, all) (Fig. 6);
* :func:`deposit_heatmap`   -- mean deposit index per PE (rows) and layer (columns);
* :func:`probe_figure`      -- held-out R^2 of the linear position probe per residual site.

Per-layer per-head ablation strips (Fig. 4) are drawn by
:func:`posenc.empirical.analysis.plots.ablation_strip_plot` for each run.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..roles import PARTIAL_ROPE


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def accuracy_figure(table: dict[str, dict[str, dict[str, Any]]], path: Path) -> Path:
    plt = _plt()
    tasks = sorted(table)
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        roles = list(table[task])
        for x, role in enumerate(roles):
            row = table[task][role]
            ax.bar(x, row["mean"], color="tab:orange" if "rope" in role else "tab:blue", alpha=0.7)
            if math.isfinite(row["low"]):
                ax.errorbar(x, row["mean"], yerr=[[row["mean"] - max(row["low"], 0)],
                                                  [min(row["high"], 100) - row["mean"]]],
                            color="black", capsize=3)
            ax.scatter([x] * len(row["values"]), row["values"], color="black", s=10, zorder=3)
        ax.set_xticks(range(len(roles)))
        ax.set_xticklabels(roles, rotation=35, ha="right")
        ax.set_ylim(0, 100)
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"{task}: mean, 95% seed interval, seeds as dots")
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


def deposit_heatmap(deposits: dict[str, list[list[float]]], path: Path) -> Path:
    plt = _plt()
    roles = list(deposits)
    n_layers = max(len(seed_rows[0]) for seed_rows in deposits.values())
    grid = [[sum(rows[s][l] for s in range(len(rows))) / len(rows) for l in range(n_layers)]
            for rows in deposits.values()]
    fig, ax = plt.subplots(figsize=(1.6 + 0.9 * n_layers, 0.8 + 0.42 * len(roles)))
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="magma", aspect="auto")
    for r, row in enumerate(grid):
        for l, v in enumerate(row):
            ax.text(l, r, f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if v < 0.6 else "black")
    ax.set_yticks(range(len(roles)))
    ax.set_yticklabels(roles)
    ax.set_xticks(range(n_layers))
    ax.set_xlabel("layer")
    ax.set_title("deposit index (mean over seeds), distance task")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def probe_figure(probes: dict[str, list[dict[str, float]]], path: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    for role, per_seed in probes.items():
        sites = list(per_seed[0])
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
