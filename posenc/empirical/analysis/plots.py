"""Figures for the empirical layer (matplotlib, Agg backend).

:func:`ablation_strip_plot`: one column per layer; each head's accuracy (%) after its ablation
as a dot, heads sorted by accuracy and spread left to right within the column; the unablated
baseline as a horizontal segment; the deposit head of each layer (largest drop) marked with a
red star.  A strip plot, not a violin: with 8-16 heads per layer every head is shown.  Given the
tables of several seeds it draws them all in one figure, one colour per seed: head indices
differ from seed to seed, so each seed's heads are placed by their rank in the layer (the
sorted position), which is what seeds share.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from .ablation import AblationTable
from ...atomic import atomic_savefig


def ablation_strip_plot(tables: AblationTable | Sequence[AblationTable], path: str | Path,
                        title: str = "", seeds: Optional[Sequence[int]] = None) -> Path:
    """One table (a run), or the tables of several seeds of one configuration (``seeds``: their
    seeds, for the legend) in one figure."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = [tables] if isinstance(tables, AblationTable) else list(tables)
    one = len(tables) == 1
    path = Path(path)
    layers = tables[0].layers
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(layers) + (0 if one else 1.0), 4.0))
    colours = plt.get_cmap("tab10")
    for i, table in enumerate(tables):
        colour = "tab:blue" if one else colours(i % 10)
        label = None if seeds is None else f"seed {seeds[i]}"
        for col, la in enumerate(table.layers):
            order = sorted(range(len(la.head_acc)), key=lambda h: la.head_acc[h])
            n = len(order)
            step = 0.7 / max(1, n - 1)  # seeds side by side within a rank's slot
            shift = 0 if one else (i - (len(tables) - 1) / 2) * step / (len(tables) + 1)
            xs = [col - 0.35 + step * r + shift for r in range(n)]
            ax.scatter(xs, [100 * la.head_acc[h] for h in order], s=18 if one else 12,
                       color=colour, zorder=3, alpha=1 if one else 0.8,
                       label=label if col == 0 else None)
            ax.hlines(100 * la.baseline_acc, col - 0.42, col + 0.42, lw=1.2, zorder=2,
                      color="grey" if one else colour)
            if la.largest_drop > 0:
                x, y = xs[order.index(la.deposit_head)], 100 * la.head_acc[la.deposit_head]
                ax.scatter([x], [y], marker="*", s=160 if one else 90, color="red", zorder=4,
                           edgecolors=None if one else colour)
                if one:
                    ax.annotate(f"H{la.deposit_head}\nD={la.deposit_index:.2f}", (x, y),
                                textcoords="offset points", xytext=(6, -4), fontsize=7,
                                color="red")
    ax.set_xticks(range(len(layers)), [f"L{la.layer}" for la in layers])
    ax.set_xlim(-0.6, len(layers) - 0.4)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("layer: heads sorted, star = deposit head,\nline = baseline", fontsize=8)
    ax.set_ylabel(f"accuracy (%) with one head ablated ({tables[0].mode})")
    ax.set_title(title or f"single-head ablation, {tables[0].n_examples} examples")
    ax.grid(axis="y", alpha=0.3)
    if not one and seeds is not None:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    try:
        return atomic_savefig(fig, path, dpi=120)
    finally:
        plt.close(fig)
