"""Tables and figure of the real-model head ablations that scripts/real_models.sh writes.

    python scripts/real_models_table.py docs/real-models

Reads every NAME.json there (``posenc ablate --out``) and writes tables.md (per model, probe and
mode: per layer the top unit and the runner-up with their accuracy drops, the deposit index, the
single-head layers, the largest previous-token and induction scores) and deposit.png (per model,
the top unit's drop and the runner-up's per layer, one line pair per mode).  Every number is read
from the JSON files; nothing is typed in.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MODES = ("mean", "zero", "resample")
LABELS = {"smollm2": "SmolLM2-135M-Instruct (Q4_1 GGUF)", "gemma3": "Gemma 3 270M (Q4_K_M GGUF)",
          "minilm": "all-MiniLM-L6-v2 (safetensors)"}


def top_two(layer: dict) -> tuple[int, float, int | None, float]:
    drops = layer["drops"]
    order = sorted(range(len(drops)), key=lambda h: (-drops[h], h))
    second = order[1] if len(order) > 1 else None
    return order[0], 100 * drops[order[0]], second, 100 * drops[second] if second is not None else 0.0


def with_interval(layer: dict, unit: int, drop: float) -> str:
    """``drop`` (points) with its 95% half-width over the probe's examples, where the JSON has it."""
    widths = layer.get("drop_half_width")
    if not widths or widths[unit] is None:
        return f"{drop:.1f}"
    return f"{drop:.1f} ± {100 * widths[unit]:.1f}"


def best(values: list | None) -> str:
    if not values or values[0] is None:
        return "-"
    h = max(range(len(values)), key=lambda j: values[j])
    return f"H{h} {values[h]:.2f}"


def table(name: str, data: dict) -> list[str]:
    m, p = data["model"], data["probe"]
    unit = "head" if data["unit"] == "head" else "KV group"
    params = ", ".join(f"{k} {v}" for k, v in p["params"].items())
    lines = [f"### {name}: {p['name']} probe, {data['mode']} ablation per {unit}", "",
             f"{m['model_type']}, {m['layers']} layers x {m['heads']} query heads ({m['kv_heads']} key/value "
             f"heads, dim {m['head_dim']}); probe {params}, {p['predictions']} predictions; baseline "
             f"accuracy {100 * data['baseline_acc']:.1f}%, loss {data['baseline_loss']:.3f}; "
             f"{data['seconds']['cpu']:.0f} CPU s ({data['seconds']['wall']:.0f} s wall, one thread).", "",
             f"| layer | top {unit} | drop (points, ± 95%) | runner-up | drop | deposit index | "
             f"loss rise (top) | previous-token head | induction head |",
             "|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for la in data["layers"]:
        h1, d1, h2, d2 = top_two(la)
        sc = la.get("scores") or {}
        rise = la["loss"][h1] - data["baseline_loss"]
        lines.append(f"| {la['layer']} | {h1} | {with_interval(la, h1, d1)} | "
                     f"{'-' if h2 is None else h2} | {d2:.1f} | "
                     f"{la['deposit_index']:.2f} | {rise:+.3f} | {best(sc.get('previous_token'))} | "
                     f"{best(sc.get('induction'))} |")
    single = data.get("single_head_layers")
    lines += ["", f"Single-head layers (one {unit} costs >= 30 points, every other of its layer < 5): "
              f"{', '.join(map(str, single)) if single else 'none'}.", ""]
    return lines


def summary(runs: dict[str, dict]) -> list[str]:
    lines = ["| model | probe (seed) | mode | unit | baseline acc | costliest layer | "
             "its top unit: drop ± 95% | runner-up drop | deposit index | single-head layers | CPU s |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for name, d in runs.items():
        la = max(d["layers"], key=lambda x: (x["largest_drop"], -x["layer"]))
        h1, d1, _, d2 = top_two(la)
        single = d.get("single_head_layers") or []
        mark = "G" if d["unit"] == "kv-group" else "H"
        probe = f"{d['probe']['name']} ({d['probe']['params']['seed']})"
        lines.append(f"| {name.split('-')[0]} | {probe} | {d['mode']} | {d['unit']} | "
                     f"{100 * d['baseline_acc']:.1f}% | {la['layer']} | "
                     f"{mark}{h1}: {with_interval(la, h1, d1)} | {d2:.1f} | "
                     f"{la['deposit_index']:.2f} | {', '.join(map(str, single)) or 'none'} | "
                     f"{d['seconds']['cpu']:.0f} |")
    return lines


def figure(runs: dict[str, dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    models = [m for m in LABELS if any(k.startswith(m + "-") for k in runs)]
    fig, axes = plt.subplots(1, len(models), figsize=(5.2 * len(models), 3.8), squeeze=False)
    colours = {"mean": "tab:blue", "zero": "tab:red", "resample": "tab:green"}
    for ax, model in zip(axes[0], models):
        for name, d in runs.items():
            if not name.startswith(model + "-") or d["unit"] != "head" or \
                    d["probe"]["name"] == "recency" or d["probe"]["params"]["seed"] != 0:
                continue
            layers = [la["layer"] for la in d["layers"]]
            tops = [top_two(la) for la in d["layers"]]
            c = colours[d["mode"]]
            widths = [100 * ((la.get("drop_half_width") or [None] * (t[0] + 1))[t[0]] or 0.0)
                      for la, t in zip(d["layers"], tops)]
            ax.errorbar(layers, [t[1] for t in tops], yerr=widths, fmt="-o", ms=3, color=c,
                        capsize=2, elinewidth=0.8, label=f"{d['mode']}: top head (± 95%)")
            ax.plot(layers, [t[3] for t in tops], ":", color=c, label=f"{d['mode']}: runner-up")
            probe = d["probe"]["name"]
        ax.axhline(30, color="grey", lw=0.8, ls="--")
        ax.set_title(f"{LABELS[model]}\nprobe: {probe}", fontsize=9)
        ax.set_xlabel("layer")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("accuracy drop when one head is ablated (points)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Real models: the costliest head of each layer and the runner-up (dashed line: the "
                 "single-head threshold, 30 points)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def read_runs(folder: Path) -> dict[str, dict]:
    """The NAME.json files in ``folder``, by model, probe, unit, mode and probe seed."""
    order = {m: i for i, m in enumerate(MODES)}
    runs = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    return dict(sorted(runs.items(), key=lambda kv: (kv[0].split("-")[0], kv[1]["probe"]["name"],
                                                     kv[1]["unit"], order[kv[1]["mode"]],
                                                     kv[1]["probe"]["params"]["seed"])))


def build(runs: dict[str, dict]) -> str:
    """tables.md's text from the runs :func:`read_runs` gives."""
    out = ["# Real-model head ablation: the tables", "",
           "Written by scripts/real_models_table.py from the JSON files beside it (posenc ablate --out).",
           "", "## Summary", ""] + summary(runs) + ["", "## Per layer", ""]
    for name, data in runs.items():
        out += table(name, data)
    return "\n".join(out) + "\n"


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/real-models")
    runs = read_runs(folder)
    (folder / "tables.md").write_text(build(runs))
    figure(runs, folder / "deposit.png")
    print(f"wrote {folder / 'tables.md'} and {folder / 'deposit.png'} from {len(runs)} results")


if __name__ == "__main__":
    main()
