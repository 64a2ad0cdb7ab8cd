"""Whether a store's runs were trained by the preset's *trained criterion* (issue: trained models).

A verdict about a claim of Gu et al. (arXiv 2505.13027) must come from models that finished
learning, not from models stopped mid-transition.  A preset meets the criterion on a set of runs
(its calibration runs, seeds 1000+, or any store) when

(a) **plateau**: every run of a PE that learned its task (:meth:`~.empirical.Runs.learned`)
    reached its validation plateau -- its stopping rule fired (``patience`` evaluations without
    a better validation accuracy -- under ``stop_on = accuracy_or_loss`` without a better
    accuracy or a lower loss -- or a perfect one), before the maximum number of epochs or at
    it -- rather than running out of epochs while still improving by the rule's measure; and
    no such run *stopped before learning*: its own accuracy within
    :data:`~.accuracy_deposit.LEARNED_MARGIN` points of its floor while the PE's mean is not
    (:meth:`~.accuracy_runs.Runs.floor`: chance, or on the distance task what the example's
    length alone gives -- the level a run stuck before its transition sits at; the stopping rule
    fired on the slow start, a plateau of noise on a small validation split).
    A run trained at a **fixed budget** (:func:`fixed_budget`: its patience is at least its
    maximum epochs, so its rule can fire only on a perfect validation accuracy -- paper-small,
    whose runs train every epoch as the paper's code does) has no plateau its rule could see: it
    counts as at its plateau when its validation accuracy rose less than
    :data:`FIXED_BUDGET_RISE` points over its last :data:`FIXED_BUDGET_SPAN` epochs
    (:func:`end_rise`), and as still learning -- "at the maximum" -- otherwise;
(b) **distance**: the best PE's mean test accuracy is >= :data:`BEST_DISTANCE`;
(b') **ceiling**: no distance PE's mean is at the ceiling (within :data:`~.verdict.CEILING_MARGIN`
    points of the task's Bayes ceiling, :meth:`~.accuracy_runs.Runs.ceiling_threshold`: >= 98%
    on the clean task, about 95.6% with the paper's sampler; where an accuracy cannot show a
    lead).  This part is reported on its own: on the clean distance
    task no size of the quick model met it together with (a) (docs/reproduction.md, "Status"),
    and the quick preset was frozen with it unmet -- what keeps a verdict valid there is the
    verdicts' two-sided ceiling rule (:func:`~.verdict.at_ceiling`), which reports an ordering
    of two PEs that both sit at the ceiling as ``ceiling``, never as decided;
(c) **count**: the best PE's mean test accuracy is >= :data:`BEST_COUNT`;
(c') **count ceiling**: (b') on the count task (its Bayes ceiling is 100%: the label, the number
    of trigger tokens, is a function of the input; the line at 98%), reported on its own as (b')
    is -- at ``quick`` every count PE sits at it.

Nothing here reads which claim comes out: the criterion is about the models, not the verdicts.
:func:`stopping_table` is the per-(task, PE) account of where the runs stopped, which the report
prints beside the criterion.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from .accuracy_runs import LEARNED_MARGIN, Runs
from .verdict import CEILING_MARGIN

#: (b) and (c): the best PE's mean test accuracy (percent) on each task
BEST_DISTANCE, BEST_COUNT = 90.0, 80.0

#: (a) at a fixed budget: a run is still learning at its end when its validation accuracy at the
#: last epoch is at least FIXED_BUDGET_RISE points above that of FIXED_BUDGET_SPAN epochs before
#: -- val(E) - val(E-2) >= 2, the rule fixed before paper-small's MLA calibration ran
#: (docs/reproduction.md, "MLA's budget at `paper-small`"; commit 545503f)
FIXED_BUDGET_RISE, FIXED_BUDGET_SPAN = 2.0, 2
#: end_rise's rounding, in points: far below one example of any validation set (1e-4 points at
#: 10^6 examples) and far above float64's error in a difference of two accuracies (~1e-14)
RISE_DECIMALS = 9


@dataclass(frozen=True)
class Criterion:
    """One part of the trained criterion: ``met`` is None where the runs cannot tell (no runs of
    the task, or runs without early stopping)."""

    name: str
    rule: str
    measured: str
    met: Optional[bool]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rule": self.rule, "measured": self.measured, "met": self.met}


def _stop(result: Any) -> Optional[dict[str, Any]]:
    stop = result.summary.get("early_stopping")
    return stop if isinstance(stop, dict) else None


def fixed_budget(stop: dict[str, Any]) -> bool:
    """Whether a run trained at a fixed budget: its patience is at least its maximum epochs, so
    its stopping rule cannot fire before the maximum but on a perfect validation accuracy."""
    return int(stop["patience"]) >= int(stop["max_epochs"])


def end_rise(metrics: Optional[Iterable[Any]]) -> Optional[float]:
    """The rise of a run's validation accuracy over its last :data:`FIXED_BUDGET_SPAN`
    evaluations, in points (val(E) - val(E - span)); None when its metrics hold fewer than
    span + 1 evaluations (a result stored without its metrics).  Rounded to
    :data:`RISE_DECIMALS` places: an accuracy is a count over the validation set, and a rise of
    exactly 2 points (28 of 1,400 examples) computes as 1.9999999999999998 for about 3 pairs of
    counts in 10, which the rule's ``<`` would pass."""
    vals = [float(m["val_acc"]) for m in metrics or ()
            if isinstance(m, dict) and isinstance(m.get("val_acc"), (int, float))]
    if len(vals) <= FIXED_BUDGET_SPAN:
        return None
    return round(100 * (vals[-1] - vals[-1 - FIXED_BUDGET_SPAN]), RISE_DECIMALS)


