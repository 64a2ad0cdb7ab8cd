"""The report's section on E13 read both ways: MLA's deposit from its heads (``zero``) and from
the paper code's latent columns (``latent-columns``, :mod:`posenc.verdicts.mla_latent`).

Per seed: each MLA run's deposit in both modes (layer, "head", drop, deposit index) and E13's
statistic ``DI(rope) - DI(mla)`` with MLA's index read each way; below, the mean and range over
the seeds that have it.  Descriptive: E13's verdict reads the ``zero`` mode.  A run without a
mode's table says so (the ``latent-columns`` table needs the run's checkpoint; the stores drop
it, so the mode is measured where a sweep asks for it or by ``posenc ablate RUN --mode
latent-columns`` on a run that kept it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..verdicts.accuracy_runs import Runs
from ..verdicts.mla_latent import BOTH, LATENT_COLUMNS, ZERO, e13_index_both_ways, \
    mla_deposit_both_ways
from .table import md_header, md_row

if TYPE_CHECKING:
    from ..empirical.pipeline.experiment_result import ExperimentResult

SECTION = "### E13 read both ways: MLA's heads and the paper code's latent columns"
#: a cell of a mode an MLA run holds no table of
NOT_MEASURED = "not measured"
#: a difference cell of a seed without RoPE's zero table (no RoPE run, or one that diverged)
NO_ROPE = "no RoPE table"


def _deposit_cell(dep: Optional[dict[str, Any]], unit: str) -> str:
    """The deposit layer, its top ``unit`` (a head, or a block of latent columns), that unit's
    drop and the layer's deposit index."""
    if dep is None:
        return NOT_MEASURED
    return f"layer {dep['layer']}, {unit} {dep['head']}: {dep['drop']:.1f} pts, DI {dep['index']:.2f}"


def _summary(values: list[float]) -> str:
    if not values:
        return NOT_MEASURED
    mean = sum(values) / len(values)
    seeds = f"{len(values)} seed" + ("s" if len(values) > 1 else "")
    return f"{mean:+.2f} (range {min(values):+.2f} to {max(values):+.2f}; {seeds})"


def mla_both_ways_markdown(results: list[ExperimentResult], task: str = "distance"
                           ) -> tuple[list[str], dict[str, Any]]:
    """(markdown lines, JSON entry) of the section; none when the runs hold no MLA run on
    ``task``."""
    deposits = mla_deposit_both_ways(results, task)
    if not deposits:
        return [], {}
    roles = [role for _, role, _ in Runs(results).rope_readings(task)]
    stats = {role: e13_index_both_ways(results, task, role) for role in roles}
    lines = [SECTION, "",
             "E13 compares RoPE's deposit index with MLA's, each from the `zero` ablation (one "
             "head removed at a time). The paper code's MLA ablation (`dis_gen/mlavis.py`) "
             "removes no head: its \"head\" v zeroes the latent input columns [w v, w v + w) of "
             "the three up-projections, shared by every head (mode `latent-columns`; a range "
             "past the latent's width is cut there, so where w v reaches it the variant removes "
             f"nothing). Both are shown on the {task} task, RoPE's index always from `zero` (it "
             "has no latent), for every seed whether or not its runs learned the task (E13's "
             "verdict reads `zero` and leaves out a run that did not learn). "
             f"\"{NOT_MEASURED}\": the MLA run holds no table of that mode (it needs the run's "
             f"checkpoint); \"{NO_ROPE}\": the seed has no RoPE run with a `zero` table."
             + (" The paper-code runs hold trans.py's rope (`absolute+rope`) too: E13's "
                "code-rope reading, read both ways beside RoPE's." if len(roles) > 1 else ""),
             ""]
    lines += md_header(["seed", "MLA deposit, heads (zero)", "MLA deposit, latent columns",
                        *(f"DI({role}) - DI(mla, {way})" for role in roles
                          for way in ("heads", "latent columns"))])
    seeds: list[dict[str, Any]] = []
    for seed, modes in deposits.items():
        row: dict[str, Any] = {"seed": seed, "mla": modes}
        cells = []
        for role in roles:
            stat = stats[role].get(seed, {})
            missing = NO_ROPE if stat.get(role) is None else NOT_MEASURED
            for mode in BOTH:
                c = row[f"{role} - mla {mode}"] = stat.get(f"{role} - mla {mode}")
                cells.append(missing if c is None else f"{c:+.2f}")
        lines.append(md_row([seed, _deposit_cell(modes[ZERO], "head"),
                             _deposit_cell(modes[LATENT_COLUMNS], "block"), *cells]))
        seeds.append(row)
    means = {role: {mode: [s[f"{role} - mla {mode}"] for s in seeds
                           if s[f"{role} - mla {mode}"] is not None] for mode in BOTH}
             for role in roles}
    lines.append("")
    lines += [f"- DI({role}) - DI(mla) over seeds, heads: {_summary(means[role][ZERO])}; latent "
              f"columns: {_summary(means[role][LATENT_COLUMNS])}." for role in roles]
    lines.append("")
    return lines, {"task": task, "seeds": seeds,
                   "measured": {mode: len(v) for mode, v in means["rope"].items()},
                   **({"measured_by_role": {role: {mode: len(v) for mode, v in m.items()}
                                            for role, m in means.items()}}
                      if len(roles) > 1 else {})}
