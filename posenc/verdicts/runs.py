"""The one path from stored runs to a judged part: runs per (task, role, seed), a per-seed
statistic over the seeds they share, :func:`~posenc.verdicts.verdict.judge`.

:class:`SeedRuns` indexes results by (task, role) -> {seed: value}; :func:`judge_part` computes
a part of a claim on it.  The empirical, measured and dynamics verdicts all go through these two
(they differ only in what they index and in their statistics).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from .verdict import CLEAN_BAYES, ceiling_rule, judge, judge_standardized

if TYPE_CHECKING:  # the empirical layer (torch) is loaded when runs are indexed, not on import
    from ..empirical.pipeline.experiment_result import ExperimentResult

Config = tuple[str, str]  # (task, role)


class SeedRuns:
    """Results indexed by (task, role) -> {seed: value}.

    ``results``: :class:`~posenc.empirical.pipeline.experiment_result.ExperimentResult` s, or the
    workers' result dicts (read by its ``from_stored``: a malformed one is a PosencError);
    ``keep(result)`` chooses the results to index (default: all); ``value(result)`` is what is
    stored per seed (default: the result itself)."""

    def __init__(self, results: Iterable[Any],
                 keep: Optional[Callable[[ExperimentResult], bool]] = None,
                 value: Optional[Callable[[ExperimentResult], Any]] = None) -> None:
        from ..empirical.pipeline.experiment_result import ExperimentResult
        self.by: dict[Config, dict[int, Any]] = defaultdict(dict)
        for res in map(ExperimentResult.of, results):
            if keep is None or keep(res):
                self.by[(res.task, res.role)][res.seed] = res if value is None else value(res)

    def seeds(self, task: str, roles: Iterable[str]) -> list[int]:
        """The seeds every (task, role) of ``roles`` has."""
        return self.common_seeds([(task, r) for r in roles])

    def common_seeds(self, configs: Sequence[Config]) -> list[int]:
        sets = [set(self.by.get(c, {})) for c in configs]
        return sorted(set.intersection(*sets)) if sets else []

    def roles(self, task: str) -> list[str]:
        return sorted(r for (t, r) in self.by if t == task)


def judge_part(name: str, runs: SeedRuns, task: str, roles: Sequence[str],
               stat: Callable[[int], Optional[float]], threshold: float, predicted: str, *,
               bounds: Optional[tuple[float, float]], missing_note: str,
               configs: Optional[Sequence[Config]] = None, undefined_note: Optional[str] = None,
               runs_word: str = "runs",
               ceiling: Optional[Callable[[list[int]], bool]] = None,
               ceiling_text: Optional[str] = None,
               noise: bool = False) -> dict[str, Any]:
    """One part of a claim: ``stat(seed)`` on every seed the part's runs share, judged.

    ``configs``: the (task, role) runs a seed needs when they span tasks (default: ``task`` x
    ``roles``; the part then names them).  ``stat`` may return None (not recorded on that
    seed): such seeds are left out and named (``undefined_note`` on seed(s) [...], default
    ``missing_note``); with none left the part is inconclusive with ``missing_note``, and with
    no shared seed at all it names the missing runs ("no ``runs_word`` for ...").
    ``ceiling(seeds)``: whether the part is at the ceiling on the judged seeds (its verdict is
    then ``ceiling``, its note ``ceiling_text``, the rule as the part's runs state it --
    :meth:`~.accuracy_runs.Runs.ceiling_rule`; default: a task whose Bayes ceiling is 100%,
    :func:`~.verdict.ceiling_rule` -- never on one seed: like any verdict, a ceiling needs at
    least two).
    ``noise``: judge the statistic against its run-to-run noise
    (:func:`~.verdict.judge_standardized`: ``threshold`` in units of its sd over seeds)."""
    cross = configs is not None
    configs = list(configs) if cross else [(task, r) for r in roles]
    seeds = runs.common_seeds(configs)
    where: dict[str, Any] = {"task": task, "roles": list(roles)}
    if cross:
        where["configs"] = [list(c) for c in configs]
    values = [(s, stat(s)) for s in seeds]
    undefined = [s for s, v in values if v is None]
    values = [(s, v) for s, v in values if v is not None]
    if not values:
        if seeds:
            note = missing_note
        else:
            missing = [r if t == task else f"{t}/{r}" for t, r in configs if not runs.by.get((t, r))]
            note = f"no {runs_word} for {', '.join(missing) or 'a common seed'}"
        return {"part": name, "verdict": "inconclusive", "n": 0, "estimate": None,
                "interval": None, "note": note, **where}
    judged = (judge_standardized([v for _, v in values], threshold, predicted) if noise else
              judge([v for _, v in values], threshold, predicted, bounds=bounds))
    out = {"part": name, **judged, "seeds": [s for s, _ in values], **where}
    if undefined:
        extra = f"{undefined_note or missing_note} on seed(s) {undefined}"
        out["note"] = f"{out['note']}; {extra}" if out.get("note") else extra
    if ceiling is not None and len(values) >= 2 and ceiling([s for s, _ in values]):
        out["verdict"], out["note"] = "ceiling", ("both sides of the ordering (the PE and, per "
                                                  "seed, the PE it is compared with) average "
                                                  f"{ceiling_text or ceiling_rule(CLEAN_BAYES)}")
    return out