def plateaued(stop: dict[str, Any], metrics: Optional[Iterable[Any]] = None) -> bool:
    """Whether a run's stopping rule fired (:func:`posenc.empirical.training.train.should_stop` on its
    validation history), read from its ``early_stopping`` summary: its ``fired`` where recorded
    (under ``stop_on = "accuracy_or_loss"`` a run may go on past ``patience`` epochs after its
    kept one while its loss still falls), else its best validation accuracy is perfect, or
    ``patience`` evaluations followed the kept one.  True also for a run whose
    plateau came exactly at the maximum epoch, which ``stopped_early`` (the rule fired *before*
    the maximum) leaves out.  A run at a fixed budget (:func:`fixed_budget`) whose rule did not
    fire is at its plateau when its validation accuracy's :func:`end_rise` (from ``metrics``, its
    per-epoch history) is under :data:`FIXED_BUDGET_RISE` points; without that history it is
    not (it cannot be shown to be)."""
    if isinstance(stop.get("fired"), bool):  # recorded by the run (any stop_on)
        fired = stop["fired"]
    else:
        best, stopped = int(stop["best_epoch"]), int(stop["stopped_epoch"])
        fired = float(stop["best_val_acc"]) >= 1.0 or stopped - best >= int(stop["patience"])
    if fired or not fixed_budget(stop):
        return fired
    rise = end_rise(metrics)
    return rise is not None and rise < FIXED_BUDGET_RISE


