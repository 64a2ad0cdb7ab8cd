"""The trained criterion (posenc.verdicts.trained) on constructed runs: each part can
come out met and not met, and says what it measured."""

import pytest
from synthetic_runs import result

from posenc.empirical.pipeline.experiment_result import ExperimentResult
from posenc.verdicts.trained import BEST_COUNT, BEST_DISTANCE, FIXED_BUDGET_RISE, \
    FIXED_BUDGET_SPAN, end_rise, plateaued, stopping_table, trained_criterion

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
    assert [c.met for c in crit.values()] == [True, True, True, True, True]
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


def fixed_runs(rises, patience=15, max_epochs=15, metrics=True):
    """Learned distance RoPE runs at a fixed budget (patience >= the maximum: the rule cannot
    fire), one per rise (points) of the validation accuracy over its last two epochs."""
    out = []
    for s, rise in enumerate(rises):
        data = result("distance", "rope", s, 0.9, chance=CHANCE,
                      stop=(max_epochs, max_epochs, max_epochs, patience, 0.8))
        vals = [0.5] * (max_epochs - 3) + [0.8 - rise / 100, 0.8 - rise / 200, 0.8]
        if metrics:
            data["metrics"] = [{"epoch": e + 1, "val_acc": v} for e, v in enumerate(vals)]
        out.append(ExperimentResult.from_stored(data))
    return out


def test_at_a_fixed_budget_the_plateau_is_read_from_the_end_of_the_validation_curve():
    """paper-small trains every epoch (patience of the maximum): its rule never fires, so the
    plateau is val(E) - val(E-2) < 2 points -- a run still rising at its end is at the maximum,
    one that is flat is not, whatever its rule's ``fired`` says."""
    assert FIXED_BUDGET_RISE == 2.0 and FIXED_BUDGET_SPAN == 2
    res = fixed_runs([0.5, 1.9, 2.1, 7.6])
    assert [end_rise(r.metrics) for r in res] == pytest.approx([0.5, 1.9, 2.1, 7.6])
    row = stopping_table(res)[("distance", "rope")]
    assert row["at_max"] == [2, 3] and row["fixed"] == 4 and row["early"] == 0
    crit = by_name(res)["(a) plateau"]
    assert crit.met is False
    assert crit.measured == "0 of 4 runs of learned PEs stopped early; 4 at a fixed budget; " \
                            "at the maximum (still learning): rope (distance) seeds 2, 3"
    assert "at a fixed budget -- a patience of at least the maximum epochs, the rule fires " \
           "only on a perfect validation accuracy -- its validation accuracy rose less than 2 " \
           "points over its last 2 epochs" in crit.rule
    flat = by_name(fixed_runs([0.5, 1.9, -3.0]))["(a) plateau"]
    assert flat.met is True and "at the maximum" not in flat.measured


def test_a_rise_of_exactly_two_points_is_still_learning_whatever_the_float_rounding():
    """The rule is val(E) - val(E-2) >= 2 points: at 1,400 validation examples a rise of exactly
    28 examples is 2 points, for every count it starts from -- including the pairs whose float
    difference falls a hair under 2 -- while 27 examples (1.93 points) is a plateau."""
    n, k = 1400, 28
    assert any(100 * (a / n - (a - k) / n) < 2.0 for a in range(k, n + 1))  # the trap is real
    for a in range(k, n + 1):
        ex = [{"epoch": 1, "val_acc": (a - k) / n}, {"epoch": 2, "val_acc": (a - k + 9) / n},
              {"epoch": 3, "val_acc": a / n}]
        assert end_rise(ex) == 2.0
        stop = {"best_epoch": 3, "stopped_epoch": 3, "patience": 3, "max_epochs": 3,
                "best_val_acc": a / n, "fired": False}
        assert not plateaued(stop, ex), a
        ex[-1]["val_acc"] = (a - 1) / n
        assert plateaued(stop, ex), a


def test_a_fixed_budget_run_without_its_history_is_not_a_plateau():
    """Without the per-epoch metrics the end of the curve cannot be shown flat: at the maximum."""
    res = fixed_runs([0.5], metrics=False)
    assert end_rise(res[0].metrics) is None
    assert stopping_table(res)[("distance", "rope")]["at_max"] == [0]
    assert by_name(res)["(a) plateau"].met is False


def test_a_patience_below_the_maximum_keeps_the_rule_whatever_the_curve():
    """Early stopping that could fire (patience 8 of 15) and did not: at the maximum even when
    the curve is flat at the end -- the end-of-curve reading is for fixed budgets only -- and the
    rule's words are the early-stopping ones."""
    res = fixed_runs([0.5], patience=8)
    assert stopping_table(res)[("distance", "rope")]["at_max"] == [0]
    crit = by_name(res)["(a) plateau"]
    assert crit.met is False and "fixed budget" not in crit.rule + crit.measured


def test_count_at_the_ceiling_fails_c_prime_and_reads_the_count_task_only():
    """(c'): no count PE's mean at 98% or more (count's Bayes ceiling is 100%); a distance PE
    there leaves it met, and a count PE at 97.9% does not fail it."""
    assert by_name(runs(GOOD))["(c') count ceiling"].met is True
    top = by_name(runs({**GOOD, ("count", "mla"): [0.985, 0.99, 0.98]}))["(c') count ceiling"]
    assert top.met is False and top.measured == "at the ceiling: mla 98.5%"
    under = by_name(runs({**GOOD, ("count", "mla"): [0.979] * 3}))["(c') count ceiling"]
    assert under.met is True
    assert by_name(runs({**GOOD, ("distance", "nope"): [0.99] * 3}))["(c') count ceiling"].met
