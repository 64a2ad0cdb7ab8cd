"""The report's section on the claims measured as the paper states them.

The verdicts EH, NC1-NC3, S, RA, AD, MX, AL1 and AL2 (:mod:`posenc.verdicts.measured`) join
the verdict table (AD, MX, AL1 and AL2 read the ablation tables and accuracies the other
sections show); this section shows the numbers behind them, means over seeds per PE role: the
PE-span share of the positional energy per residual site (EH), the training-trace statistics
(S) and the learned relative table's head-centred RMS over training with its log change A and
drift null A_null per task (RA).  Runs trained before these were recorded have none and are left
out of the tables.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Iterable

from ..verdicts.measured import attenuation_beyond_drift
from .table import md_header, md_row

if TYPE_CHECKING:
    from ..empirical.pipeline.experiment_result import ExperimentResult

SECTION = "## Claims measured as the paper states them"


def site_order(sites: Iterable[str]) -> list[str]:
    """Residual-stream sites (:mod:`posenc.empirical.analysis.probe`: ``embed``, ``block{l}``) in
    layer order: the input embedding first, then the blocks by number (stored results hold them
    in sorted-key order, which puts ``embed`` last)."""
    return sorted(sites, key=lambda x: -1 if x == "embed" else int(x[5:]))


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _f(v: Any, fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def measured_markdown(results: list[ExperimentResult]) -> tuple[list[str], dict[str, Any]]:
    """(markdown lines, JSON payload) of the section."""
    shares: dict[str, list[dict[str, float]]] = defaultdict(list)
    chance: dict[str, float] = {}
    traces: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    tables: dict[str, list[list[float]]] = defaultdict(list)
    drift: dict[str, list[tuple[float, float]]] = defaultdict(list)  # task -> (A, A_null) per run
    for res in results:
        role, task = res.role, res.task
        probe = res.probe or {}
        if task == "distance" and probe.get("pe_span_share"):
            shares[role].append(probe["pe_span_share"])
            chance[role] = probe["pe_span_chance"]
        if res.trace:
            traces[(task, role)].append(res.trace)
            if res.trace.get("tables"):
                tables[task].append(res.trace["tables"]["centred_rms"])
                a, beyond = res.trace["tables"].get("log_attenuation"), attenuation_beyond_drift(res)
                if a is not None and beyond is not None:
                    drift[task].append((a, a - beyond))
    lines = [SECTION, "",
             "Numbers behind verdicts EH, S and RA (definitions: "
             "`posenc.verdicts.measured`, `posenc.empirical.analysis.probe`, "
             "`posenc.empirical.training.trace`), means over seeds.", "",
             "**PE-span share** (EH): the share of the residual stream's positional energy "
             "(position means, centred) in the span of the absolute PE table's principal "
             "directions (90% of its energy); chance for a random direction k / d_model.", ""]
    if shares:
        sites = site_order(next(iter(shares.values()))[0])
        lines += md_header(["PE (role)", "chance", *sites])
        for role, per_seed in sorted(shares.items()):
            lines.append(md_row([role, f"{chance[role]:.2f}",
                                 *(f"{_mean([p[s] for p in per_seed]):.3f}" for s in sites)]))
    else:
        lines.append("(not recorded in these runs)")
    lines += ["", "**Training trace** (S): gradient-norm CV = mean over windows of W steps of "
              "sd / mean; a loss spike = a step whose loss exceeds twice the median of the W "
              "steps before it and that median by 0.1 nats; steps to 90% = share of training "
              "until the W-step mean batch accuracy reaches 90% of its final value (the first "
              "10% of steps are left out of CV and spikes). Each run's trace, and the relative "
              "table's curve below, cover its training up to the end of the epoch whose weights "
              "it kept (the training that made the model the report analyses; the epochs after "
              "it, early stopping's patience or the rest of a fixed budget, are left out).", ""]
    keys = ("grad_norm_cv", "spike_rate", "steps_to_90")
    if traces:
        lines += md_header(["task", "PE (role)", "seeds", "grad-norm CV", "spike rate",
                            "steps to 90%"])
        for (task, role), per_seed in sorted(traces.items()):
            cells = []
            for k in keys:
                vals = [t[k] for t in per_seed if t.get(k) is not None]
                cells.append(_f(_mean(vals)) if vals else "-")
            lines.append(md_row([task, role, len(per_seed), *cells]))
    else:
        lines.append("(not recorded in these runs)")
    lines += ["", "**Relative table** (RA): head-centred RMS of the learned per-offset table "
              "(mean over layers and seeds) at the initialisation and after each epoch up to the "
              "kept one (the shortest run's).", ""]
    if tables:
        for task, curves in sorted(tables.items()):
            n = min(len(c) for c in curves)
            lines.append(f"- {task}: " + " → ".join(
                f"{_mean([c[i] for c in curves]):.3g}" for i in range(n)))
        for task, pairs in sorted(drift.items()):
            lines.append(f"- {task}: A = log(final / initial) {_mean([a for a, _ in pairs]):+.3f}; "
                         f"drift null A_null {_mean([null for _, null in pairs]):+.3f} (the same table "
                         "under AdamW on pure-noise gradients, each run's schedule and steps; "
                         f"{len(pairs)} runs)")
    else:
        lines.append("(not recorded in these runs)")
    lines.append("")
    payload = {"pe_span_share": {r: [dict(p) for p in v] for r, v in shares.items()},
               "trace": {f"{t}/{r}": [{k: x.get(k) for k in keys} for x in v]
                         for (t, r), v in traces.items()},
               "relative_table": dict(tables),
               **({"relative_table_drift": {t: [list(p) for p in v] for t, v in drift.items()}}
                  if drift else {})}
    return lines, payload
