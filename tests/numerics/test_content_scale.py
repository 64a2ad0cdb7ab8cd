"""The contraction report's two ratios under a change of the content's scale A -> cA.

Multiplicative: (cA) o K = c (A o K), so ||(cA) o K|| / ||cA|| does not depend on c.
Additive: r(c) = ||cA + B|| / ||cA|| = g(1/c) / g(0) with g(t) = ||A + tB||, convex in t, so
  (a) |r(c) - 1| <= ||B|| / (c ||A||) (triangle inequality): r -> 1 as c grows;
  (b) r has no interior maximum over c (g convex, t = 1/c monotone);
  (c) for A PSD with a simple top eigenvalue, eigenvector v: g'(0+) = v^T B v, so r is
      non-increasing in c when v^T B v > 0, and dips below 1 (so is NOT monotone) when
      v^T B v < 0 -- monotonicity is not a general property.
The reference values are dense numpy norms computed here.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import assume, event, given, strategies as st

from posenc.errors import PosencError
from posenc.numerics.bound_table import bound_report, check_scales
from posenc.numerics.contraction import couple, scale_content, scaled_ratios, seeded_content
from posenc.numerics.kernels import kernel
from posenc.numerics.operators import DenseOperator

#: Ratios of float64 spectral norms of n <= 24 matrices (LAPACK: ~ n eps relative); 1e-9 is slack.
RTOL = 1e-9

scales = st.integers(-3, 4).map(lambda e: 10.0 ** e)
sizes = st.integers(2, 24)


def bias_of(b: np.ndarray) -> types.SimpleNamespace:
    """A stand-in additive kernel holding any square matrix B."""
    return types.SimpleNamespace(operator=DenseOperator(b), rank_bound=None, psd=False,
                                 n=b.shape[0], coupling="additive")


@given(n=sizes, rank=st.integers(1, 4), seed=st.integers(0, 2**32), c=scales,
       dense=st.booleans(), spec=st.sampled_from(["rope:head_dim=8", "rope", "mla"]))
def test_hadamard_ratio_does_not_depend_on_the_content_scale(n, rank, seed, c, dense, spec):
    a = seeded_content(n, rank, seed)
    content = a.dense() if dense else a
    k = kernel(spec.split(":")[0], n, head_dim=8 if "head_dim" in spec else 64)
    base = couple(content, k, "multiplicative").ratio
    assert scaled_ratios(content, k, [c])[0] == pytest.approx(base, rel=RTOL)
    ref = np.linalg.norm(a.dense() * k.dense(), 2) / np.linalg.norm(a.dense(), 2)
    assert base == pytest.approx(ref, rel=RTOL)


@given(n=sizes, rank=st.integers(1, 4), seed=st.integers(0, 2**32), c=scales,
       spec=st.sampled_from(["alibi", "alibi:slopes=exp", "relative_bias", "kerple_log"]))
def test_additive_ratio_tends_to_one_within_the_triangle_bound(n, rank, seed, c, spec):
    a = seeded_content(n, rank, seed).dense()
    b = kernel(spec, n)
    r = scaled_ratios(a, b, [c])[0]
    bd = b.dense()
    na, nb = np.linalg.norm(a, 2), np.linalg.norm(bd, 2)
    assume(na > 1e-8)
    assert r == pytest.approx(np.linalg.norm(c * a + bd, 2) / (c * na), rel=RTOL)
    assert abs(r - 1) <= nb / (c * na) * (1 + RTOL) + RTOL


@given(n=st.integers(3, 12), rank=st.integers(1, 3), data=st.data())
def test_additive_ratio_is_monotone_in_the_scale_exactly_when_the_bias_raises_the_top_direction(
        n, rank, data):
    x = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=n * rank, max_size=n * rank)),
                 dtype=float).reshape(n, rank)
    a = x @ x.T
    ev, vec = np.linalg.eigh(a)
    assume(ev[-1] > 0.5 and ev[-1] - ev[-2] > 0.1 * ev[-1])   # a simple, separated top eigenvalue
    b = np.array(data.draw(st.lists(st.integers(-4, 4), min_size=n * n, max_size=n * n)),
                 dtype=float).reshape(n, n)
    b = b + b.T
    v = vec[:, -1]
    slope = float(v @ b @ v)                                   # g'(0+) of g(t) = ||A + t B||
    nb = np.linalg.norm(b, 2)
    assume(abs(slope) > 0.05 * nb)
    event("v^T B v > 0" if slope > 0 else "v^T B v < 0")
    cs = np.logspace(-2, 6, 33) * nb / ev[-1]
    r = np.array(scaled_ratios(a, bias_of(b), cs))
    assert np.all(r >= 0)
    # (b) no interior maximum: r(c_k) <= max(r(c_{k-1}), r(c_{k+1}))
    assert np.all(r[1:-1] <= np.maximum(r[:-2], r[2:]) * (1 + 1e-9))
    if slope > 0:                                              # (c) non-increasing, above 1
        assert np.all(np.diff(r) <= 1e-9 * r[:-1]) and r.min() >= 1 - 1e-12
    else:                                                      # (c) dips below 1: not monotone
        assert r.min() < 1 - 1e-9 and r[0] > 1


def test_alibi_ratio_dips_below_one_at_n_64_so_monotonicity_is_not_general():
    """The measured case docs/usage.md quotes: at n = 64 (rank-8 seeded Gram, seed 0) ALiBi's
    ratio at c = 100 is below 1 and comes back to 1 from below."""
    n = 64
    a = seeded_content(n, 8, 0)
    r = scaled_ratios(a, kernel("alibi", n), [1, 100, 1e4, 1e6])
    assert r[0] > 40 and r[1] < 1 and r[1] < r[2] < r[3] < 1


def test_scale_content_keeps_a_gram_low_rank_and_refuses_a_bad_scale():
    a = seeded_content(10, 3, 1)
    s = scale_content(a, 4.0)
    assert type(s) is type(a) and s.y is s.x
    assert np.allclose(s.dense(), 4.0 * a.dense(), rtol=1e-14)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(PosencError, match="positive finite"):
            scale_content(a, bad)
    assert check_scales([100, 1, 100]) == (1.0, 100.0)
    for bad in ([], ["x"], [True], [0.0], list(range(1, 20))):
        with pytest.raises(PosencError):
            check_scales(bad)


def test_report_states_the_scale_and_the_balanced_ratio():
    rep = bound_report("alibi", [48, 96], scales=[1, 10])
    assert rep["content_scales"] == [1.0, 10.0]
    for g in rep["growth"]:
        n = g["n"]
        a = seeded_content(96, 8, 0).dense()[:n, :n]
        b = kernel("alibi", n).dense()
        na, nb = np.linalg.norm(a, 2), np.linalg.norm(b, 2)
        assert g["content_norm"] == pytest.approx(na, rel=1e-9)
        assert g["ratio_additive_scaled"]["1"] == g["ratio_additive"]
        assert g["ratio_additive_scaled"]["10"] == pytest.approx(
            np.linalg.norm(10 * a + b, 2) / (10 * na), rel=1e-9)
        assert g["balance_scale"] == pytest.approx(nb / na, rel=1e-9)
        assert g["ratio_additive_balanced"] == pytest.approx(np.linalg.norm(a * nb / na + b, 2) / nb,
                                                             rel=1e-9)
