"""The training-dynamics section of the reproduction report (Gu et al., arXiv 2505.13027, Sec. 6).

The reproduction's distance runs of RoPE and ALiBi record their training dynamics
(:data:`posenc.roles.DYNAMICS`); their results carry a ``dynamics``
summary (:func:`posenc.empirical.analysis.dynamics_summary.summarize`).  This module turns those results
into the report's section: a per-run table (deposit head, early coherence, batch sign
consistency, margins and gains, when the deposit head's lead appears), the reviewer's question
"can the deposit head be predicted from the first steps?" as hit counts against chance
(:func:`posenc.verdicts.dynamics.prediction_table`), and one figure.  The verdicts for
Prop. 6.1, Prop. 6.2 and Thm. 6.1 (:func:`~posenc.verdicts.dynamics.evaluate_dynamics`)
join the report's verdict table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional

from .table import md_header, md_row
from ..verdicts.dynamics import PREDICTORS, null_check, prediction_table, random_sign_null

if TYPE_CHECKING:
    from ..empirical.pipeline.experiment_result import ExperimentResult

SECTION = "## Training dynamics (Sec. 6)"
FIGURE = "dynamics.png"


def dynamics_results(results: list[ExperimentResult]) -> list[ExperimentResult]:
    """The results that recorded dynamics, sorted by (role, seed)."""
    out = [r for r in results if r.dynamics]
    return sorted(out, key=lambda r: (r.role, r.seed))


def dynamics_figure(run_dirs: list[Path], path: Path) -> Path:
    """Coherence and deposit-layer importance margin over training for every recorded run
    (:func:`~posenc.empirical.analysis.dynamics_plots.plot_comparison`), or a figure saying there is none."""
    from ..empirical.analysis.dynamics_plots import plot_comparison
    if run_dirs:
        return plot_comparison(run_dirs, path)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.text(0.5, 0.5, "no run recorded training dynamics", ha="center", va="center")
    ax.set_axis_off()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def _f(v: Optional[float], fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def _margins(values: Optional[list[Optional[float]]]) -> str:
    if not values:
        return "-"
    return ", ".join(_f(v, ".2g") for v in values)


def recording_text(configs: Iterable[dict[str, Any]]) -> str:
    """How often the runs recorded their dynamics, from their configs' ``dynamics`` settings
    (:class:`~posenc.empirical.analysis.dynamics.DynamicsConfig`; paper-small records every 100
    steps, the other presets every 25): the settings of every run that recorded, each once."""
    from ..empirical.analysis.dynamics import DynamicsConfig
    base = DynamicsConfig()
    got = sorted({(int(d.get("every", base.every)), int(d.get("ablation_every", base.ablation_every)))
                  for c in configs if isinstance(d := c.get("dynamics"), dict)})
    return "; ".join(f"a record every {every} steps, importance every {k} records"
                     for every, k in got or [(base.every, base.ablation_every)])


def dynamics_markdown(dyn_results: list[ExperimentResult],
                      recording: str) -> tuple[list[str], dict[str, Any]]:
    """(markdown lines of the section, its JSON payload); ``recording``: how often the runs
    recorded (:func:`recording_text` of their configs)."""
    lines = [SECTION, "", f"![dynamics]({FIGURE})", "",
             "Recorded during the distance runs of RoPE and ALiBi (`posenc.empirical.analysis.dynamics`: "
             f"{recording}). The *seed* of "
             "a head is the batch mean of the per-example positional gradient signal psi (the "
             "loss's derivative along the head's positional direction of the attention scores); "
             "its *coherence* is |seed| / mean |psi| (1: every example pushes the same way). "
             "Early window: the first 10% of training. Importance: loss increase when the head's "
             "`hook_z` is zeroed. Margin: top head minus runner-up in a layer; log-gain: mean over "
             "adjacent layers of log(M_k / M_k+1), layer 0 shallowest. Definitions and the "
             "precise statements: docs/theory.md, *Training dynamics*. Verdicts Prop 6.1, "
             "Prop 6.2 and Thm 6.1 are in the verdict table above.", ""]
    if not dyn_results:
        return lines + ["(no run of this store recorded training dynamics)", ""], {"runs": [],
                                                                                  "prediction": {}}
    lines += ["*Sign balance*: the same early-window statistic as the coherence on the "
              "examples' signs alone, |#positive - #negative| / n, max over heads; the random-sign "
              "null (Prop 6.2) is exact for it under any sign-symmetric signals, and for the "
              "coherence only when the magnitudes are equal. *Null check*: whether coherence and "
              "sign balance fall on the same side of the null's q95 (posenc.verdicts.dynamics; "
              "Prop 6.2). *Sign-flip q95 (p)*: the coherence's 95% quantile and p-value under "
              "sign-flip randomisation of the recorded per-example signals, exact under sign "
              "symmetry whatever the magnitudes (Prop 6.1's null). *Scale-free log-gain*: the "
              "same log-gain of the early |seed| margin divided by the layer's mean |seed| "
              "(Thm 6.1).",
              "",
              *md_header(["PE (role)", "seed", "deposit (layer, head)", "early coherence, max",
                          "sign balance, max", "null q95", "null check", "sign-flip q95 (p)",
                          "batch sign consistency", "early |seed| margin per layer",
                          "scale-free log-gain (|seed| margin)",
                          "final importance margin per layer", "log-gain (importance)",
                          "lead from (share of training)"])]
    runs = []
    for res in dyn_results:
        d, role = res.dynamics, res.role
        lead = d.get("advantage_step")
        lead_txt = "-" if lead is None else f"step {lead} ({100 * lead / d['total_steps']:.0f}%)"
        check = null_check(d)
        q95 = (random_sign_null(int(d["probe_examples"]), int(d["signal_heads"]))["quantile"]
               if d.get("probe_examples") and d.get("signal_heads") else None)
        held = "-" if check is None else "holds" if check["holds"] else "**fails**"
        flip = d.get("sign_flip")
        flip_txt = "-" if flip is None else f"{flip['quantile']:.3f} ({flip['p_value']:.3f})"
        lines.append(md_row([role, res.seed, f"L{d['deposit'][0]} H{d['deposit'][1]}",
                             _f(d.get("coherence_max")), _f(d.get("sign_balance_max")), _f(q95),
                             held, flip_txt, _f(d.get("batch_sign_consistency"), ".2f"),
                             _margins(d.get("signal_margin")),
                             _f(d.get("signal_relative_mean_log_gain"), "+.2f"),
                             _margins(d.get("importance_margin")),
                             _f(d.get("importance_mean_log_gain"), "+.2f"), lead_txt]))
        runs.append({"role": role, "seed": res.seed, "deposit": d["deposit"],
                     "coherence_max": d.get("coherence_max"),
                     "sign_balance_max": d.get("sign_balance_max"), "null_q95": q95,
                     "null_check": None if check is None else check["holds"],
                     "batch_sign_consistency": d.get("batch_sign_consistency"),
                     "signal_margin": d.get("signal_margin"),
                     "importance_margin": d.get("importance_margin"),
                     "importance_mean_log_gain": d.get("importance_mean_log_gain"),
                     "signal_mean_log_gain": d.get("signal_mean_log_gain"),
                     "signal_relative_mean_log_gain": d.get("signal_relative_mean_log_gain"),
                     "sign_flip": flip,
                     "advantage_step": lead, "total_steps": d["total_steps"]})
    table = prediction_table(res for res in dyn_results)
    lines += ["", "**Can the deposit head be predicted from the first 10% of training?** Hits "
              "over seeds: *exact* = the predicted (layer, head) is the final deposit head "
              "(largest zero-ablation drop); *in layer* = within the deposit layer the "
              "predictor's top head is the deposit head. Predictors: largest early mean |seed| "
              "(signal), largest first-order attribution, largest measured importance.", "",
              *md_header(["PE (role)", *(f"{p}: exact / in layer" for p in PREDICTORS),
                          "chance: exact / in layer"])]
    for role, row in table.items():
        cells = [f"{row[p]['hits']}/{row[p]['n']} / {row[p]['head_hits']}/{row[p]['n']}"
                 if row[p]["n"] else "-" for p in PREDICTORS]
        ch = row["chance"]
        lines.append(md_row([role, *cells, f"{ch['hit']:.3f} / {ch['head_hit']:.3f}"]))
    lines.append("")
    return lines, {"runs": runs, "prediction": table}
