"""Exact catalogue conventions against independent float implementations."""

import math

import pytest
import sympy as sp
from hypothesis import given, strategies as st

from posenc.errors import PosencError
from posenc.theory import conventions as cv
from theory_reference import alibi_slopes, t5_bucket


@pytest.mark.parametrize("heads", [1, 2, 3, 4, 5, 6, 8, 12, 16])
def test_alibi_press_slopes_match_the_alibi_repository(heads):
    exact = [float(s) for s in cv.alibi_slopes(heads, "press")]
    assert exact == pytest.approx(alibi_slopes(heads), rel=1e-12)


def test_alibi_exp_slopes():
    assert [float(s) for s in cv.alibi_slopes(4, "exp")] == pytest.approx(
        [math.exp(-h / 4) for h in range(1, 5)], rel=1e-15)


def _is_tie(rel, nb, md):
    """|rel| where the float formula's log ratio is an exact integer (float floor may differ)."""
    n, e = abs(rel), nb // 4
    if n < e:
        return False
    x = math.log(n / e) / math.log(md / e) * (nb // 2 - e)
    return abs(x - round(x)) < 1e-9


@given(st.integers(-300, 300), st.sampled_from([(32, 128), (8, 16), (16, 50), (4, 7)]))
def test_t5_exact_bucket_matches_float_formula_off_ties(rel, cfg):
    nb, md = cfg
    if not _is_tie(rel, nb, md):
        assert cv.t5_bucket(rel, nb, md) == t5_bucket(rel, nb, md)


@given(st.integers(-200, 200))
def test_t5_formula_matches_exact_bucket(rel):
    k = sp.Symbol("k", integer=True)
    value = cv.t5_bucket_formula(k, 32, 128).subs(k, rel)
    assert int(value) == cv.t5_bucket(rel, 32, 128)


def test_t5_ties_are_resolved_exactly():
    # |k| = 16: log(16/8)/log(128/8)*8 = 2 exactly -> bucket 8 + 2 (+16 for k > 0)
    assert cv.t5_bucket(16, 32, 128) == 26 and cv.t5_bucket(-16, 32, 128) == 10


def test_bad_t5_configuration():
    with pytest.raises(PosencError, match="max_distance"):
        cv.t5_check(32, 8)


def test_sinusoidal_and_rope_frequencies_are_exact():
    assert cv.sinusoidal_frequencies(4, 10000.0) == [1, sp.Rational(1, 100)]
    with pytest.raises(PosencError, match="even"):
        cv.sinusoidal_frequencies(3, 10000.0)
    from posenc.encodings import RoPE
    planes = cv.rope_planes(RoPE(pairing="half", keep=0.5), 8)
    assert [(a, b) for a, b, _ in planes] == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert [th for _, _, th in planes] == [1, sp.Rational(1, 10), 0, 0]
