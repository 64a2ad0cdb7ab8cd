"""ToeplitzOperator, HadamardOperator and friends against dense reference matrices."""

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given
from hypothesis import strategies as st
from scipy.sparse.linalg import LinearOperator, eigsh

from posenc.errors import PosencError
from posenc.numerics.operators import (DENSE_LIMIT, DenseOperator, HadamardOperator,
                                       LowRankOperator, SumOperator, ToeplitzOperator)

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@st.composite
def toeplitz_data(draw, complex_=None, max_n=24):
    n = draw(st.integers(1, max_n))
    cplx = draw(st.booleans()) if complex_ is None else complex_
    def vec():
        re = np.array(draw(st.lists(finite, min_size=n, max_size=n)))
        im = np.array(draw(st.lists(finite, min_size=n, max_size=n))) if cplx else 0
        return re + 1j * im if cplx else re
    c, r, v = vec(), vec(), vec()
    return c, r, v


def reference_toeplitz(c, r):
    """Entry by entry: T_ij = c[i-j] for i >= j, r[j-i] above (a loop, no scipy)."""
    n = len(c)
    t = np.zeros((n, n), dtype=np.result_type(c, r, float))
    for i in range(n):
        for j in range(n):
            t[i, j] = c[i - j] if i >= j else r[j - i]
    return t


def tol(c, r, v):
    # FFT round-off is O(eps log n) relative to sum_k |t_k| |v_j|; 1e-12 leaves a wide margin
    # over eps * log2(48) ~ 1e-15 while staying far below any real error.
    return 1e-12 * (np.abs(c).sum() + np.abs(r).sum() + 1) * (np.abs(v).max() + 1)


@given(toeplitz_data())
def test_matvec_equals_dense_matvec(data):
    c, r, v = data
    for backend in ("embedded", "scipy"):
        op = ToeplitzOperator(c, r, backend=backend)
        ref = reference_toeplitz(c, np.concatenate([[c[0]], r[1:]]))
        assert np.allclose(op.matvec(v), ref @ v, rtol=0, atol=tol(c, r, v))
        assert np.allclose(op.rmatvec(v), ref.conj().T @ v, rtol=0, atol=tol(c, r, v))
        two = np.stack([v, 2 * v + 1], axis=1)
        assert np.allclose(op.matmat(two), ref @ two, rtol=0, atol=3 * tol(c, r, two))


@given(toeplitz_data())
def test_embedded_matvec_agrees_with_scipy_matmul_toeplitz(data):
    c, r, v = data
    ref = sla.matmul_toeplitz((c, r), v)
    assert np.allclose(ToeplitzOperator(c, r).matvec(v), ref, rtol=0, atol=tol(c, r, v))


@given(toeplitz_data())
def test_dense_is_toeplitz_and_matches_the_entry_loop(data):
    c, r, _ = data
    t = ToeplitzOperator(c, r).dense()
    assert np.array_equal(t[1:, 1:], t[:-1, :-1])               # constant diagonals
    assert np.array_equal(t, reference_toeplitz(c, np.concatenate([[c[0]], r[1:]])))


@given(toeplitz_data(complex_=True))
def test_default_row_is_hermitian(data):
    c, _, v = data
    c = c.copy()
    c[0] = c[0].real
    op = ToeplitzOperator(c)
    assert op.hermitian
    t = op.dense()
    assert np.array_equal(t, t.conj().T)
    assert not ToeplitzOperator(c, c).hermitian or np.array_equal(c[1:], np.conj(c[1:]))


