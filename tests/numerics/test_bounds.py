"""Every bound holds on inputs meeting its assumptions, and fails once one is dropped.

Violations are searched with ``hypothesis.find`` over small integer matrices, so a
failure to find one fails the test: each assumption is shown to matter.
"""

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from posenc.numerics import bounds as bd
from posenc.numerics.kernels import kernel
from posenc.numerics.operators import ToeplitzOperator

SEARCH = settings(max_examples=3000, database=None, deadline=None)
# Eigenvalues from LAPACK on n <= 12 matrices with entries <= ~100 carry errors ~ n eps ||M||;
# a slack of 1e-9 * (||M|| + 1) cannot hide a real violation (those found are O(1)).
def slack(*ms):
    return 1e-9 * (sum(float(np.abs(m).sum()) for m in ms) + 1)


def ints(n, lo=-4, hi=4):
    return st.lists(st.integers(lo, hi), min_size=n, max_size=n).map(np.array)


@st.composite
def square(draw, max_n=5, lo=-4, hi=4):
    n = draw(st.integers(1, max_n))
    return draw(ints(n * n, lo, hi)).reshape(n, n).astype(float)


@st.composite
def gram(draw, n, max_rank=3):
    r = draw(st.integers(1, max_rank))
    x = draw(ints(n * r)).reshape(n, r).astype(float)
    return x @ x.T


@st.composite
def toeplitz(draw, hermitian=True, max_n=10):
    n = draw(st.integers(1, max_n))
    c = draw(ints(n)).astype(float)
    if hermitian:
        return ToeplitzOperator(c)
    return ToeplitzOperator(c, draw(ints(n)).astype(float))


# ---------------------------------------------------------------- Szego / Grenander
@given(toeplitz(), st.sampled_from([None, 3, 8]))
def test_szego_interval_holds_for_hermitian_toeplitz(op, grid):
    sz = bd.szego(op, grid)
    ev = np.linalg.eigvalsh(op.dense())
    s = slack(op.column)
    assert sz["lower"] - s <= ev[0] and ev[-1] <= sz["upper"] + s
    assert np.abs(ev).max() <= sz["norm_upper"] + s


@given(toeplitz(hermitian=False), st.sampled_from([None, 3]))
def test_szego_norm_bound_holds_for_any_toeplitz(op, grid):
    assert np.linalg.norm(op.dense(), 2) <= bd.szego(op, grid)["norm_upper"] + slack(op.column, op.row)


def _grid_min_abs(op):
    # min |f| may sit where f crosses zero (f' != 0): only the first-order widening is valid
    sz = bd.szego(op)
    _, f = op.symbol(sz["grid"])
    return float(np.min(np.abs(f))) - sz["first_order_correction"]


@given(toeplitz())
def test_sigma_min_at_least_min_abs_symbol_for_hermitian(op):
    sv = np.linalg.svd(op.dense(), compute_uv=False)
    assert sv[-1] >= _grid_min_abs(op) - slack(op.column)


def test_sigma_min_bound_fails_without_hermitian_symmetry():
    bad = find(toeplitz(hermitian=False, max_n=8),
               lambda op: np.linalg.svd(op.dense(), compute_uv=False)[-1]
               < _grid_min_abs(op) - 1e-6, settings=SEARCH)
    assert not bad.hermitian


def test_uncorrected_grid_range_can_miss_eigenvalues():
    # the rigorous widening is needed: with a coarse grid the raw symbol range fails
    def raw_fails(op):
        _, f = op.symbol(3)
        ev = np.linalg.eigvalsh(op.dense())
        return ev[-1] > f.max() + 1e-6 or ev[0] < f.min() - 1e-6
    assert find(toeplitz(), raw_fails, settings=SEARCH).n >= 2


# ---------------------------------------------------------------- Gershgorin
@given(toeplitz(hermitian=False))
def test_gershgorin_discs_contain_every_eigenvalue(op):
    ev = np.linalg.eigvals(op.dense())
    assert bd.gershgorin_contains(ev, op.diagonal(), op.gershgorin_radii(), rtol=1e-9)
    g = bd.gershgorin(op)
    assert np.linalg.norm(op.dense(), 2) <= g["norm_upper"] + slack(op.column, op.row)


@given(toeplitz())
def test_gershgorin_interval_holds_for_hermitian(op):
    g = bd.gershgorin(op)
    ev = np.linalg.eigvalsh(op.dense())
    assert g["lower"] - slack(op.column) <= ev[0] and ev[-1] <= g["upper"] + slack(op.column)


