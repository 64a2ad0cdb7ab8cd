"""Full logits for given weights: RoPE plane form, Toeplitz positional parts, MLA split."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc.encodings import MLA, RoPE, Sinusoidal
from posenc.errors import PosencError
from posenc.numerics import conventions as cv
from posenc.numerics.kernels import kernel
from posenc.numerics.logits import logits, plane_decomposition, rotate


def rotate_loop(v, theta, pairing):
    """Reference rotation, one position and plane at a time."""
    out = v.copy()
    r = 2 * len(theta)
    for p in range(v.shape[0]):
        for m, t in enumerate(theta):
            a, b = (2 * m, 2 * m + 1) if pairing == "interleaved" else (m, m + r // 2)
            c, s = np.cos(p * t), np.sin(p * t)
            out[p, a], out[p, b] = v[p, a] * c - v[p, b] * s, v[p, a] * s + v[p, b] * c
    return out


@st.composite
def setups(draw):
    n = draw(st.integers(1, 10))
    width = draw(st.integers(1, 6).map(lambda x: 2 * x))
    d = draw(st.integers(2, 5).map(lambda x: 2 * x))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return n, rng.standard_normal((n, width)), rng.standard_normal((width, d)), \
        rng.standard_normal((width, d))


#: scaled RoPE: the kernel's frequencies rescaled, and (yarn) the attention factor s^2 per plane
SCALINGS = [{}, dict(scaling="linear", factor=4.0),
            dict(scaling="yarn", factor=4.0, original=64, attention_factor=1.5)]


@given(setups(), st.sampled_from(["interleaved", "half"]), st.sampled_from([1.0, 0.5]),
       st.sampled_from(SCALINGS))
def test_rope_logits_equal_re_sum_of_plane_grams_times_plane_kernels(setup, pairing, fraction,
                                                                      scaling):
    n, x, wq, wk = setup
    spec = RoPE(pairing=pairing, fraction=fraction, **scaling)
    s2 = scaling.get("attention_factor", 1.0) ** 2
    d = wq.shape[1]
    theta = cv.rope_frequencies(spec, d)
    assert np.allclose(rotate(x @ wq, theta, pairing), rotate_loop(x @ wq, theta, pairing))
    q, k = x @ wq, x @ wk
    g, e = plane_decomposition(q, k, theta, pairing)
    r = 2 * theta.size
    a_idx, b_idx = (np.r_[0:r:2], np.r_[1:r:2]) if pairing == "interleaved" else \
        (np.arange(r // 2), np.arange(r // 2) + r // 2)
    rest = np.setdiff1d(np.arange(d), np.concatenate([a_idx, b_idx]))
    expected = s2 * np.real((g * e).sum(axis=0)) + q[:, rest] @ k[:, rest].T
    # sums of d products of O(1) Gaussians: rounding ~ d * eps * |q||k| << 1e-10
    assert np.allclose(logits(spec, x, wq, wk), expected, rtol=1e-10, atol=1e-10)
    for m in range(theta.size):                                   # E_m = the kernel's plane m
        assert np.allclose(e[m], kernel(spec, n, head_dim=d).plane(m).dense(), atol=1e-12)


@given(setups(), st.sampled_from(["alibi", "relative_bias", "custom:kernel=exp(-abs(k))", "nope"]))
def test_bias_logits_are_content_plus_the_toeplitz_kernel(setup, spec):
    n, x, wq, wk = setup
    bias = logits(spec, x, wq, wk, n_heads=4, head=1) - (x @ wq) @ (x @ wk).T
    assert np.allclose(bias, kernel(spec, n, n_heads=4, head=1).dense(), atol=1e-10)
    assert np.allclose(bias[1:, 1:], bias[:-1, :-1], atol=1e-10)


def test_sinusoidal_position_term_is_toeplitz_only_when_w_commutes_with_rotations():
    n, width = 12, 8
    p = cv.sinusoidal_table(n, width)
    gram = p @ p.T
    assert np.allclose(gram, kernel(Sinusoidal(), n, d_model=width).dense(), atol=1e-10)
    rng = np.random.default_rng(0)
    generic = rng.standard_normal((width, width))
    pwp = p @ generic @ p.T
    assert not np.allclose(pwp[1:, 1:], pwp[:-1, :-1], atol=1e-6)   # witness: not Toeplitz
    # W = direct sum of a_m I + b_m J (J the 2x2 rotation generator) commutes with every rotation
    commuting = np.zeros((width, width))
    for m in range(width // 2):
        a, b = rng.standard_normal(2)
        commuting[2 * m:2 * m + 2, 2 * m:2 * m + 2] = [[a, -b], [b, a]]
    pwp = p @ commuting @ p.T
    assert np.allclose(pwp[1:, 1:], pwp[:-1, :-1], atol=1e-10)


def test_rope_with_constant_content_gives_toeplitz_logits_and_partial_heads_do_not_rotate():
    n, width, d = 9, 6, 4
    rng = np.random.default_rng(1)
    x = np.tile(rng.standard_normal(width), (n, 1))
    wq, wk = rng.standard_normal((width, d)), rng.standard_normal((width, d))
    lr = logits(RoPE(), x, wq, wk)
    assert np.allclose(lr[1:, 1:], lr[:-1, :-1], atol=1e-10)
    plain = logits(RoPE(heads=1), x, wq, wk, head=1, n_heads=2)
    assert np.allclose(plain, (x @ wq) @ (x @ wk).T)


def test_mla_is_content_path_plus_rope_path():
    n, width, d, r = 8, 6, 4, 4
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, width))
    wq, wk, wqr, wkr = (rng.standard_normal((width, c)) for c in (d, d, r, r))
    full = logits(MLA(), x, wq, wk, wq_rope=wqr, wk_rope=wkr)
    content = (x @ wq) @ (x @ wk).T
    rope_path = logits(RoPE(), x, wqr, wkr)
    assert np.allclose(full, content + rope_path, atol=1e-10)
    with pytest.raises(PosencError, match="wq_rope"):
        logits(MLA(), x, wq, wk)


def test_bad_weights_are_user_errors():
    x = np.ones((3, 4))
    with pytest.raises(PosencError, match="shape"):
        logits("rope", x, np.ones((5, 2)), np.ones((5, 2)))
    with pytest.raises(PosencError, match="NaN"):
        logits("rope", x, np.full((4, 2), np.nan), np.ones((4, 2)))