@given(toeplitz_data())
def test_symbol_fft_equals_direct_sum_and_grid_folding(data):
    c, r, _ = data
    op = ToeplitzOperator(c, r)
    n = op.n
    for m in (1, 3, 2 * n - 1, 4 * n + 3):
        w, f = op.symbol(m)
        k = np.arange(1, n)
        direct = np.array([op.column[0] + np.sum(op.column[1:] * np.exp(1j * k * x))
                           + np.sum(op.row[1:] * np.exp(-1j * k * x)) for x in w])
        assert np.allclose(f, direct, rtol=0, atol=1e-10 * (np.abs(c).sum() + np.abs(r).sum() + 1))
        w2, f2 = op.symbol(w)                                    # explicit grid, chunked sum
        assert np.allclose(f2, direct, rtol=0, atol=1e-10 * (np.abs(c).sum() + np.abs(r).sum() + 1))


@given(toeplitz_data())
def test_frobenius_and_gershgorin_radii_in_linear_time_match_dense(data):
    c, r, _ = data
    op = ToeplitzOperator(c, r)
    t = op.dense()
    assert np.isclose(op.frobenius_sq(), np.sum(np.abs(t) ** 2), rtol=1e-12, atol=1e-12)
    radii = np.abs(t).sum(axis=1) - np.abs(np.diag(t))
    assert np.allclose(op.gershgorin_radii(), radii, rtol=1e-12, atol=1e-12)


@st.composite
def hadamard_data(draw):
    n = draw(st.integers(1, 16))
    rank = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x, y = rng.standard_normal((n, rank)), rng.standard_normal((n, rank))
    c, r = rng.standard_normal(n), rng.standard_normal(n)
    if draw(st.booleans()):
        c, r = c + 1j * rng.standard_normal(n), r + 1j * rng.standard_normal(n)
    return x, y, c, r, rng.standard_normal(n)


@given(hadamard_data())
def test_hadamard_matvec_equals_dense_schur_product(data):
    x, y, c, r, v = data
    t = ToeplitzOperator(c, r)
    op = HadamardOperator(x, y, t)
    ref = (x @ y.T) * t.dense()
    scale = 1e-11 * (np.abs(x).sum() * np.abs(y).max() + 1) * (np.abs(c).sum() + np.abs(r).sum() + 1)
    assert np.allclose(op.matvec(v), ref @ v, rtol=0, atol=scale * (np.abs(v).max() + 1))
    assert np.allclose(op.rmatvec(v), ref.conj().T @ v, rtol=0, atol=scale * (np.abs(v).max() + 1))
    assert np.allclose(op.dense(), ref)
    assert np.allclose(op.diagonal(), np.diag(ref))


def test_operators_are_scipy_linear_operators_usable_by_eigsh():
    n = 60
    c = np.exp(-0.3 * np.arange(n))
    ops = [ToeplitzOperator(c), HadamardOperator(np.ones((n, 1)), None, ToeplitzOperator(c)),
           LowRankOperator(np.random.default_rng(0).standard_normal((n, 3))),
           DenseOperator(sla.toeplitz(c))]
    ops.append(SumOperator(ops[0], ops[2]))
    for op in ops:
        assert isinstance(op, LinearOperator)
        top = eigsh(op, k=1, which="LA", return_eigenvectors=False)[0]
        assert np.isclose(top, np.linalg.eigvalsh(op.dense())[-1], rtol=1e-9)
        assert op.hermitian


def test_low_rank_norm_and_dense_limit():
    x = np.random.default_rng(1).standard_normal((30, 4))
    lr = LowRankOperator(x)
    assert np.isclose(lr.norm(), np.linalg.norm(x @ x.T, 2), rtol=1e-12)
    big = ToeplitzOperator(np.zeros(DENSE_LIMIT + 1))
    with pytest.raises(PosencError, match="too large"):
        big.dense()
    assert big.matvec(np.ones(DENSE_LIMIT + 1)).shape == (DENSE_LIMIT + 1,)   # matrix-free is fine


@pytest.mark.parametrize("bad", [np.array([]), np.array([1.0, np.nan]), np.ones((2, 2))])
def test_bad_toeplitz_input_is_a_user_error(bad):
    with pytest.raises(PosencError):
        ToeplitzOperator(bad)
