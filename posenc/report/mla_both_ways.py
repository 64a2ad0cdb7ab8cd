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

from ..verdicts.mla_latent import BOTH, LATENT_COLUMNS, ZERO, e13_index_both_ways, \
    mla_deposit_both_ways
from .table import md_header, md_row

if TYPE_CHECKING:
    from ..empirical.pipeline.experiment_result import ExperimentResult

SECTION = "### E13 read both ways: MLA's heads and the paper code's latent columns"
#: a cell of a mode a run holds no table of
NOT_MEASURED = "not measured"


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
    return f"{mean:+.2f} (range {min(values):+.2f} to {max(values):+.2f}; {len(values)} seed{'s' if len(values) > 1 else ''})"


def mla_both_ways_markdown(results: list[ExperimentResult], task: str = "distance"
                           ) -> tuple[list[str], dict[str, Any]]:
    """(markdown lines, JSON entry) of the section; none when the runs hold no MLA run on
    ``task``."""
    deposits = mla_deposit_both_ways(results, task)
    if not deposits:
        return [], {}
    stats = e13_index_both_ways(results, task)
    lines = [SECTION, "",
             "E13 compares RoPE's deposit index with MLA's, each from the `zero` ablation (one "
             "head removed at a time). The paper code's MLA ablation (`dis_gen/mlavis.py`) "
             "removes no head: its \"head\" v zeroes the latent input columns [w v, w v + w) of "
             "the three up-projections, shared by every head (mode `latent-columns`). Both are "
             f"shown on the {task} task; E13's verdict reads `zero`. \"{NOT_MEASURED}\": the run "
             "holds no table of that mode (it needs the run's checkpoint).", ""]
    lines += md_header(["seed", "MLA deposit, heads (zero)", "MLA deposit, latent columns",
                        "DI(rope) - DI(mla), heads", "DI(rope) - DI(mla), latent columns"])
    seeds: list[dict[str, Any]] = []
    for seed, modes in deposits.items():
        stat = stats.get(seed, {})
        cells = [stat.get(f"rope - mla {mode}") for mode in BOTH]
        lines.append(md_row([seed, _deposit_cell(modes[ZERO], "head"),
                             _deposit_cell(modes[LATENT_COLUMNS], "block"),
                             *(NOT_MEASURED if c is None else f"{c:+.2f}" for c in cells)]))
        seeds.append({"seed": seed, "mla": modes,
                      **{f"rope - mla {mode}": c for mode, c in zip(BOTH, cells)}})
    means = {mode: [s[f"rope - mla {mode}"] for s in seeds if s[f"rope - mla {mode}"] is not None]
             for mode in BOTH}
    lines += ["", f"- DI(rope) - DI(mla) over seeds, heads: {_summary(means[ZERO])}; latent "
              f"columns: {_summary(means[LATENT_COLUMNS])}.", ""]
    return lines, {"task": task, "seeds": seeds,
                   "measured": {mode: len(v) for mode, v in means.items()}}
