"""The exact sign-flip test beside each interval (posenc.verdicts.exact): its p-values against a
reference loop over every sign pattern, its smallest p at 6 seeds, and its agreement with a
part's decision, a conjunction's included."""

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from posenc.verdicts.conjunction import conjunction
from posenc.verdicts.exact import exact_check, sign_flip_p
from posenc.verdicts.verdict import judge


def reference(values, threshold, predicted):
    """Every sign pattern by a plain loop: the share of patterns whose mean deviation is at least
    (p_predicted) / at most (p_other) the observed one, on the predicted side."""
    x = [(v - threshold) * (1 if predicted == "above" else -1) for v in values]
    observed = sum(x) / len(x)
    means = [sum(g * v for g, v in zip(signs, x)) / len(x)
             for signs in itertools.product((1, -1), repeat=len(x))]
    tol = 1e-12 * max(max(abs(v) for v in x), 1.0)
    return (sum(m >= observed - tol for m in means) / len(means),
            sum(m <= observed + tol for m in means) / len(means))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=8),
       st.floats(-5, 5, allow_nan=False), st.sampled_from(["above", "below"]))
def test_sign_flip_p_matches_the_loop_over_every_pattern(values, threshold, predicted):
    out = sign_flip_p(values, threshold, predicted)
    assert out["exact"] and out["patterns"] == 2 ** len(values)
    p_pred, p_other = reference(values, threshold, predicted)
    # both are counts over 2^n patterns: exact fractions, equal up to float rounding of the means
    assert out["p_predicted"] == pytest.approx(p_pred, abs=1e-12)
    assert out["p_other"] == pytest.approx(p_other, abs=1e-12)
    assert out["p_predicted"] >= 2.0 ** -len(values) and out["p_other"] >= 2.0 ** -len(values)


def test_six_seeds_reach_2_5_percent_only_when_every_seed_is_on_the_side():
    every = sign_flip_p([3.0, 5.0, 4.0, 6.0, 2.0, 7.0])
    assert every["p_predicted"] == pytest.approx(1 / 64) and every["p_other"] == 1.0
    # five of six on the side, the sixth small: 2/64, above the one-sided 2.5%
    five = sign_flip_p([7.8, 9.0, 8.5, 10.1, 9.3, -0.6])
    assert five["p_predicted"] == pytest.approx(2 / 64)
    # the t-interval decides this one (a 95% interval above 0), the exact test does not
    part = judge([7.8, 9.0, 8.5, 10.1, 9.3, -0.6])
    assert part["verdict"] == "confirmed"
    assert exact_check(part) == {"p": pytest.approx(2 / 64), "alpha": pytest.approx(0.025),
                                 "agrees": False}
    below = judge([-3.0, -5.0, -4.0, -6.0, -2.0, -7.0])
    assert below["verdict"] == "against" and exact_check(below)["agrees"]
    assert exact_check(below)["p"] == pytest.approx(1 / 64)


def test_many_seeds_use_drawn_patterns_and_stay_valid():
    out = sign_flip_p([1.0 + 0.1 * i for i in range(12)])
    assert not out["exact"] and out["patterns"] == 2000
    assert out["p_predicted"] == pytest.approx(1 / 2000)  # only the identity reaches it


def test_no_exact_check_for_an_undecided_part():
    assert exact_check(judge([1.0, -1.0, 0.5])) is None
    assert exact_check({"verdict": "ceiling"}) is None
    assert exact_check({"verdict": "confirmed"}) is None  # no sign-flip recorded


def test_a_conjunction_is_checked_at_the_level_its_interval_used():
    """Decided against by one of two conditions at the Bonferroni level 1 - 0.05/2: the exact test
    must reach 1.25%, which 6 seeds cannot (their smallest p is 1/64 = 1.6%); 8 seeds can."""
    def cond(name, values, threshold, predicted):
        return {"part": name, **judge(values, threshold, predicted), "seeds": list(range(len(values)))}
    six = conjunction("large and small", [
        cond("large", [45.0, 40.0, 50.0, 42.0, 48.0, 44.0], 30.0, "above"),
        cond("small", [30.0, 28.0, 33.0, 31.0, 29.0, 32.0], 5.0, "below")])
    assert six["verdict"] == "against"
    check = exact_check(six)
    assert check["alpha"] == pytest.approx(0.0125) and check["p"] == pytest.approx(1 / 64)
    assert not check["agrees"]
    eight = conjunction("large and small", [
        cond("large", [45.0, 40.0, 50.0, 42.0, 48.0, 44.0, 41.0, 47.0], 30.0, "above"),
        cond("small", [30.0, 28.0, 33.0, 31.0, 29.0, 32.0, 30.0, 27.0], 5.0, "below")])
    assert exact_check(eight)["agrees"] and exact_check(eight)["p"] == pytest.approx(1 / 256)
    # a confirmation needs every condition: the largest of their p-values
    both = conjunction("large and small", [
        cond("large", [45.0, 40.0, 50.0, 42.0, 48.0, 44.0], 30.0, "above"),
        cond("small", [1.0, 2.0, 0.5, 1.5, 2.5, 1.2], 5.0, "below")])
    assert both["verdict"] == "confirmed"
    assert exact_check(both) == {"p": pytest.approx(1 / 64), "alpha": pytest.approx(0.025),
                                 "agrees": True}
