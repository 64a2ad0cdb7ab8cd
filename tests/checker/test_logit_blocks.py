"""The logit blocks G_ij = M_iᵀK_j compared without forming all of them (a
head-dim-256 check spent most of its CPU forming S²·D³ blocks): the sparse products equal the
dense ones, and the counterexamples of shift invariance and of an expected RoPE's logits are
the ones an exhaustive comparison of every block finds."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from posenc.checker.expect import check_rope_expectation
from posenc.checker.logit_blocks import Blocks
from posenc.checker.rope import TOL, check_shift


def rotations(positions, d, base=10000.0, dtype=np.float64):
    """(S, d, d) half-split RoPE maps, their entries rounded to ``dtype``."""
    theta = base ** (-np.arange(0, d, 2) / d)
    M = np.zeros((len(positions), d, d))
    h = d // 2
    for s, p in enumerate(positions):
        c, sn = np.cos(p * theta).astype(dtype), np.sin(p * theta).astype(dtype)
        for m in range(h):
            M[s, m, m], M[s, m, m + h], M[s, m + h, m], M[s, m + h, m + h] = c[m], -sn[m], sn[m], c[m]
    return M


def exhaustive(M, K, M2, K2, order):
    """The first entry off by more than TOL over every block, and the largest deviation."""
    S = len(M)
    pairs = sorted(((i, j) for i in range(S) for j in range(S)), key=lambda t: order(*t))
    worst = 0.0
    for i, j in pairs:
        dev = np.abs(M[i].T @ K[j] - M2[i].T @ K2[j])
        worst = max(worst, dev.max())
        bad = np.argwhere(dev > TOL)
        if bad.size:
            return (i, j, *map(int, bad[0])), worst
    return None, worst


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([4, 8, 32]), st.integers(0, 2**32 - 1), st.booleans())
def test_sparse_blocks_equal_dense_products(d, seed, sparse):
    rng = np.random.default_rng(seed)
    M = rotations(np.arange(6), d) if sparse else rng.standard_normal((6, d, d))
    K = rotations(np.arange(6) + 3, d, dtype=np.float32)
    blocks = Blocks(M, K)
    assert (blocks.sparse is not None) == (sparse and d == 32)    # density 2/d <= 0.1 from d = 20
    for i, j in [(0, 0), (2, 5), (5, 1)]:
        assert np.allclose(blocks(i, j), M[i].T @ K[j], rtol=0, atol=1e-14)


@pytest.mark.parametrize("s, a, b", [(9, 3, 3), (4, 0, 7), (17, 12, 1)])
def test_shift_counterexample_is_the_exhaustive_one(s, a, b):
    M = rotations(np.arange(24), 32, dtype=np.float32)
    M[s, a, b] += 1e-3                                  # one map off: the logit depends on position
    want, _ = exhaustive(M[:-1], M[:-1], M[1:], M[1:], order=lambda i, j: (i + j, i))
    prop = check_shift(M, np.arange(24))
    i, j, qa, kb = want
    assert prop.status == "fail" and f"q = e_{qa}, k = e_{kb}: ⟨f(q,{i}), f(k,{j})⟩" in prop.counterexample


def test_a_float32_rope_is_compared_entry_by_entry_and_passes():
    prop = check_shift(rotations(np.arange(24), 256, dtype=np.float32), np.arange(24))
    assert prop.status == "pass" and "entry by entry" in prop.detail, prop.detail


def test_expected_logits_counterexample_is_the_exhaustive_one():
    positions = np.arange(24)
    M = rotations(positions, 32, base=20000.0)              # the base is not the expected one
    R = rotations(positions, 32)
    (i, j, a, b), _ = exhaustive(M, M, R, R, order=lambda i, j: (i, j))
    prop = check_rope_expectation(M, positions, {"base": 10000.0, "pairing": "half"}, 32, {}, TOL)
    assert prop.status == "fail" and "the logits differ too" in prop.detail
    assert f"q = e_{a}, k = e_{b}: ⟨f(q,{i}), f(k,{j})⟩" in prop.detail, prop.detail


def test_a_constant_offset_cancels_in_the_logits():
    positions = np.arange(24)
    M = rotations(positions + 3, 32)                        # f(x, p) = RoPE(x, p + 3)
    prop = check_rope_expectation(M, positions, {"base": 10000.0, "pairing": "half"}, 32, {}, TOL)
    assert prop.status == "fail" and "still equal the reference's" in prop.detail, prop.detail
