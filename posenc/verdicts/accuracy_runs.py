"""The runs of a sweep read as accuracies and deposits, and the parts judged on them.

:class:`Runs` indexes results by (task, role) -> {seed: result} (a :class:`~.runs.SeedRuns`) and
reads a run's test accuracy, its task's chance rate and floor, whether the PE learned the task and the
deposit of its ablation table; :func:`judged_part` is :func:`~.runs.judge_part` with the ceiling
rule for an ordering of accuracies (:func:`ordering_at_ceiling`), and :func:`learned_part` refuses
a deposit statistic whose models did not learn.  Shared by the claims E10-E14
(:mod:`.accuracy_deposit`), the claims measured as the paper states them (:mod:`.measured`) and
the trained criterion (:mod:`.trained`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from ..roles import ADDITIVE, CODE_ROPE
from .conjunction import conjunction
from .runs import SeedRuns, judge_part
from .verdict import CLEAN_BAYES, at_ceiling, ceiling_rule, ceiling_threshold

POINTS, UNIT = (-100.0, 100.0), (-1.0, 1.0)  # ranges of differences of percentages / of indices
#: points above its floor (chance, or what the length alone gives) a PE's mean test accuracy must
#: reach for the PE to count as having learned a task (see :meth:`Runs.learned`)
LEARNED_MARGIN = 5.0


#: the RoPE models a claim about RoPE's deposit or accuracy is read for (claim-id reading, role,
#: the model in words): posenc's ``rope`` role (in paper-code mode partialrope.py's model, RoPE on
#: every head) and the paper code's own ``rope`` model (dis_gen/trans.py, RoPE plus its
#: sinusoidal table: the model the paper's distance results and its transvis.py head ablation
#: come from), read only for runs that hold it (:meth:`Runs.rope_readings`)
ROPE_READINGS = (("", "rope", "RoPE"),
                 ("code rope", CODE_ROPE, "the paper code's `rope` model (RoPE + its cat[sin, "
                                          "cos] table)"))


class Runs(SeedRuns):
    """Results indexed by (task, role) -> {seed: result}, with the accuracy and deposit of a run."""

    def acc(self, task: str, role: str, seed: int) -> float:
        return 100.0 * self.by[(task, role)][seed].test_acc

    def reads_code_rope(self, task: str = "distance") -> bool:
        """Whether a claim about RoPE is read for the paper code's own ``rope`` model too
        (:data:`~posenc.roles.CODE_ROPE`): runs of that role on ``task``, every one of them in
        paper-code mode (in standard mode the role is posenc's own hybrid)."""
        runs = self.by.get((task, CODE_ROPE))
        return bool(runs) and all(r.paper_code for r in runs.values())

    def rope_readings(self, task: str = "distance") -> list[tuple[str, str, str]]:
        """The entries of :data:`ROPE_READINGS` these runs are read for: posenc's RoPE always,
        the paper code's ``rope`` model where :meth:`reads_code_rope`."""
        return [r for r in ROPE_READINGS if r[1] != CODE_ROPE or self.reads_code_rope(task)]

    def chance(self, task: str, role: str) -> Optional[float]:
        """The chance rate (percent) of the role's runs on ``task``: the mean over its seeds of
        the test split's majority-label rate; None when a run did not record it (older runs)."""
        return self._summary_percent(task, role, "chance")

    def length_rate(self, task: str, role: str) -> Optional[float]:
        """The best accuracy (percent) from an example's length alone on the role's runs
        (:func:`~posenc.empirical.bayes_ceiling.length_only_rate` of their task configuration,
        recorded by the sweep); None when a run did not record it (runs from before it was)."""
        return self._summary_percent(task, role, "length_rate")

    def bayes_ceiling(self, task: str, role: str) -> float:
        """The best accuracy (percent) any model can reach on the role's runs' task configuration
        (the summary's ``bayes_ceiling``: :func:`~posenc.empirical.bayes_ceiling.recorded_ceiling`,
        recorded by the sweep, or computed from the run's config when a store's run predates
        it), the mean over its seeds; 100 (a clean task's) when a run did not record it (a
        result read without its config)."""
        bayes = self._summary_percent(task, role, "bayes_ceiling")
        return CLEAN_BAYES if bayes is None else bayes

    def ceiling_threshold(self, task: str, role: str) -> float:
        """The mean accuracy (percent) at or above which the role is at the ceiling of ``task``:
        :data:`~.verdict.CEILING_MARGIN` points below its :meth:`bayes_ceiling` (98 on a clean
        task; about 95.6 with the paper's sampler at the paper's sizes)."""
        return ceiling_threshold(self.bayes_ceiling(task, role))

    def ceiling_rule(self, task: str, roles: Iterable[str]) -> str:
        """The ceiling rule of the roles' runs on ``task`` as the verdicts print it
        (:func:`~.verdict.ceiling_rule`); each role's where they differ (runs of different task
        configurations)."""
        rules = {r: ceiling_rule(self.bayes_ceiling(task, r)) for r in roles}
        if len(set(rules.values())) <= 1:
            return next(iter(rules.values()), ceiling_rule(CLEAN_BAYES))
        return ">= each PE's own threshold (" + ", ".join(f"{r} {t}" for r, t in rules.items()) + ")"

    def _summary_percent(self, task: str, role: str, key: str) -> Optional[float]:
        """The mean over the role's seeds of the summary's fraction ``key``, in percent; None
        when a run did not record it."""
        vals = [r.summary.get(key) for r in self.by.get((task, role), {}).values()]
        if not vals or any(not isinstance(v, (int, float)) for v in vals):
            return None
        return 100.0 * sum(vals) / len(vals)

    def floor(self, task: str, role: str) -> Optional[float]:
        """The accuracy (percent) a model reaches without learning what the task is about: the
        larger of the chance rate and the length-only rate (a distance model that has not learned
        positions still reads the example's length; on the count task the two are equal); the
        chance rate alone for runs that did not record the length-only rate; None without
        either."""
        rates = [r for r in (self.chance(task, role), self.length_rate(task, role))
                 if r is not None]
        return max(rates) if rates else None

    def run_floor(self, task: str, role: str, seed: int) -> Optional[float]:
        """One run's floor (percent): the larger of its own chance and length-only rates (as
        :meth:`floor` does for the mean over seeds); None when it recorded neither."""
        summary = self.by[(task, role)][seed].summary
        rates = [100.0 * summary[k] for k in ("chance", "length_rate")
                 if isinstance(summary.get(k), (int, float))]
        return max(rates) if rates else None

    def learned(self, task: str, role: str) -> bool:
        """Whether the role's mean test accuracy on ``task`` is at least :data:`LEARNED_MARGIN`
        points above its :meth:`floor` (True when no floor is recorded: nothing is then
        excluded)."""
        floor = self.floor(task, role)
        by_seed = self.by.get((task, role), {})
        if floor is None or not by_seed:
            return True
        mean = sum(self.acc(task, role, s) for s in by_seed) / len(by_seed)
        return mean >= floor + LEARNED_MARGIN

    def not_learned(self, task: str, roles: Iterable[str]) -> list[str]:
        """The roles of ``roles`` with runs on ``task`` that did not learn it."""
        return [r for r in roles if self.by.get((task, r)) and not self.learned(task, r)]

    def deposit(self, task: str, role: str, seed: int, mode: str = "zero"
                ) -> Optional[dict[str, Any]]:
        """The layer with the largest single-head drop (drops and gaps in points); None for a
        run without the ``mode`` ablation (one that diverged to non-finite weights)."""
        table = self.by[(task, role)][seed].ablation.get(mode)
        if table is None:
            return None
        layers = table["layers"]
        best = max(layers, key=lambda la: (la["largest_drop"], -la["layer"]))
        return {"layer": best["layer"], "n_layers": len(layers),
                "drop": 100.0 * best["largest_drop"], "index": best["deposit_index"],
                "gap": 100.0 * best["runner_up_gap"], "head": best["deposit_head"]}


    def deposit_contrast(self, task: str, role: str, others: Iterable[str], seed: int, key: str,
                         mode: str = "zero", other_task: Optional[str] = None) -> Optional[float]:
        """``deposit(role)[key] - max over others of deposit(other)[key]`` on one seed (the others'
        runs on ``other_task``, default ``task``); None when a run has no ablation table."""
        deps = [self.deposit(task, role, seed, mode)] + \
            [self.deposit(other_task or task, r, seed, mode) for r in others]
        if any(d is None for d in deps):
            return None
        return deps[0][key] - max(d[key] for d in deps[1:])


def has_head_drops(layers: list[dict[str, Any]]) -> bool:
    """Whether every layer of an ablation table holds its per-head ``drops`` (runs stored
    before they were recorded hold only each layer's largest)."""
    return all("drops" in la for la in layers)


#: a deposit part's note for seeds whose runs have no ablation table
NO_ABLATION = "no ablation table (the run diverged to non-finite weights)"


def judged_part(name: str, runs: Runs, task: str, roles: tuple[str, ...],
          stat: Callable[[int], Optional[float]], threshold: float, predicted: str,
          ordering: bool = False, bounds: Optional[tuple[float, float]] = POINTS,
          configs: Optional[list[tuple[str, str]]] = None,
          missing_note: str = "undefined on every seed", noise: bool = False) -> dict[str, Any]:
    """:func:`~.runs.judge_part` with ``ordering``: the statistic is ``acc(roles[0])`` minus
    the best of ``acc(roles[1:])`` on each seed (``predicted`` "above": the PE above all of
    them) or minus the worst (``predicted`` "below": the PE below all of them), an ordering of
    accuracies, and the ceiling rule applies to its two sides (:func:`ordering_at_ceiling`);
    ``bounds``: its range (default: a difference of percentages), the shown interval's limits;
    ``noise``: judged against its run-to-run noise (:func:`~.verdict.judge_standardized`)."""
    def ceiling(seeds: list[int]) -> bool:
        return ordering_at_ceiling(runs, task, roles[0], roles[1:], seeds,
                                   against=max if predicted == "above" else min)
    return judge_part(name, runs, task, roles, stat, threshold, predicted, bounds=bounds,
                      configs=configs, missing_note=missing_note,
                      ceiling=ceiling if ordering else None,
                      ceiling_text=runs.ceiling_rule(task, roles), noise=noise)


def ordering_at_ceiling(runs: Runs, task: str, role: str, others: Iterable[str],
                        seeds: list[int], against: Callable[..., float] = max) -> bool:
    """Whether an ordering ``acc(role) - against over others`` compares two sides that both
    average at the ceiling (:meth:`Runs.ceiling_threshold`: within
    :data:`~.verdict.CEILING_MARGIN` points of the task's Bayes ceiling): ``role``, and per seed
    the PE the statistic actually compares with -- the best of ``others`` for "above every
    other" (``against=max``; a PE that learned nothing among the others, e.g. NoPE on the
    distance task, must not keep two PEs at 99-100% from counting as a ceiling), the worst for
    "below every other" (``min``); that side's threshold is the highest of the others'."""
    others = tuple(others)
    compared = [against(runs.acc(task, r, s) for r in others) for s in seeds]
    thresholds = {role: runs.ceiling_threshold(task, role),
                  "compared": max(runs.ceiling_threshold(task, r) for r in others)}
    return at_ceiling({role: [runs.acc(task, role, s) for s in seeds], "compared": compared},
                      thresholds)


def unlearned_note(roles: Iterable[str]) -> str:
    return (f"{', '.join(roles)} did not learn the task (mean accuracy within {LEARNED_MARGIN:g} "
            "points of its floor: chance, or what the length alone gives): its ablations are "
            "noise")


def learned_part(name: str, runs: Runs, task: str, roles: tuple[str, ...],
                 part: Callable[[], dict[str, Any]], configs: Optional[list[tuple[str, str]]] = None
                 ) -> dict[str, Any]:
    """``part()``, or an inconclusive part naming the runs of ``configs`` (default: ``task`` x
    ``roles``) that did not learn their task: a deposit statistic needs models that learned."""
    configs = configs if configs is not None else [(task, r) for r in roles]
    bad = [r if t == task else f"{t}/{r}" for t, r in configs if runs.not_learned(t, (r,))]
    if not bad:
        return part()
    return {"part": name, "verdict": "inconclusive", "n": 0, "estimate": None, "interval": None,
            "note": unlearned_note(bad), "task": task, "roles": list(roles)}


def versus_additive(name: str, runs: Runs, task: str,
                    stat: Callable[[int, tuple[str, ...]], Optional[float]],
                    bounds: tuple[float, float], role: str = "rope") -> dict[str, Any]:
    """A deposit part ``role`` (RoPE; xPos for MX) against *each* additive PE that learned
    ``task``: one condition per PE, ``stat(seed, (pe,))`` (``role``'s value minus that PE's) > 0,
    joined by :func:`~.conjunction.conjunction` -- not against the max over the PEs, which on
    noisy per-run values is biased against ``role`` (the max of three noisy indices exceeds
    each PE's own).  An additive PE that did not learn leaves the conditions (named in the
    note); ``role`` must have learned."""
    learned = tuple(r for r in ADDITIVE if r not in runs.not_learned(task, ADDITIVE))
    left_out = [r for r in ADDITIVE if r not in learned]
    if not learned:
        return {"part": name, "verdict": "inconclusive", "n": 0, "estimate": None,
                "interval": None, "note": unlearned_note(left_out), "task": task,
                "roles": [role, *ADDITIVE]}

    def condition(pe: str) -> dict[str, Any]:
        return judged_part(f"{role} - {pe}", runs, task, (role, pe),
                           lambda s: stat(s, (pe,)), 0.0, "above", bounds=bounds,
                           missing_note=NO_ABLATION)
    out = learned_part(name, runs, task, (role,) + learned,
                       lambda: conjunction(name, [condition(pe) for pe in learned]),
                       configs=[(task, role)])
    if left_out:
        extra = "left out of the conditions: " + unlearned_note(left_out)
        out["note"] = f"{out['note']}; {extra}" if out.get("note") else extra
    return out
