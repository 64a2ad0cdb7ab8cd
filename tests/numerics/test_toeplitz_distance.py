"""The Toeplitz projection (each diagonal replaced by its mean) and the relative Frobenius
distance from Toeplitz d(G) = ||G - T(G)||_F / ||G||_F: against a reference loop over the
diagonals, 0 for every Toeplitz matrix and > 0 for every other, the projection the
Frobenius-nearest Toeplitz matrix (a brute least-squares fit over the 2n - 1 diagonal values),
and the position Gram P P^T of a table with its dense spectrum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra.numpy import arrays

from posenc.errors import PosencError
from posenc.numerics.toeplitz_distance import (diagonal_means, position_gram, toeplitz_distance,
                                               toeplitz_projection)

FLOATS = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=64)
SIZES = st.integers(1, 9)


def squares(n):
    return arrays(np.float64, (n, n), elements=FLOATS)


def toeplitz_of(values, n):
    """The n x n Toeplitz matrix with T_ij = values[j - i + n - 1], by a loop."""
    t = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            t[i, j] = values[j - i + n - 1]
    return t


def reference_projection(g):
    """T(G) by a loop over the diagonals: each entry the mean of its diagonal."""
    n = g.shape[0]
    out = np.empty_like(g, dtype=float)
    for k in range(-(n - 1), n):
        entries = [(i, i + k) for i in range(n) if 0 <= i + k < n]
        mean = sum(g[i, j] for i, j in entries) / len(entries)
        for i, j in entries:
            out[i, j] = mean
    return out


def brute_nearest(g):
    """The Frobenius-nearest Toeplitz matrix by least squares over its 2n - 1 values."""
    n = g.shape[0]
    basis = np.stack([toeplitz_of(np.eye(2 * n - 1)[k], n).ravel() for k in range(2 * n - 1)], 1)
    values = np.linalg.lstsq(basis, g.ravel(), rcond=None)[0]
    return toeplitz_of(values, n)


@given(SIZES.flatmap(squares))
def test_the_projection_is_the_reference_loop_and_the_nearest_toeplitz_matrix(g):
    t = toeplitz_projection(g)
    scale = max(1.0, float(np.abs(g).max()))
    # float64 sums of at most 9 entries of size <= 1e3: errors near 1e-13 relative to the scale
    np.testing.assert_allclose(t, reference_projection(g), rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(t, brute_nearest(g), rtol=0, atol=1e-9 * scale)
    assert toeplitz_distance(t) <= 1e-12                       # T(G) is Toeplitz
    np.testing.assert_allclose(toeplitz_projection(t), t, rtol=0, atol=1e-12 * scale)   # idempotent


@given(SIZES.flatmap(lambda n: st.tuples(st.just(n), arrays(np.float64, 2 * n - 1, elements=FLOATS))))
def test_the_distance_is_zero_for_every_toeplitz_matrix(case):
    n, values = case
    assert toeplitz_distance(toeplitz_of(values, n)) <= 1e-12


@given(st.integers(2, 9).flatmap(squares), st.data())
def test_the_distance_is_positive_for_a_non_toeplitz_matrix(g, data):
    n = g.shape[0]
    t = toeplitz_projection(g)
    i = data.draw(st.integers(0, n - 2))               # two entries on one diagonal made to differ
    bump = data.draw(st.floats(1.0, 1e3))
    g = t.copy()
    g[i, i] += bump
    assert not np.allclose(g, toeplitz_projection(g))
    d = toeplitz_distance(g)
    assert 0 < d <= 1
    # the loop's distance: ||G - T(G)||_F / ||G||_F
    ref = np.linalg.norm(g - reference_projection(g)) / np.linalg.norm(g)
    assert d == pytest.approx(ref, rel=1e-9)


@given(SIZES.flatmap(squares))
def test_the_distance_is_between_0_and_1(g):
    assert 0.0 <= toeplitz_distance(g) <= 1.0 + 1e-12


def test_the_diagonal_means_are_indexed_by_j_minus_i():
    g = np.arange(9.0).reshape(3, 3)     # diagonals k=-2: [6], -1: [3, 7], 0: [0, 4, 8], 1: [1, 5], 2: [2]
    np.testing.assert_allclose(diagonal_means(g), [6, 5, 4, 3, 2])
    assert toeplitz_distance(np.zeros((4, 4))) == 0.0


def test_the_position_gram_of_a_table():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((12, 3))
    out = position_gram(table, 8)
    g = table[:8] @ table[:8].T
    np.testing.assert_allclose(out["eigenvalues"], np.linalg.eigvalsh(g), atol=1e-12)
    assert out["rank"] == 3 and out["width"] == 3 and out["n"] == 8
    assert out["toeplitz_distance"] == pytest.approx(
        np.linalg.norm(g - reference_projection(g)) / np.linalg.norm(g), rel=1e-12)
    # a sinusoidal table's Gram is Toeplitz: sum_m cos(w_m (i - j))
    k, w = np.arange(16)[:, None], np.array([[1.0, 0.3, 0.05]])
    sinus = np.concatenate([np.cos(k * w), np.sin(k * w)], 1)
    assert position_gram(sinus, 16)["toeplitz_distance"] < 1e-14


@pytest.mark.parametrize("table, n, words", [(np.ones((4, 2)), 5, "the table has 4 positions"),
                                             (np.ones(4), 2, "is (positions, width)"),
                                             (np.ones((4, 2)), 0, "n=0")])
def test_bad_tables_and_lengths_are_one_error(table, n, words):
    with pytest.raises(PosencError, match=words.replace("(", r"\(").replace(")", r"\)")):
        position_gram(table, n)


def test_a_non_square_matrix_is_refused():
    with pytest.raises(PosencError, match="square"):
        toeplitz_distance(np.ones((2, 3)))
