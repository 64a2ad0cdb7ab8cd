"""The record of an empirical claim judged on the stored runs of a sweep, as data.

As :class:`posenc.proofs.claim.Claim` holds a theory claim, a :class:`MeasuredClaim` holds one
claim judged on runs (:class:`~.accuracy_runs.Runs`): its id, its statement, the statistic in
words, the paper's wording, and its parts.  A part reads one per-seed statistic and states the
rule that turns it into a word:

* :class:`Part` -- ``stat(runs, seed, mode)`` on the seeds its runs share, judged against
  ``threshold`` on the ``predicted`` side (:func:`~.accuracy_runs.judged_part`: an ordering of
  accuracies under the ceiling rule, or against its run-to-run noise); ``missing``: the caveat
  a seed without the statistic gets; ``learned``: refused (inconclusive) when its models did not
  learn their task (:func:`~.accuracy_runs.learned_part`), as a deposit statistic must be;
* :class:`Conjunction` -- several parts stated at once, judged as one
  (:func:`~.conjunction.conjunction`);
* :class:`VersusAdditive` -- a deposit part against each additive PE that learned the task
  (:func:`~.accuracy_runs.versus_additive`).

A claim read for one model of several (the paper code's own ``rope`` model beside posenc's RoPE)
states when it is judged (``when``).  A claim of several parts names its primary one
(:func:`~.verdict.verdict_from_parts`: the others are shown, not judged).
:class:`JudgedElsewhere` keeps the place, in a list of claims, of claims whose module judges
them itself (S, ALiBi's).  Evaluating a record is one call (:meth:`MeasuredClaim.verdict`); the
records themselves live with their statistics (:mod:`.measured`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from .accuracy_runs import POINTS, Runs, judged_part, learned_part, versus_additive
from .conjunction import conjunction
from .verdict import Verdict, verdict_from_parts

#: a per-seed statistic: (runs, seed, ablation mode) -> its value, None when not recorded
Stat = Callable[[Runs, int, str], Optional[float]]
#: a statistic against a set of additive PEs: (runs, seed, ablation mode, the PEs) -> its value
VersusStat = Callable[[Runs, int, str, tuple[str, ...]], Optional[float]]
SIDES = ("above", "below")


@dataclass(frozen=True)
class Part:
    """One judged part: ``stat`` against ``threshold``, predicted on side ``predicted``."""

    name: str
    task: str
    roles: tuple[str, ...]
    stat: Stat
    threshold: float
    predicted: str
    bounds: Optional[tuple[float, float]] = POINTS   # its range: the shown interval's limits
    configs: Optional[tuple[tuple[str, str], ...]] = None  # the runs a seed needs, across tasks
    missing: str = "undefined on every seed"         # the note of a part without the statistic
    ordering: bool = False                           # an ordering of accuracies: ceiling rule
    noise: bool = False                              # judged against its run-to-run noise
    learned: bool = False                            # its models must have learned their task

    def __post_init__(self) -> None:
        if self.predicted not in SIDES:
            raise ValueError(f"part {self.name}: predicted side {self.predicted!r} not in {SIDES}")

    def judge(self, runs: Runs, mode: str) -> dict[str, Any]:
        configs = None if self.configs is None else list(self.configs)

        def judged() -> dict[str, Any]:
            return judged_part(self.name, runs, self.task, self.roles,
                               lambda s: self.stat(runs, s, mode), self.threshold, self.predicted,
                               ordering=self.ordering, bounds=self.bounds, configs=configs,
                               missing_note=self.missing, noise=self.noise)
        if not self.learned:
            return judged()
        return learned_part(self.name, runs, self.task, self.roles, judged, configs=configs)


@dataclass(frozen=True)
class Conjunction:
    """Several conditions stated at once, judged as one part; its runs (``task`` x ``roles``)
    must have learned their task."""

    name: str
    task: str
    roles: tuple[str, ...]
    conditions: tuple[Part, ...]

    def judge(self, runs: Runs, mode: str) -> dict[str, Any]:
        return learned_part(self.name, runs, self.task, self.roles, lambda: conjunction(
            self.name, [c.judge(runs, mode) for c in self.conditions]))


@dataclass(frozen=True)
class VersusAdditive:
    """``role`` against each additive PE that learned ``task``: ``stat(runs, seed, mode, (pe,))``
    > 0 for every one of them."""

    name: str
    task: str
    role: str
    stat: VersusStat
    bounds: tuple[float, float]

    def judge(self, runs: Runs, mode: str) -> dict[str, Any]:
        return versus_additive(self.name, runs, self.task,
                               lambda s, additive: self.stat(runs, s, mode, additive),
                               self.bounds, role=self.role)


AnyPart = Union[Part, Conjunction, VersusAdditive]


@dataclass(frozen=True)
class MeasuredClaim:
    """One empirical claim: its id, statement, statistic (in words), the paper's wording, its
    parts, the index of its primary part (None: its one part) and the digits its text shows."""

    id: str
    statement: str
    statistic: str
    paper: str
    parts: tuple[AnyPart, ...]
    primary: Optional[int] = None
    digits: int = 3
    #: judged only on runs for which this holds (None: on every sweep), e.g. a reading of the
    #: paper code's own model, judged only on runs of it (:meth:`~.accuracy_runs.Runs.reads_code_rope`)
    when: Optional[Callable[[Runs], bool]] = None

    def __post_init__(self) -> None:
        if not self.id or self.id != self.id.strip():
            raise ValueError(f"claim id must be non-empty, without surrounding space; got {self.id!r}")
        if not self.parts:
            raise ValueError(f"claim {self.id}: no parts")
        if self.primary is None and len(self.parts) > 1:
            raise ValueError(f"claim {self.id}: {len(self.parts)} parts need a primary part")
        if self.primary is not None and not 0 <= self.primary < len(self.parts):
            raise ValueError(f"claim {self.id}: primary part {self.primary} of {len(self.parts)}")

    def verdict(self, runs: Runs, mode: str = "zero") -> Verdict:
        return verdict_from_parts(self.id, self.statement, self.statistic, self.paper,
                                  [p.judge(runs, mode) for p in self.parts], digits=self.digits,
                                  primary=self.primary)


@dataclass(frozen=True)
class JudgedElsewhere:
    """Claims judged by their own module (``verdicts(runs)``): their place in a list of
    claims."""

    ids: str
    verdicts: Callable[[Runs], list[Verdict]]


def evaluate_claims(claims: tuple[Union[MeasuredClaim, JudgedElsewhere], ...], runs: Runs,
                    mode: str = "zero") -> list[Verdict]:
    """The verdicts of ``claims`` on ``runs``, in their order."""
    return [v for c in claims
            for v in (c.verdicts(runs) if isinstance(c, JudgedElsewhere)
                      else [c.verdict(runs, mode)] if c.when is None or c.when(runs) else [])]
