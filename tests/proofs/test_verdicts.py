"""Seed-level intervals and verdict words for empirical claims."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from scipy import stats

from posenc.proofs.verdicts import Verdict, binomial_se, combine, decide, t_interval

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
    assert decide(t_interval([-30.0, -32.0])) == "refuted"
    assert decide(t_interval([30.0, -5.0])) == "inconclusive"
    assert decide(t_interval([30.0])) == "inconclusive"  # one seed never decides
    assert decide(t_interval([2.0, 3.0]), threshold=-5.0) == "confirmed"
    assert combine(["confirmed", "confirmed"]) == "confirmed"
    assert combine(["confirmed", "inconclusive"]) == "inconclusive"
    assert combine(["confirmed", "refuted"]) == "refuted"
    with pytest.raises(ValueError):
        Verdict("x", "s", "st", "p", "m", "maybe", 2)


def test_binomial_se():
    assert math.isclose(binomial_se(50.0, 100), 5.0)
    assert binomial_se(100.0, 10) == 0.0