def test_gershgorin_real_interval_fails_without_hermitian_symmetry():
    def escapes(op):
        c = op.column[0]
        r = op.gershgorin_radii().max()
        ev = np.linalg.eigvals(op.dense())
        return np.any(np.abs(ev.imag) > 1e-6) or np.any((ev.real < c - r - 1e-6) | (ev.real > c + r + 1e-6))
    assert not find(toeplitz(hermitian=False), escapes, settings=SEARCH).hermitian


# ---------------------------------------------------------------- Schur
def schur_case(a, k):
    ev = np.linalg.eigvalsh(a * k)
    ea = np.linalg.eigvalsh(a)
    kd = np.diag(k)
    return ev, ea, kd


@st.composite
def psd_pair(draw, max_n=6):
    n = draw(st.integers(1, max_n))
    return draw(gram(n)), draw(gram(n))


@given(psd_pair())
def test_schur_interval_for_psd_a_and_psd_k(pair):
    a, k = pair
    ev, ea, kd = schur_case(a, k)
    lo, hi = bd.schur_interval(ea[0], ea[-1], kd.min(), kd.max())
    assert lo - slack(a, k) <= ev[0] and ev[-1] <= hi + slack(a, k)


@given(st.integers(1, 6).flatmap(lambda n: st.tuples(square(n, -4, 4), gram(n))))
def test_general_schur_interval_for_hermitian_a(pair):
    a, k = pair
    a = a[: k.shape[0], : k.shape[0]] if a.shape[0] >= k.shape[0] else a
    n = min(a.shape[0], k.shape[0])
    a, k = a[:n, :n] + a[:n, :n].T, k[:n, :n]
    ev, ea, kd = schur_case(a, k)
    lo, hi = bd.schur_interval(ea[0], ea[-1], kd.min(), kd.max(), general=True)
    assert lo - slack(a, k) <= ev[0] and ev[-1] <= hi + slack(a, k)


def _sym_and_gram(max_n=4):
    return st.integers(1, max_n).flatmap(
        lambda n: st.tuples(ints(n * n).map(lambda v: (v.reshape(n, n) + v.reshape(n, n).T) / 1.0),
                            gram(n)))


def test_schur_psd_form_fails_when_a_is_not_psd():
    def fails(pair):
        a, k = pair
        ev, ea, kd = schur_case(a, k)
        lo, hi = bd.schur_interval(ea[0], ea[-1], kd.min(), kd.max())
        return ev[0] < lo - 1e-6 or ev[-1] > hi + 1e-6
    a, _ = find(_sym_and_gram(), fails, settings=SEARCH)
    assert np.linalg.eigvalsh(a)[0] < 0                          # the dropped assumption


def _unit_diagonal(k):
    d = np.sqrt(np.diag(k))
    return k / np.outer(d, d)


@given(_sym_and_gram(6).filter(lambda p: np.all(np.diag(p[1]) > 0)))
def test_unit_diagonal_psd_k_keeps_spectrum_in_that_of_a(pair):
    a, k = pair
    k = _unit_diagonal(k)                                         # PSD with unit diagonal
    ev, ea, _ = schur_case(a, k)
    assert ea[0] - slack(a) <= ev[0] and ev[-1] <= ea[-1] + slack(a)
    assert np.linalg.norm(a * k, 2) <= np.linalg.norm(a, 2) + slack(a)


def test_containment_fails_when_k_lacks_unit_diagonal():
    def fails(pair):
        a, k = pair
        ev, ea, _ = schur_case(a, k)
        return ev[0] < ea[0] - 1e-6 or ev[-1] > ea[-1] + 1e-6
    _, k = find(st.integers(1, 4).flatmap(lambda n: st.tuples(gram(n), gram(n))), fails,
                settings=SEARCH)
    assert not np.allclose(np.diag(k), 1)


def test_containment_fails_when_k_is_not_psd():
    def fails(pair):
        a, k = pair
        ev, ea, _ = schur_case(a, k)
        return ev[0] < ea[0] - 1e-6 or ev[-1] > ea[-1] + 1e-6
    unit_sym = st.integers(2, 4).flatmap(lambda n: st.tuples(
        gram(n), ints(n * n, -1, 1).map(lambda v: np.triu(v.reshape(n, n), 1))
        .map(lambda u: u + u.T + np.eye(u.shape[0]))))
    _, k = find(unit_sym, fails, settings=SEARCH)
    assert np.linalg.eigvalsh(k)[0] < 0


