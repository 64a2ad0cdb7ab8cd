"""Figures for the empirical layer (matplotlib, Agg backend).

:func:`ablation_strip_plot`: one column per layer; each head's accuracy after
its ablation as a dot, heads sorted by accuracy and spread left to right
within the column; the unablated baseline as a horizontal segment; the deposit
head of each layer (largest drop) marked with a red star and labelled.  A strip
plot, not a violin: with 8-16 heads per layer every head is shown.
"""

from __future__ import annotations

from pathlib import Path

from .ablation import AblationTable


def ablation_strip_plot(table: AblationTable, path: str | Path, title: str = "") -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(table.layers), 4.0))
    for col, la in enumerate(table.layers):
        order = sorted(range(len(la.head_acc)), key=lambda h: la.head_acc[h])
        n = len(order)
        xs = [col - 0.35 + 0.7 * r / max(1, n - 1) for r in range(n)]
        ax.scatter(xs, [la.head_acc[h] for h in order], s=18, color="tab:blue", zorder=3)
        ax.hlines(la.baseline_acc, col - 0.42, col + 0.42, color="grey", lw=1.2, zorder=2)
        rank = order.index(la.deposit_head)
        if la.largest_drop > 0:
            ax.scatter([xs[rank]], [la.head_acc[la.deposit_head]], marker="*", s=160, color="red",
                       zorder=4)
            ax.annotate(f"H{la.deposit_head}\nD={la.deposit_index:.2f}",
                        (xs[rank], la.head_acc[la.deposit_head]), textcoords="offset points",
                        xytext=(6, -4), fontsize=7, color="red")
    ax.set_xticks(range(len(table.layers)), [f"L{la.layer}" for la in table.layers])
    ax.set_xlim(-0.6, len(table.layers) - 0.4)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("layer: heads sorted, star = deposit head,\nline = baseline", fontsize=8)
    ax.set_ylabel(f"accuracy with one head ablated ({table.mode})")
    ax.set_title(title or f"single-head ablation, {table.n_examples} examples")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    from ...atomic import atomic_savefig
    try:
        return atomic_savefig(fig, path, dpi=120)
    finally:
        plt.close(fig)
