"""RoPE's per-plane logit ||L_RoPE|| / ||L_NoPE|| (posenc.numerics.per_plane) against a reference
loop over (i, j, m) written from the module's documented content, and against the numeric layer's
own RoPE logit (``logits``: q and k rotated by their positions) for the same content."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from posenc.errors import PosencError
from posenc.numerics.kernels import kernel
from posenc.numerics.logits import logits
from posenc.numerics.per_plane import per_plane_ratios, plane_factors, plane_logit_norms

#: float64 norms of n <= 20 matrices (dense SVD) against the Gram-root path (sqrt of the top
#: eigenvalue of a product of <= 34 x 34 Grams): ~1e-13 relative; 1e-9 is slack.
RTOL = 1e-9


def draw(seed: int, n: int, width: int, side: int) -> np.ndarray:
    """The documented content: rows 0 .. n-1 of rng([seed, 0, side]) (n <= one block)."""
    return np.random.default_rng([seed, 0, side]).standard_normal((n, width))


def reference_logits(kern, seed: int, independent: bool) -> tuple[np.ndarray, np.ndarray]:
    """L_RoPE = sum_m w_m Re(u_m(i) conj(v_m(j)) e^{i theta_m (i-j)}) + w_0 C_0 and L_NoPE (the
    same without e^{...}), entry by entry, u_m(p) = sqrt(w_m/2) (z[p, 2m] + i z[p, 2m+1])."""
    n, theta, w = kern.n, kern.frequencies, kern.plane_weights
    planes = theta.size
    w0 = kern.constant_weight
    c0 = 0 if w0 <= 0 else max(1, round(2 * w0 / np.mean(w)))
    zq = draw(seed, n, 2 * planes + c0, 0)
    zk = draw(seed, n, 2 * planes + c0, 1) if independent else zq
    rope, nope = np.zeros((n, n)), np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            for m in range(planes):
                u = np.sqrt(w[m] / 2) * (zq[i, 2 * m] + 1j * zq[i, 2 * m + 1])
                v = np.sqrt(w[m] / 2) * (zk[j, 2 * m] + 1j * zk[j, 2 * m + 1])
                g = u * np.conj(v)
                rope[i, j] += (g * np.exp(1j * theta[m] * (i - j))).real
                nope[i, j] += g.real
            const = sum(zq[i, 2 * planes + c] * zk[j, 2 * planes + c] for c in range(c0))
            rope[i, j] += w0 / max(c0, 1) * const
            nope[i, j] += w0 / max(c0, 1) * const
    return rope, nope


specs = st.sampled_from(["rope", "rope:fraction=0.5", "rope:keep=0.5", "rope:base=100",
                         "mla", "custom:frequencies=0.3;1.1;2"])


@given(spec=specs, n=st.integers(1, 16), d=st.sampled_from([4, 8, 12]), seed=st.integers(0, 2**32),
       independent=st.booleans())
def test_per_plane_norms_equal_the_reference_loop(spec, n, d, seed, independent):
    k = kernel(spec, n, head_dim=d)
    rope, nope = reference_logits(k, seed, independent)
    got = plane_logit_norms(k, seed, independent)
    assert got[0] == pytest.approx(np.linalg.norm(rope, 2), rel=RTOL, abs=1e-12)
    assert got[1] == pytest.approx(np.linalg.norm(nope, 2), rel=RTOL, abs=1e-12)
    f, g, f0, g0 = plane_factors(k, seed, independent)
    np.testing.assert_allclose(f @ g.T, rope, rtol=0, atol=1e-12 * max(1, np.abs(rope).max()))
    np.testing.assert_allclose(f0 @ g0.T, nope, rtol=0, atol=1e-12 * max(1, np.abs(nope).max()))


@given(spec=st.sampled_from(["rope", "rope:fraction=0.5", "rope:keep=0.5"]), n=st.integers(1, 20),
       d=st.sampled_from([4, 8, 16]), seed=st.integers(0, 2**32), independent=st.booleans())
def test_per_plane_logit_is_ropes_own_logit(spec, n, d, seed, independent):
    """For RoPE the content is x_i ~ N(0, I_d/d) (interleaved planes, position-free dims last):
    L_RoPE is what ``logits`` computes with identity projections, L_NoPE the same under nope."""
    k = kernel(spec, n, head_dim=d)
    xq = draw(seed, n, d, 0) / np.sqrt(d)
    xk = draw(seed, n, d, 1) / np.sqrt(d) if independent else xq
    x = np.hstack([xq, xk])
    wq, wk = np.vstack([np.eye(d), np.zeros((d, d))]), np.vstack([np.zeros((d, d)), np.eye(d)])
    rope, nope = logits(spec, x, wq, wk), logits("nope", x, wq, wk)
    f, g, f0, g0 = plane_factors(k, seed, independent)
    np.testing.assert_allclose(f @ g.T, rope, rtol=0, atol=1e-12)
    np.testing.assert_allclose(f0 @ g0.T, nope, rtol=0, atol=1e-12)


def test_blocks_make_the_draw_independent_of_n_and_the_ratios_are_reported():
    """Row p of the content does not depend on n (drawn per block of 4096 rows), so a section of
    the long factor is the short one; the ratio of each seed is ||L_RoPE|| / ||L_NoPE||."""
    long, short = kernel("rope", 4100, head_dim=8), kernel("rope", 30, head_dim=8)
    f_long, f0_long = plane_factors(long, 3)[::2]
    f_short, f0_short = plane_factors(short, 3)[::2]
    assert np.array_equal(f0_long[:30], f0_short)                # the draw itself: bit for bit
    np.testing.assert_allclose(f_long[:30], f_short, rtol=0, atol=1e-15)   # rotated: last bit
    pp = per_plane_ratios(short, 3)
    assert pp.seeds == (0, 1, 2)
    for s, r in zip(pp.seeds, pp.ratios):
        rope, nope = plane_logit_norms(short, s)
        assert r == rope / nope
    d = pp.to_dict()
    assert d["min"] <= d["mean"] <= d["max"] and "seeds 0-2" in d["content"]
    with pytest.raises(PosencError, match="rotary kernel"):
        per_plane_ratios(kernel("alibi", 10))


def test_report_puts_the_per_plane_ratio_beside_the_plane_averaged_one():
    from posenc.numerics.bound_table import bound_report
    rep = bound_report("alibi", [40], plane_seeds=2)              # rope is the reference
    g = rep["growth"][0]
    k = kernel("rope", 40)
    assert g["ratio_per_plane"]["ratios"] == list(per_plane_ratios(k, 2).ratios)
    assert "ratio_multiplicative" in g and "q = k, seeds 0-1" in rep["per_plane_content"]
    assert "ratio_per_plane" not in bound_report("alibi", [40], plane_seeds=0)["growth"][0]
