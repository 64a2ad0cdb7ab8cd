"""The sign-flip randomisation of the early coherence (Prop. 6.1's null): the statistic as the
recorder computes it, exact validity under sign symmetry, p = 1 for balanced signals, and its
invariances."""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.empirical.analysis.dynamics import signal_grids
from posenc.empirical.analysis.sign_flip import (QMAX, coherence_max, quantile_of, quantised,
                                                 sign_flip_test, sign_patterns, window_signals)

# integer signals: every sum exact, so ties and orbit values are compared exactly
ints = st.integers(min_value=-50, max_value=50)


def signals(records=st.integers(1, 3), heads=st.integers(1, 3), examples=st.integers(1, 7)):
    return st.tuples(records, heads, examples).flatmap(
        lambda s: st.lists(ints, min_size=s[0] * s[1] * s[2], max_size=s[0] * s[1] * s[2]).map(
            lambda v: np.asarray(v, dtype=np.float64).reshape(s)))


def test_coherence_is_the_recorders():
    """C of the recorded signals is the summary's statistic: the max over heads of the window
    mean of each record's coherence grid (signal_grids)."""
    rng = np.random.default_rng(0)
    psi = rng.standard_normal((3, 2, 16, 4)) + 0.3  # (records, L, N, H)
    grids = [signal_grids(torch.as_tensor(p), probe_batches=2)["coherence"] for p in psi]
    want = np.max(np.mean(np.asarray(grids), axis=0))
    x = psi.transpose(0, 1, 3, 2).reshape(3, 8, 16)  # (R, K = L H, N)
    assert coherence_max(x)[0] == pytest.approx(want, rel=1e-6)


def test_quantised_signals_keep_signs_and_coherence_and_window_stacks_them():
    rng = np.random.default_rng(1)
    psi = rng.standard_normal((3, 32, 4))
    psi[1] = np.nan  # a layer without a positional part
    q = quantised(psi)
    assert q[1] is None and len(q[0]) == 4 and len(q[0][0]) == 32
    arr = np.asarray(q[0])
    assert np.abs(arr).max(axis=1).tolist() == [QMAX] * 4
    assert (np.sign(arr) == np.sign(psi[0].T)).all()
    x = window_signals([{"psi_q": q}, {"psi_q": q}])
    assert x.shape == (2, 8, 32)  # the two layers with a signal, 4 heads each
    exact = np.concatenate([psi[0].T, psi[2].T])[None]
    assert coherence_max(x)[0] == pytest.approx(coherence_max(exact)[0], abs=1e-3)
    assert window_signals([{"psi_q": q}, {"seed": []}]) is None


def test_patterns_enumerate_small_n_and_draw_large_n():
    pats, exact = sign_patterns(3, draws=7)
    assert exact and pats.shape == (8, 3) and (pats[0] == 1).all()
    assert {tuple(p) for p in pats} == set(itertools.product((-1.0, 1.0), repeat=3))
    pats, exact = sign_patterns(4, draws=7)
    assert not exact and pats.shape == (8, 4) and (pats[0] == 1).all()
    with pytest.raises(ValueError):
        sign_patterns(0)


@settings(max_examples=60, deadline=None)
@given(signals(), st.sampled_from([0.05, 0.1, 0.25, 0.5]))
def test_exact_under_sign_symmetry(x, alpha):
    """Under sign symmetry every sign pattern of the observed magnitudes is equally likely; over
    that orbit at most an alpha share of p-values is <= alpha, and C exceeds q95 on at most 5%
    of it -- for any magnitudes (enumerated: n <= 7)."""
    n = x.shape[-1]
    orbit = [x * np.asarray(g)[None, None, :] for g in itertools.product((-1.0, 1.0), repeat=n)]
    tests = [sign_flip_test(y) for y in orbit]
    assert all(t["exact"] and t["patterns"] == 2 ** n for t in tests)
    assert sum(t["p_value"] <= alpha for t in tests) <= alpha * 2 ** n
    assert sum(t["observed"] > t["quantile"] for t in tests) <= 0.05 * 2 ** n
    # the null depends on the magnitudes only: one quantile and mean over the orbit
    assert len({t["quantile"] for t in tests}) == 1
    assert max(t["mean"] for t in tests) - min(t["mean"] for t in tests) < 1e-12


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 20), st.data())
def test_balanced_signs_give_p_one(records, heads, pairs, data):
    """Every head's signals sum to 0 in every record (each value met by its negation): C = 0,
    no pattern gives less, p = 1 -- drawn patterns too (2 pairs x ... up to 40 examples)."""
    half = np.asarray(data.draw(st.lists(st.integers(1, 50), min_size=records * heads * pairs,
                                         max_size=records * heads * pairs)), dtype=np.float64)
    half = half.reshape(records, heads, pairs)
    x = np.concatenate([half, -half], axis=-1)
    t = sign_flip_test(x, draws=199)
    assert t["observed"] == 0.0 and t["p_value"] == 1.0
    assert t["exact"] == (2 * pairs <= 7)


@settings(max_examples=60, deadline=None)
@given(signals(examples=st.integers(1, 12)), st.data())
def test_invariant_to_a_positive_scale_per_record_and_head(x, data):
    """Coherence is scale-free per (record, head), so the test is too (powers of two: exact)."""
    scale = 2.0 ** np.asarray(data.draw(st.lists(st.integers(-8, 8), min_size=x.shape[0] * x.shape[1],
                                                 max_size=x.shape[0] * x.shape[1])))
    y = x * scale.reshape(x.shape[0], x.shape[1], 1)
    a, b = sign_flip_test(x, draws=99), sign_flip_test(y, draws=99)
    for key in ("observed", "quantile", "mean", "p_value"):
        assert a[key] == pytest.approx(b[key], abs=1e-12)


def test_drawn_patterns_are_near_uniform_under_the_null():
    """Signs drawn fairly, magnitudes heavy-tailed (the case the equal-magnitude null got
    wrong): over 300 draws the 1999-pattern test rejects at 5% about 5% of the time (binomial
    sd 1.3%: at most 9%), and the p-values spread over [0, 1] (a quarter below 0.25 +- 6%)."""
    rng = np.random.default_rng(3)
    ps, rejected = [], 0
    for _ in range(300):
        x = rng.choice([-1.0, 1.0], size=(2, 4, 32)) * rng.pareto(1.5, size=(2, 4, 32))
        t = sign_flip_test(x, draws=199, seed=int(rng.integers(1 << 30)))
        ps.append(t["p_value"])
        rejected += t["observed"] > t["quantile"]
    assert rejected / 300 <= 0.09 and 0.19 <= np.mean(np.asarray(ps) <= 0.25) <= 0.31


def test_a_consistent_head_is_far_above_the_null():
    rng = np.random.default_rng(4)
    x = rng.choice([-1.0, 1.0], size=(3, 8, 64)) * rng.random((3, 8, 64))
    x[:, 5] = np.abs(x[:, 5])  # every example pushes head 5 the same way
    t = sign_flip_test(x)
    assert t["observed"] == pytest.approx(1.0) and t["quantile"] < 0.5
    assert t["p_value"] == pytest.approx(1 / 2000) and not t["exact"]


def test_quantile_and_bad_input():
    assert quantile_of(np.arange(1.0, 21.0), 0.95) == 19.0
    assert quantile_of(np.asarray([3.0]), 0.95) == 3.0
    for bad in (np.zeros((2, 3)), np.full((1, 1, 2), np.nan), np.zeros((1, 0, 2))):
        with pytest.raises(ValueError):
            sign_flip_test(bad)
