"""Seed-level intervals and verdict words for empirical claims."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from scipy import stats

from posenc.verdicts.verdict import Verdict, binomial_se, combine, decide, t_interval

seeds = st.lists(st.floats(-100, 100, allow_nan=False), min_size=2, max_size=12)


@given(seeds)
def test_t_interval_matches_scipy(values):
    iv = t_interval(values)
    arr = np.array(values)
    sem = stats.sem(arr)
    assert math.isclose(iv.estimate, arr.mean(), rel_tol=1e-12, abs_tol=1e-9)
    if sem > 0:
        lo, hi = stats.t.interval(0.95, len(arr) - 1, loc=arr.mean(), scale=sem)
        # float64 sums of <= 12 values of size <= 100: agreement to ~1e-9 absolute
        assert math.isclose(iv.low, lo, abs_tol=1e-8) and math.isclose(iv.high, hi, abs_tol=1e-8)
    assert iv.low <= iv.estimate <= iv.high


@given(seeds, st.floats(-50, 50))
def test_verdict_is_antisymmetric(values, tau):
    iv = t_interval(values)
    # Endpoints within float64 rounding of tau (sums of <= 12 values of size <= 100: ~1e-13)
    # may fall either side after reflection; the property is about clear-cut intervals.
    assume(abs(iv.low - tau) > 1e-9 and abs(iv.high - tau) > 1e-9)
    up = decide(iv, tau, "above")
    down = decide(t_interval([2 * tau - v for v in values]), tau, "below")
    assert up == down


def test_verdict_words():
    assert decide(t_interval([30.0, 32.0])) == "confirmed"
    assert decide(t_interval([-30.0, -32.0])) == "against"
    assert decide(t_interval([30.0, -5.0])) == "inconclusive"
    assert decide(t_interval([30.0])) == "inconclusive"  # one seed never decides
    assert decide(t_interval([2.0, 3.0]), threshold=-5.0) == "confirmed"
    assert combine(["confirmed", "confirmed"]) == "confirmed"
    assert combine(["confirmed", "inconclusive"]) == "inconclusive"
    assert combine(["confirmed", "against"]) == "against"
    with pytest.raises(ValueError):
        Verdict("x", "s", "st", "p", "m", "maybe", 2)


def test_binomial_se():
    assert math.isclose(binomial_se(50.0, 100), 5.0)
    assert binomial_se(100.0, 10) == 0.0


# ------------------------------------------------ how sure a verdict is; bounded intervals; ceiling

from posenc.verdicts.verdict import (CEILING_MARGIN, at_ceiling, bounded_interval,  # noqa: E402
                                     ceiling_rule, ceiling_threshold, judge)

accs = st.lists(st.floats(0, 100, allow_nan=False), min_size=2, max_size=12)


@given(seeds, st.floats(-50, 50), st.sampled_from(["above", "below"]))
def test_judge_decides_exactly_beyond_its_resolution(values, tau, predicted):
    part = judge(values, tau, predicted)
    iv = t_interval(values)
    assert part["n"] == len(values) and part["interval"] == [iv.low, iv.high]
    assert part["resolution"] == pytest.approx((iv.high - iv.low) / 2, rel=1e-12, abs=1e-12)
    # float rounding of the mean and half-width near the boundary: the property is for clear cases
    assume(abs(abs(part["estimate"] - tau) - part["resolution"]) > 1e-9)
    decided = part["verdict"] != "inconclusive"
    assert decided == (abs(part["estimate"] - tau) > part["resolution"])
    side = [v > tau for v in values] if predicted == "above" else [v < tau for v in values]
    assert part["agree"] == sum(side)


def test_sign_count_and_resolution_are_shown():
    from posenc.verdicts.verdict import verdict_from_parts
    part = {"part": "a - b", **judge([3.0, 1.0, -1.0, 2.0, 4.0, 5.0])}
    v = verdict_from_parts("X", "s", "st", "p", [part])
    assert part["agree"] == 5 and "a - b: 5 of 6 seeds > 0" == v.agreement
    half = stats.t.ppf(0.975, 5) * np.std([3, 1, -1, 2, 4, 5], ddof=1) / math.sqrt(6)
    assert v.resolution == f"a - b: ±{half:.1f}"
    assert judge([1.0])["resolution"] is None


@given(accs)
def test_bounded_interval_stays_in_range_and_contains_the_mean(values):
    iv = bounded_interval(values, 0.0, 100.0)
    assert 0.0 <= iv.low <= iv.estimate <= iv.high <= 100.0
    assert iv.estimate == pytest.approx(sum(values) / len(values), abs=1e-9)


@given(accs)
def test_bounded_interval_is_mirrored(values):
    iv = bounded_interval(values, 0.0, 100.0)
    mirror = bounded_interval([100.0 - v for v in values], 0.0, 100.0)
    # one logit evaluation and a rescaling per endpoint in float64: ~1e-12 relative
    assert mirror.low == pytest.approx(100.0 - iv.high, abs=1e-7)
    assert mirror.high == pytest.approx(100.0 - iv.low, abs=1e-7)


@given(st.floats(20, 80), st.floats(0.1, 10), st.integers(1, 5), st.integers(1, 5))
def test_bounded_interval_shrinks_with_more_seeds_at_the_same_spread(mean, sd, k1, extra):
    def sample(k):  # 2k values with this mean and sample standard deviation
        d = sd * math.sqrt((2 * k - 1) / (2 * k))
        return [mean - d, mean + d] * k
    a, b = bounded_interval(sample(k1)), bounded_interval(sample(k1 + extra))
    assert np.std(sample(k1), ddof=1) == pytest.approx(np.std(sample(k1 + extra), ddof=1))
    assert b.high - b.low < a.high - a.low


def test_bounded_interval_of_the_reported_case_and_at_a_bound():
    # the accuracy table used to print ALiBi at 91.0 [20.7, 161.3] (a t interval over two seeds)
    assert t_interval([96.5, 85.5]).high > 100
    iv = bounded_interval([96.5, 85.5])
    assert 0 < iv.low < 85.5 and 96.5 < iv.high < 100
    # a small spread far from the bounds: close to the plain t interval
    t, b = t_interval([50.0, 50.4, 49.8, 50.1]), bounded_interval([50.0, 50.4, 49.8, 50.1])
    assert b.low == pytest.approx(t.low, abs=0.01) and b.high == pytest.approx(t.high, abs=0.01)
    assert bounded_interval([100.0, 100.0, 100.0]) == t_interval([100.0, 100.0, 100.0])


def test_ceiling_words():
    assert CEILING_MARGIN == 2.0 and ceiling_threshold() == ceiling_threshold(100.0) == 98.0
    assert at_ceiling({"a": [99.0, 98.0], "b": [100.0, 100.0]})
    assert not at_ceiling({"a": [99.0, 96.9], "b": [100.0, 100.0]})  # mean 97.95 < 98
    assert combine(["ceiling", "confirmed"]) == "ceiling"
    assert combine(["ceiling", "inconclusive"]) == "inconclusive"
    assert combine(["ceiling", "against"]) == "against"
    Verdict("x", "s", "st", "p", "m", "ceiling", 2)


@given(st.lists(st.floats(-100, 100, allow_nan=False), min_size=2, max_size=6),
       st.floats(-99, 99), st.sampled_from(["above", "below"]))
def test_a_bounded_statistic_shows_its_interval_inside_the_range_with_the_same_verdict(
        values, tau, predicted):
    free, bounded = judge(values, tau, predicted), judge(values, tau, predicted, bounds=(-100, 100))
    assert -100 <= bounded["interval"][0] <= bounded["estimate"] <= bounded["interval"][1] <= 100
    assert bounded["verdict"] == free["verdict"] and bounded["resolution"] == free["resolution"]
    # two seeds far apart: the t interval itself leaves the range, the shown one does not
    wide = judge([90.0, -80.0], bounds=(-100, 100))
    assert judge([90.0, -80.0])["interval"][1] > 100 and wide["interval"] == [-100, 100]


def test_the_ceiling_is_relative_to_the_tasks_bayes_ceiling():
    """98 on a task whose best possible accuracy is 100%, 2 points below it elsewhere; each side
    of the comparison at its own threshold; the printed rule names the threshold used."""
    assert ceiling_threshold(97.49) == pytest.approx(95.49)
    sides = {"a": [96.0, 96.0], "b": [95.6, 95.6]}
    assert at_ceiling(sides, {"a": 95.5, "b": 95.5}) and not at_ceiling(sides)
    assert not at_ceiling(sides, {"a": 95.5})  # b at the clean task's 98
    assert ceiling_rule(100.0) == ">= 98%"
    assert ceiling_rule(97.49) == \
        ">= 95.5% (2 points below the task's Bayes ceiling as its runs recorded it, 97.5%)"


# --- multiplicity: one primary part per claim, fixed in advance ----------------------------------

def _part(name, values, tau=0.0, predicted="above"):
    return {"part": name, **judge(values, tau, predicted)}


def test_a_claim_is_decided_by_its_primary_part_alone():
    from posenc.verdicts.verdict import SHOWN, verdict_from_parts
    clear, null = [1.0, 1.1, 0.9, 1.05], [0.3, -0.4, 0.2, -0.1]
    # the secondary part alone is significant: the claim is not confirmed
    v = verdict_from_parts("X", "s", "st", "p", [_part("secondary", clear), _part("primary", null)],
                           primary=1)
    assert v.verdict == "inconclusive" and [p["verdict"] for p in v.parts] == [SHOWN, "inconclusive"]
    assert [p["primary"] for p in v.parts] == [False, True]
    assert "secondary [shown, not judged]: +1.0" in v.measured
    # a refuting secondary part does not veto a confirmed primary (the old conjunction did)
    v = verdict_from_parts("X", "s", "st", "p", [_part("primary", clear),
                                                 _part("secondary", [-x for x in clear])],
                           primary=0)
    assert v.verdict == "confirmed" and v.seeds == 4
    # several parts without a stated primary: refused, the choice belongs to the claim
    with pytest.raises(ValueError, match="need a primary part fixed in advance"):
        verdict_from_parts("X", "s", "st", "p", [_part("a", clear), _part("b", null)])
    with pytest.raises(ValueError, match="primary part 2"):
        verdict_from_parts("X", "s", "st", "p", [_part("a", clear), _part("b", null)], primary=2)


def test_every_claim_of_a_report_has_exactly_one_judged_part():
    from synthetic_runs import result as synthetic
    from posenc.verdicts.accuracy_deposit import evaluate
    from posenc.verdicts.dynamics import evaluate_dynamics
    results = [synthetic(t, r, s, 0.5 + 0.01 * s) for t in ("distance", "count")
               for r in ("nope", "rope", "alibi", "mla") for s in range(3)]
    for v in evaluate(results) + evaluate_dynamics(results):
        assert sum(p["primary"] for p in v.parts) == 1, v.claim
        assert all(p["verdict"] == "shown" for p in v.parts if not p["primary"]), v.claim


# --- judged against run-to-run noise: the standardised mean ------------------------------------

def _reference_interval(values, level=0.95, step=2e-3):
    """Every delta on a grid (+-10 around the estimate) whose two one-sided noncentral-t tests
    keep the observed t."""
    n = len(values)
    t = math.sqrt(n) * np.mean(values) / np.std(values, ddof=1)
    alpha = (1 - level) / 2
    grid = np.arange(t / math.sqrt(n) - 10, t / math.sqrt(n) + 10, step)
    cdf = stats.nct.cdf(t, n - 1, math.sqrt(n) * grid)
    kept = grid[(cdf >= alpha) & (1 - cdf >= alpha)]
    return kept.min(), kept.max()


@pytest.mark.parametrize("values", [[-0.5, -0.49, -0.3, -0.6], [1.13, 1.0, 1.2, 1.25, 0.98, 1.1],
                                    [0.1, -0.2, 0.05, 0.3, -0.1]])
def test_standardized_interval_against_a_grid_of_tests(values):
    from posenc.verdicts.verdict import standardized_interval
    iv = standardized_interval(values)
    lo, hi = _reference_interval(values)
    assert iv.estimate == pytest.approx(np.mean(values) / np.std(values, ddof=1))
    # the grid's step (2e-3) bounds the reference's error; the root finder's is 1e-10
    assert iv.low == pytest.approx(lo, abs=2.1e-3) and iv.high == pytest.approx(hi, abs=2.1e-3)


def test_standardized_interval_covers_the_true_delta_95_percent_of_the_time():
    """Normal samples of 5 seeds with delta = -1.5: the exact interval covers it at its level
    (2000 draws: the coverage's standard error is 0.005, the tolerance 4 of them)."""
    from posenc.verdicts.verdict import standardized_interval
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(2000):
        iv = standardized_interval(list(rng.normal(-1.5 * 0.3, 0.3, size=5)))
        hits += iv.low <= -1.5 <= iv.high
    assert abs(hits / 2000 - 0.95) < 0.02


def test_judge_standardized_compares_with_the_noise_not_with_zero():
    from posenc.verdicts.verdict import judge_standardized
    # 12 seeds that shrink a little (mean -0.1) against a run-to-run sd of 0.1: different from 0
    # (a t interval excludes 0) but not by more than one run's noise
    rng = np.random.default_rng(3)
    x = rng.normal(size=12)
    values = list(-0.1 + 0.1 * (x - x.mean()) / x.std(ddof=1))
    assert judge(values, 0.0, "below")["verdict"] == "confirmed"
    part = judge_standardized(values, -1.0, "below")
    assert part["estimate"] == pytest.approx(-1.0) and part["noise"] == pytest.approx(0.1)
    assert part["verdict"] == "inconclusive"
    assert part["agree"] == sum(v < -0.1 for v in values)
    # a clear shrinkage, several sds: confirmed; growth: refuted; no spread: no noise to use
    assert judge_standardized([-0.5, -0.45, -0.55, -0.5], -1.0, "below")["verdict"] == "confirmed"
    assert judge_standardized([0.5, 0.45, 0.55, 0.5], -1.0, "below")["verdict"] == "against"
    flat = judge_standardized([0.2, 0.2, 0.2], -1.0, "below")
    assert flat["verdict"] == "inconclusive" and "no run-to-run noise" in flat["note"]
