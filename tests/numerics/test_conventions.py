"""Slopes, buckets and frequencies: published values and exact-arithmetic references."""

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from posenc.encodings import MLA, RoPE
from posenc.errors import PosencError
from posenc.numerics import conventions as cv

# Press et al. (2022), reference get_slopes: H = 8 gives 2^-1 ... 2^-8.
PRESS_8 = [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625]
# H = 12: the 8-head schedule followed by get_slopes(16)[0::2][:4] = 2^-0.5, 2^-1.5, 2^-2.5,
# 2^-3.5 (the reference concatenates; it does not interleave).
PRESS_12 = PRESS_8 + [0.7071067811865476, 0.3535533905932738, 0.1767766952966369,
                      0.08838834764831845]


def test_press_slopes_equal_the_published_schedule():
    assert np.allclose(cv.alibi_slopes(8, "press"), PRESS_8, rtol=1e-15, atol=0)
    assert np.allclose(cv.alibi_slopes(12, "press"), PRESS_12, rtol=1e-15, atol=0)


def reference_get_slopes(n):
    """The reference implementation from the ALiBi repository, transcribed."""
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio ** i for i in range(n)]
    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return get_slopes_power_of_2(closest) + reference_get_slopes(2 * closest)[0::2][:n - closest]


@given(st.integers(1, 200))
def test_press_slopes_match_reference_get_slopes_for_any_head_count(h):
    assert np.allclose(cv.alibi_slopes(h, "press"), reference_get_slopes(h), rtol=1e-12, atol=0)


@given(st.integers(1, 64))
def test_exp_slopes(h):
    assert np.allclose(cv.alibi_slopes(h, "exp"), [math.exp(-i / h) for i in range(1, h + 1)])


def exact_bucket(rel, num_buckets, max_distance):
    """T5 bucket with boundaries decided in integer arithmetic."""
    half = num_buckets // 2
    me = half // 2
    base = half if rel > 0 else 0
    a = abs(rel)
    if a < me:
        return base + a
    if max_distance <= me:
        return base + half - 1
    span = half - me
    j = 0   # largest j with (a/me)^span >= (md/me)^j
    while j + 1 <= span and a ** span * me ** (j + 1) >= max_distance ** (j + 1) * me ** span:
        j += 1
    return base + min(me + j, half - 1)


@given(st.integers(2, 40).map(lambda x: 2 * x), st.integers(1, 300), st.integers(-700, 700))
def test_t5_bucket_equals_exact_arithmetic(num_buckets, max_distance, rel):
    got = int(cv.t5_bucket(np.array([rel]), num_buckets, max_distance)[0])
    assert got == exact_bucket(rel, num_buckets, max_distance)


def test_t5_default_buckets_known_values():
    rel = np.array([0, -1, -7, -8, -11, -12, -16, -128, -1000, 1, 7, 16, 1000])
    assert cv.t5_bucket(rel, 32, 128).tolist() == [0, 1, 7, 8, 8, 9, 10, 15, 15, 17, 23, 26, 31]


@given(st.floats(0.01, 1.0), st.integers(1, 130), st.floats(0.01, 1.0))
@example(0.9999999999999999, 2, 1.0)   # one ulp below a pair boundary (found by Hypothesis)
def test_rope_frequencies_agree_with_catalogue_helpers(fraction, head_dim, keep):
    spec = RoPE(fraction=fraction, keep=keep)
    try:
        r_cat = spec.rotary_dims(head_dim)
    except PosencError:
        with pytest.raises(PosencError):
            cv.rope_frequencies(spec, head_dim)
        return
    theta = cv.rope_frequencies(spec, head_dim)
    assert 2 * theta.size == r_cat
    assert np.count_nonzero(theta) == spec.kept_planes(head_dim)
    m = np.arange(theta.size)
    kept = theta != 0
    assert np.allclose(theta[kept], spec.base ** (-2.0 * m[kept] / r_cat))
    assert np.all(np.flatnonzero(kept) == np.arange(kept.sum()))   # the highest frequencies kept


@given(st.integers(1, 300), st.one_of(st.none(), st.integers(1, 64).map(lambda x: 2 * x)))
def test_mla_rope_dim_agrees_with_catalogue(head_dim, rope_dim):
    spec = MLA(rope_dim=rope_dim)
    assert cv.mla_rope_dim(spec, head_dim) == spec.resolved_rope_dim(head_dim)


def test_sinusoidal_table_matches_the_formula_loop():
    n, width, base = 9, 10, 10000.0
    table = cv.sinusoidal_table(n, width, base)
    for p in range(n):
        for m in range(width // 2):
            assert table[p, 2 * m] == pytest.approx(math.sin(p / base ** (2 * m / width)), abs=1e-15)
            assert table[p, 2 * m + 1] == pytest.approx(math.cos(p / base ** (2 * m / width)),
                                                        abs=1e-15)
    with pytest.raises(PosencError, match="even model width"):
        cv.sinusoidal_table(4, 7)
