"""E13 read both ways: MLA's deposit from its heads and from the paper code's latent columns.

E13 ("MLA removes the concentration") compares RoPE's deposit index with MLA's, both from the
``zero`` ablation, which removes one head at a time.  The paper code's MLA ablation
(``dis_gen/mlavis.py``) removes no head: its "head" v is the latent dimensions [w v, w v + w) of the
up-projections' inputs, shared by every head (mode ``latent-columns``,
:mod:`posenc.empirical.analysis.latent_ablation`; at the paper code's sizes half its variants
remove nothing).  :func:`mla_deposit_both_ways` gives each MLA run's deposit (the layer with the
largest drop, its index, drop, gap and "head") in both modes, and :func:`e13_index_both_ways` the
statistic of E13's primary part, ``DI(rope) - DI(mla)`` per seed, with MLA's index read each way
(RoPE's always from ``zero``: it has no latent).  Descriptive: no verdict reads it, and a run
without a mode's table gives None for that mode (the committed stores hold ``zero`` tables only;
a ``latent-columns`` table needs the run's checkpoint: ``posenc ablate RUN --mode
latent-columns``).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from .accuracy_runs import Runs

#: the head ablation E13 reads, and the paper code's MLA ablation (the empirical layer's
#: ``latent_ablation.MODE``; this package loads no torch)
ZERO, LATENT_COLUMNS = "zero", "latent-columns"
BOTH = (ZERO, LATENT_COLUMNS)


def mla_deposit_both_ways(results: Iterable[Any], task: str = "distance", role: str = "mla"
                          ) -> dict[int, dict[str, Optional[dict[str, Any]]]]:
    """seed -> {mode: the run's deposit (:meth:`~.accuracy_runs.Runs.deposit`: layer,
    n_layers, drop and gap in points, index, head) or None without that table} for ``role``'s
    runs on ``task``, both modes of :data:`BOTH`."""
    runs = Runs(results)
    return {seed: {mode: runs.deposit(task, role, seed, mode) for mode in BOTH}
            for seed in sorted(runs.by.get((task, role), {}))}


def e13_index_both_ways(results: Iterable[Any], task: str = "distance", role: str = "rope"
                        ) -> dict[int, dict[str, Optional[float]]]:
    """seed (those the ``role`` and mla runs share) -> the RoPE model's deposit index (``zero``;
    key ``role``), MLA's in each mode (``"mla zero"``, ``"mla latent-columns"``) and E13's
    statistic ``DI(role) - DI(mla)`` with each (``"rope - mla zero"``, ``"rope - mla
    latent-columns"`` for ``role`` rope); None where a table is missing.  ``role``: posenc's
    RoPE, or trans.py's rope (``absolute+rope``) for E13's code-rope reading."""
    runs = Runs(results)
    out: dict[int, dict[str, Optional[float]]] = {}
    for seed in runs.seeds(task, (role, "mla")):
        rope = runs.deposit(task, role, seed, ZERO)
        row: dict[str, Optional[float]] = {role: None if rope is None else rope["index"]}
        for mode in BOTH:
            mla = runs.deposit(task, "mla", seed, mode)
            row[f"mla {mode}"] = None if mla is None else mla["index"]
            row[f"{role} - mla {mode}"] = None if rope is None or mla is None else \
                rope["index"] - mla["index"]
        out[seed] = row
    return out
