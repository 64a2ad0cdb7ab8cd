"""The words a verdict is shown with: its decision and the regime (the preset) that decided it.

A claim's *decision* is the statistic's (:func:`~.verdict.decide`): ``confirmed``, ``against``
(the interval lies wholly on the other side of the threshold), ``inconclusive`` or ``ceiling``.
Its *word*, what the report's tables and report.json show, names the preset whose runs decided
it, because a decision holds for the regime that made it:

* ``confirmed at PRESET``, ``inconclusive at PRESET``, ``ceiling at PRESET``;
* a decision against the claim: ``refuted at paper`` only at the paper's own size (the preset
  :data:`PAPER_PRESET`); at every other preset -- each scaled down from the paper's models,
  data or training -- ``not reproduced at PRESET``: the claim did not hold in that regime,
  which says nothing of the paper's own;
* no preset known: the bare decision, ``against`` read ``not reproduced``.

A store whose runs are of several presets is the regime ``mixed presets (...)``, scaled down.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

#: the preset of the paper's own sizes (:mod:`posenc.training_presets`): the one regime in which
#: a decision against a claim reads "refuted"
PAPER_PRESET = "paper"


def verdict_word(decision: str, regime: str = "") -> str:
    """The word of ``decision`` (one of :data:`~.verdict.VERDICTS`) at ``regime`` (module doc)."""
    if decision == "against":
        decision = "refuted" if regime == PAPER_PRESET else "not reproduced"
    return f"{decision} at {regime}" if regime else decision


def regime_of(results: Iterable[Any]) -> str:
    """The preset of the runs (``summary.preset`` of each result or result dict); several read
    ``mixed presets (a, b)``; "" when none names one."""
    presets = set()
    for r in results:
        summary = r.get("summary", {}) if isinstance(r, dict) else getattr(r, "summary", {})
        if isinstance(summary, dict) and summary.get("preset"):
            presets.add(str(summary["preset"]))
    if len(presets) > 1:
        return f"mixed presets ({', '.join(sorted(presets))})"
    return presets.pop() if presets else ""


def with_regime(verdicts: Sequence[Any], regime: str) -> list[Any]:
    """The verdicts with their regime set (their words then name it)."""
    return [dataclasses.replace(v, regime=regime) for v in verdicts]