@given(st.integers(1, 6).flatmap(lambda n: st.tuples(ints(n * n).map(lambda v: v.reshape(n, n)),
                                                      gram(n))))
def test_schur_norm_bound_for_any_a_and_psd_k(pair):
    a, k = pair
    a = a.astype(float)
    bound = bd.schur_norm(np.linalg.norm(a, 2), np.diag(k).max())
    assert np.linalg.norm(a * k, 2) <= bound + slack(a, k)


def test_schur_norm_bound_fails_when_k_is_not_psd():
    sym = st.integers(2, 4).flatmap(lambda n: st.tuples(
        ints(n * n).map(lambda v: v.reshape(n, n).astype(float)),
        ints(n * n, -2, 2).map(lambda v: v.reshape(n, n)).map(lambda u: (u + u.T).astype(float))))
    a, k = find(sym, lambda p: np.linalg.norm(p[0] * p[1], 2)
                > bd.schur_norm(np.linalg.norm(p[0], 2), max(np.diag(p[1]).max(), 0)) + 1e-6,
                settings=SEARCH)
    assert np.linalg.eigvalsh(k)[0] < 0


# ---------------------------------------------------------------- Weyl
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(ints(n * n), ints(n * n))))
def test_weyl_for_hermitian_sums(pair):
    n = int(round(np.sqrt(pair[0].size)))
    a = pair[0].reshape(n, n).astype(float)
    b = pair[1].reshape(n, n).astype(float)
    a, b = a + a.T, b + b.T
    ea, eb, es = (np.linalg.eigvalsh(m) for m in (a, b, a + b))
    lo, hi = bd.weyl_interval((ea[0], ea[-1]), (eb[0], eb[-1]))
    assert lo - slack(a, b) <= es[0] and es[-1] <= hi + slack(a, b)
    nlo, nhi = bd.weyl_norm(np.linalg.norm(a, 2), np.linalg.norm(b, 2))
    assert nlo - slack(a, b) <= np.linalg.norm(a + b, 2) <= nhi + slack(a, b)


def test_weyl_eigenvalue_interval_fails_for_non_hermitian_matrices():
    def fails(pair):
        a, b = pair
        ea, eb, es = (np.linalg.eigvals(m) for m in (a, b, a + b))
        return es.real.max() > ea.real.max() + eb.real.max() + 1e-6
    a, b = find(st.integers(2, 3).flatmap(lambda n: st.tuples(square(n).filter(
        lambda m: m.shape[0] == n), square(n).filter(lambda m: m.shape[0] == n))), fails,
        settings=SEARCH)
    assert not (np.array_equal(a, a.T) and np.array_equal(b, b.T))


# ---------------------------------------------------------------- rotary planes
@given(st.floats(0, 3.2), st.integers(1, 30))
def test_cosine_plane_eigenvalues(theta, n):
    c = np.cos(theta * (np.arange(n)[:, None] - np.arange(n)[None, :]))
    ev = np.linalg.eigvalsh(c)
    top, second = bd.cosine_plane_eigenvalues(theta, n)
    # eigvalsh error ~ n eps n; the closed form sums n exponentials: 1e-9 * n is ample
    assert ev[-1] == pytest.approx(top, abs=1e-9 * n)
    assert (ev[-2] if n > 1 else 0.0) == pytest.approx(second, abs=1e-9 * n)


@given(st.sampled_from(["rope", "rope:keep=0.5", "rope:fraction=0.5", "mla",
                        "custom:frequencies=1;0.3;0.01", "rope:base=10"]),
       st.integers(1, 80), st.sampled_from([4, 8, 16]))
def test_rotary_nonzero_spectrum_bounds(spec, n, head_dim):
    kern = kernel(spec, n, head_dim=head_dim)
    rn = bd.rotary_nonzero(kern)
    ev = np.linalg.eigvalsh(kern.dense())
    assert rn["lambda_max_lower"] - 1e-9 * n <= ev[-1] <= rn["lambda_max_upper"] + 1e-9 * n
    assert rn["lambda_max_lower_frobenius"] <= ev[-1] + 1e-9 * n
    assert rn["trace"] == pytest.approx(n)
    assert np.sum(ev > 1e-9 * n) <= rn["rank_bound"]
    assert rn["frobenius_sq"] == pytest.approx(np.sum(ev ** 2), rel=1e-9)
