"""Figures of recorded training dynamics (matplotlib, Agg): one run's curves
(:func:`plot_dynamics`) and several runs side by side (:func:`plot_comparison`)."""

from __future__ import annotations

from pathlib import Path

from .dynamics_summary import nan_of, summarize_run
from ...atomic import atomic_savefig
from .dynamics import read_dynamics_file


def plot_dynamics(header: dict, records: list[dict], summary: dict, path: str | Path,
                  title: str = "", dpi: int = 90) -> Path:
    """Seed, coherence, importance and margin curves over training (2 x 2 panels, PNG/PDF)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dl, dh = summary["deposit"]
    H, L = summary["n_heads"], summary["n_layers"]
    steps = [r["step"] for r in records]
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5))
    ax = axes[0][0]
    for h in range(H):
        ys = [nan_of(r["seed"][dl][h]) for r in records]
        ax.plot(steps, ys, lw=2.2 if h == dh else 0.8, color="red" if h == dh else None,
                label=f"H{h}" + (" (deposit)" if h == dh else ""))
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_yscale("symlog", linthresh=1e-4)
    ax.set_title(f"positional seed of layer {dl}'s heads", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    ax = axes[0][1]
    for h in range(H):
        ys = [nan_of(r["coherence"][dl][h]) for r in records]
        ax.plot(steps, ys, lw=2.2 if h == dh else 0.8, color="red" if h == dh else None)
    ax.set_ylim(0, 1.02)
    ax.set_title(f"coherence |seed| / mean |psi|, layer {dl}", fontsize=9)
    imp = [r for r in records if r.get("importance") is not None]
    ax = axes[1][0]
    for h in range(H):
        ax.plot([r["step"] for r in imp], [nan_of(r["importance"][dl][h]) for r in imp],
                marker=".", lw=2.2 if h == dh else 0.8, color="red" if h == dh else None)
    ax.set_title(f"importance (loss increase when zeroed), layer {dl}", fontsize=9)
    ax = axes[1][1]
    for l in range(L):
        ax.plot([r["step"] for r in imp], [max(nan_of(r["margin"]["importance"][l]), 1e-6)
                                          for r in imp], marker=".", label=f"L{l} importance")
        ax.plot(steps, [max(nan_of(r["margin"]["signal"][l]), 1e-9) for r in records], ls=":",
                label=f"L{l} |seed|")
    ax.set_yscale("log")
    ax.set_title("margin: top minus runner-up head, per layer", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    for a in axes.flat:
        a.set_xlabel("optimiser step", fontsize=8)
        a.grid(alpha=0.3)
        a.tick_params(labelsize=7)
    fig.suptitle(title or f"{summary['pe']} / {summary['task']} / seed {summary['seed']}: "
                 f"deposit L{dl} H{dh}", fontsize=10)
    return _save(fig, path, dpi)


def _save(fig, path: str | Path, dpi: int) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    try:
        return atomic_savefig(fig, path, dpi)
    finally:
        plt.close(fig)


def plot_comparison(run_dirs: list[str | Path], path: str | Path, dpi: int = 80) -> Path:
    """Several runs side by side (e.g. RoPE and ALiBi over seeds): the largest coherence over
    heads, and the importance margin of each run's final deposit layer, against the step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    styles: dict[str, str] = {}
    for run in run_dirs:
        header, records = read_dynamics_file(run)
        s = summarize_run(run)
        color = styles.setdefault(s["pe"], f"C{len(styles)}")
        label = f"{s['pe']} s{s['seed']}"
        dl = s["deposit"][0]
        coh = [max((nan_of(v) for row in r["coherence"] for v in row if v is not None),
                   default=float("nan")) for r in records]
        axes[0].plot([r["step"] for r in records], coh, color=color, lw=1, label=label,
                     ls="-" if s["seed"] % 2 == 0 else "--")
        imp = [r for r in records if r.get("importance") is not None]
        axes[1].plot([r["step"] for r in imp], [max(nan_of(r["margin"]["importance"][dl]), 1e-6)
                                               for r in imp], color=color, marker=".", lw=1,
                     ls="-" if s["seed"] % 2 == 0 else "--", label=f"{label} (L{dl})")
    axes[0].set_title("max over heads of coherence |seed| / mean |psi|", fontsize=9)
    axes[0].set_ylim(0, 1.02)
    axes[1].set_yscale("log")
    axes[1].set_title("importance margin (top - runner-up) of the deposit layer", fontsize=9)
    for a in axes:
        a.set_xlabel("optimiser step", fontsize=8)
        a.grid(alpha=0.3)
        a.legend(fontsize=6, ncol=2)
        a.tick_params(labelsize=7)
    return _save(fig, path, dpi)
