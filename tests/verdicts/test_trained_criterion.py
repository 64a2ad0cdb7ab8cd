"""The trained criterion (posenc.verdicts.trained) on constructed runs: each part can
come out met and not met, and says what it measured."""

from synthetic_runs import result

from posenc.empirical.pipeline.experiment_result import ExperimentResult
from posenc.verdicts.trained import BEST_COUNT, BEST_DISTANCE, stopping_table, \
    trained_criterion

CHANCE = 0.05


def runs(accs, stops=None, length_rate=None, bayes_ceiling=None):
    """(task, role) -> accuracies per seed; stops: (task, role) -> (stopped, best, max) per seed
    (default: every run stopped early at epoch 6 of 20, keeping epoch 4)."""
    out = []
    for (task, role), vals in accs.items():
        for s, a in enumerate(vals):
            stop = (stops or {}).get((task, role), [(6, 4, 20)] * len(vals))[s]
            out.append(ExperimentResult.from_stored(result(
                task, role, s, a, chance=CHANCE, stop=stop,
                length_rate=(length_rate or {}).get(task),
                bayes_ceiling=(bayes_ceiling or {}).get(task))))
    return out


GOOD = {("distance", "rope"): [0.95, 0.93, 0.94], ("distance", "nope"): [0.06, 0.05, 0.06],
        ("count", "nope"): [0.85, 0.82, 0.84], ("count", "rope"): [0.6, 0.6, 0.62]}


def by_name(results):
    return {c.name: c for c in trained_criterion(results)}


def test_every_part_met():
    crit = by_name(runs(GOOD))
    assert [c.met for c in crit.values()] == [True, True, True, True]
    assert crit["(a) plateau"].measured == "9 of 9 runs of learned PEs stopped early"
    assert crit["(b) distance"].measured == "best rope 94.0%"
    assert crit["(b') ceiling"].measured == "at the ceiling: none"


def test_a_learned_pe_at_the_maximum_fails_the_plateau_part():
    stops = {("count", "rope"): [(6, 4, 20), (20, 20, 20), (20, 19, 20)]}
    crit = by_name(runs(GOOD, stops))["(a) plateau"]
    assert crit.met is False
    assert crit.measured.endswith("at the maximum: rope (count) seeds 1, 2")


def test_a_plateau_reached_exactly_at_the_maximum_is_a_plateau():
    """The stopping rule fired at the last epoch: patience epochs after the kept one, or a
    perfect validation accuracy -- the run finished learning, it did not run out of epochs."""
    stops = {("count", "rope"): [(6, 4, 20), (20, 17, 20, 3), (20, 20, 20, 3, 1.0)]}
    results = runs(GOOD, stops)
    crit = by_name(results)["(a) plateau"]
    assert crit.met is True and "at the maximum" not in crit.measured
    row = stopping_table(results)[("count", "rope")]
    assert row["at_max"] == [] and row["early"] == 1


def test_a_seed_stopped_at_chance_fails_the_plateau_part():
    """The stopping rule fired on the slow start of one seed (validation noise) while the PE's
    other seeds learned: that model did not finish learning, whatever the rule said."""
    accs = {**GOOD, ("distance", "rope"): [0.95, CHANCE + 0.03, 0.94]}
    crit = by_name(runs(accs))["(a) plateau"]
    assert crit.met is False
    assert crit.measured.endswith("stopped before learning: rope (distance) seed 1")
    # just outside the margin it learned something: not flagged
    accs = {**GOOD, ("distance", "rope"): [0.95, CHANCE + 0.06, 0.94]}
    assert by_name(runs(accs))["(a) plateau"].met is True


def test_a_seed_stopped_at_the_length_only_level_fails_the_plateau_part():
    """On the distance task a run stuck before its transition sits where the example's length
    alone puts it (the quick size: 14.7%), far above chance: the floor is the larger of the two,
    so that seed is flagged -- a floor at chance alone would let it pass."""
    accs = {**GOOD, ("distance", "rope"): [0.95, 0.12, 0.94]}
    assert by_name(runs(accs))["(a) plateau"].met is True  # chance (5%) + 5 points < 12%
    crit = by_name(runs(accs, length_rate={"distance": 0.147}))["(a) plateau"]
    assert crit.met is False
    assert crit.measured.endswith("stopped before learning: rope (distance) seed 1")
    # a seed that learned a little beyond the length-only rate is not flagged
    accs = {**GOOD, ("distance", "rope"): [0.95, 0.147 + 0.06, 0.94]}
    assert by_name(runs(accs, length_rate={"distance": 0.147}))["(a) plateau"].met is True


def test_a_pe_that_did_not_learn_may_run_to_the_maximum():
    stops = {("distance", "nope"): [(20, 3, 20)] * 3}
    assert by_name(runs(GOOD, stops))["(a) plateau"].met is True


def test_runs_without_early_stopping_cannot_tell():
    res = [ExperimentResult.from_stored(result("distance", "rope", s, 0.95, chance=CHANCE))
           for s in range(2)]
    crit = by_name(res)
    assert crit["(a) plateau"].met is None and "without early stopping" in crit["(a) plateau"].measured
    assert crit["(c) count"].met is None and stopping_table(res)[("distance", "rope")]["early"] is None


def test_distance_below_the_floor_fails_b_and_at_the_ceiling_fails_b_prime():
    low = {**GOOD, ("distance", "rope"): [BEST_DISTANCE / 100 - 0.02] * 3}
    assert by_name(runs(low))["(b) distance"].met is False
    top = {**GOOD, ("distance", "nope"): [0.99, 0.985, 0.99]}
    crit = by_name(runs(top))
    assert crit["(b) distance"].met is True and crit["(b) distance"].measured == "best nope 98.8%"
    assert crit["(b') ceiling"].met is False
    assert crit["(b') ceiling"].measured == "at the ceiling: nope 98.8%"
    # the ceiling part reads the distance task only
    assert by_name(runs({**GOOD, ("count", "nope"): [0.99] * 3}))["(b') ceiling"].met is True


def test_count_below_the_floor_fails():
    low = {**GOOD, ("count", "nope"): [BEST_COUNT / 100 - 0.01] * 3}
    crit = by_name(runs(low))["(c) count"]
    assert crit.met is False and crit.measured == "best nope 79.0%"


def test_stopping_table_counts_and_spans():
    stops = {("count", "rope"): [(6, 4, 20), (20, 20, 20), (9, 6, 20)]}
    row = stopping_table(runs(GOOD, stops))[("count", "rope")]
    assert row["early"] == 2 and row["at_max"] == [1] and row["stopped"] == [6, 20, 9]
    assert row["best"] == [4, 20, 6] and row["max_epochs"] == [20]


def test_b_prime_reads_the_ceiling_relative_to_the_tasks_bayes_ceiling():
    """A distance PE at 96% on a paper-sampler task (Bayes ceiling 97.5%) is at its ceiling."""
    top = {**GOOD, ("distance", "rope"): [0.96, 0.961, 0.959]}
    assert by_name(runs(top))["(b') ceiling"].met is True  # clean: under 98%
    crit = by_name(runs(top, bayes_ceiling={"distance": 0.975}))["(b') ceiling"]
    assert crit.met is False and crit.measured == "at the ceiling: rope 96.0%"
    assert crit.rule.startswith("no PE's mean >= 95.5% (2 points below the task's Bayes ceiling "
                                "as its runs recorded it, 97.5%)")
    assert by_name(runs(GOOD))["(b') ceiling"].rule.startswith("no PE's mean >= 98% (the ceiling")