def stopping_table(results: Iterable[Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(task, role) -> {runs, early (runs whose early stop fired before the maximum), at_max
    (seeds that reached the maximum without reaching their plateau: :func:`plateaued`; at a
    fixed budget, still learning at the end), fixed (runs at a fixed budget), diverged
    (seeds whose training stopped at a non-finite loss), stopped (epochs trained per seed), best
    (epoch of the kept weights per seed), max_epochs, batch (the batch sizes, where the runs
    recorded them)}; runs without early stopping count in ``runs``, ``diverged`` and ``batch``
    only (``early`` None)."""
    table: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"runs": 0, "early": 0, "at_max": [], "fixed": 0, "diverged": [], "stopped": [],
                 "best": [], "max_epochs": set(), "batch": set()})
    for r in sorted(results, key=lambda r: (r.task, r.role, r.seed)):
        row = table[(r.task, r.role)]
        row["runs"] += 1
        if isinstance(r.summary.get("batch_size"), int):
            row["batch"].add(r.summary["batch_size"])
        if r.summary.get("diverged"):
            row["diverged"].append(r.seed)
        stop = _stop(r)
        if stop is None:
            row["early"] = None
            continue
        if row["early"] is not None:
            row["early"] += bool(stop.get("stopped_early"))
        row["fixed"] += fixed_budget(stop)
        if not plateaued(stop, r.metrics) and not r.summary.get("diverged"):
            row["at_max"].append(r.seed)
        row["stopped"].append(int(stop["stopped_epoch"]))
        row["best"].append(int(stop["best_epoch"]))
        row["max_epochs"].add(int(stop["max_epochs"]))
    return {k: {**v, "max_epochs": sorted(v["max_epochs"]), "batch": sorted(v["batch"])}
            for k, v in sorted(table.items())}


def trained_criterion(results: Iterable[Any]) -> list[Criterion]:
    """The five parts of the trained criterion on ``results`` (see the module doc)."""
    results = list(results)
    runs = Runs(results)
    stops = stopping_table(results)
    return [_plateau(runs, stops), _best("(b) distance", "distance", runs, BEST_DISTANCE),
            _ceiling("(b') ceiling", "distance", runs),
            _best("(c) count", "count", runs, BEST_COUNT),
            _ceiling("(c') count ceiling", "count", runs)]


def _mean_acc(runs: Runs, task: str, role: str) -> float:
    seeds = runs.by[(task, role)]
    return sum(runs.acc(task, role, s) for s in seeds) / len(seeds)


def _plateau(runs: Runs, stops: dict[tuple[str, str], dict[str, Any]]) -> Criterion:
    learned = [k for k in stops if runs.learned(*k)]
    fixed = sum(stops[k]["fixed"] for k in learned)
    at_fixed = "; at a fixed budget -- a patience of at least the maximum epochs, the rule fires " \
               "only on a perfect validation accuracy -- its validation accuracy rose less " \
               f"than {FIXED_BUDGET_RISE:g} points over its last {FIXED_BUDGET_SPAN} epochs"
    rule = "every run of a PE that learned its task reached its validation plateau (its " \
           f"stopping rule fired{at_fixed if fixed else ''}) rather than running out of epochs, " \
           f"and none stopped before learning (within {LEARNED_MARGIN:g} points of its floor: " \
           "chance, or the length-only rate)"
    unknown = [k for k in learned if stops[k]["early"] is None]
    if not learned or unknown:
        what = "no PE learned its task" if not learned else \
            "runs without early stopping: " + ", ".join(f"{r} ({t})" for t, r in unknown)
        return Criterion("(a) plateau", rule, what, None)
    def seeds(key: str) -> list[str]:
        return [f"{r} ({t}) seed{'s' if len(stops[(t, r)][key]) > 1 else ''} "
                + ", ".join(str(s) for s in stops[(t, r)][key])
                for t, r in learned if stops[(t, r)][key]]
    missed, diverged = seeds("at_max"), seeds("diverged")
    unlearned = [f"{r} ({t}) seed{'s' if len(ss) > 1 else ''} " + ", ".join(str(s) for s in ss)
                 for t, r in learned if (ss := _at_floor(runs, t, r))]
    n = sum(stops[k]["runs"] for k in learned)
    early = sum(stops[k]["early"] for k in learned)
    measured = f"{early} of {n} runs of learned PEs stopped early" + \
        (f"; {fixed} at a fixed budget" if fixed else "") + \
        (f"; at the maximum{' (still learning)' if fixed else ''}: {'; '.join(missed)}"
         if missed else "") + \
        (f"; diverged: {'; '.join(diverged)}" if diverged else "") + \
        (f"; stopped before learning: {'; '.join(unlearned)}" if unlearned else "")
    return Criterion("(a) plateau", rule, measured, not (missed or diverged or unlearned))


def _at_floor(runs: Runs, task: str, role: str) -> list[int]:
    """Seeds of a learned PE whose own accuracy is within LEARNED_MARGIN points of its floor."""
    floor = runs.floor(task, role)
    if floor is None:
        return []
    return [s for s in sorted(runs.by[(task, role)])
            if runs.acc(task, role, s) < floor + LEARNED_MARGIN]


def _means(runs: Runs, task: str) -> dict[str, float]:
    return {r: _mean_acc(runs, task, r) for r in sorted(r for t, r in runs.by if t == task)}


def _best(name: str, task: str, runs: Runs, floor: float) -> Criterion:
    rule = f"the best PE's mean test accuracy >= {floor:g}%"
    means = _means(runs, task)
    if not means:
        return Criterion(name, rule, f"no {task} runs", None)
    best = max(means, key=lambda r: means[r])
    return Criterion(name, rule, f"best {best} {means[best]:.1f}%", means[best] >= floor)


def _ceiling(name: str, task: str, runs: Runs) -> Criterion:
    means = _means(runs, task)
    at = runs.ceiling_rule(task, means) if means else \
        f"within {CEILING_MARGIN:g} points of the task's Bayes ceiling"
    rule = f"no PE's mean {at} (the ceiling: an ordering of two PEs there is reported as " \
           "`ceiling` by the verdicts, not decided)"
    if not means:
        return Criterion(name, rule, f"no {task} runs", None)
    top = [r for r in means if means[r] >= runs.ceiling_threshold(task, r)]
    measured = "at the ceiling: " + (", ".join(f"{r} {means[r]:.1f}%" for r in top)
                                     if top else "none")
    return Criterion(name, rule, measured, not top)
