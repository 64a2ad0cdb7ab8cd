"""kernel(spec, n) for every catalogue entry, against entry-by-entry reference loops."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rope_scaling_reference  # tests/: on the path through its conftest.py

from posenc.encodings import (ALiBi, Custom, KerpleLog, LearnedAbsolute, MLA, NoPE, RelativeBias,
                              RoPE, Sinusoidal, XPos, derivable_entries, parse_spec)
from posenc.errors import PosencError
from posenc.numerics.kernels import kernel

from .test_conventions import exact_bucket, reference_get_slopes

MATH = {"abs": abs, "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "sin": math.sin,
        "cos": math.cos, "tanh": math.tanh, "sign": lambda x: (x > 0) - (x < 0), "min": min,
        "max": max}


def reference(spec, n, head, n_heads, head_dim, width, values):
    """The positional matrix from the conventions, one entry at a time (plain Python math)."""
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = _entry(spec, i, j, head, n_heads, head_dim, width, values)
    return out


def _rope_entry(theta, k, d, r, s2=1.0):
    return (sum(2 * s2 * math.cos(t * k) for t in theta) + (d - r)) / d


def _entry(spec, i, j, head, n_heads, head_dim, width, values):
    k = i - j
    if isinstance(spec, NoPE):
        return 0.0
    if isinstance(spec, ALiBi):
        s = reference_get_slopes(n_heads)[head] if spec.slopes == "press" else \
            math.exp(-(head + (0 if spec.slopes == "exp0" else 1)) / n_heads)  # exp0: h = 0..H-1
        if spec.direction == "symmetric":
            return -s * abs(k)
        return -s * k if k >= 0 else 0.0
    if isinstance(spec, RelativeBias):
        if spec.mode == "t5":
            return values[exact_bucket(j - i, spec.num_buckets, spec.max_distance)]
        md = spec.max_distance
        return values[max(-md, min(md, k)) + md]
    if isinstance(spec, Custom) and spec.kernel is not None:
        return spec.kernel.evaluate(float(k), MATH)
    if isinstance(spec, Custom):
        return sum(math.cos(f * k) for f in spec.frequencies) / len(spec.frequencies)
    if isinstance(spec, Sinusoidal):
        return sum(math.sin(i * w) * math.sin(j * w) + math.cos(i * w) * math.cos(j * w)
                   for w in [spec.base ** (-2 * m / width) for m in range(width // 2)])
    if isinstance(spec, LearnedAbsolute):
        return float(np.dot(values[i], values[j]))
    if isinstance(spec, RoPE):
        r = 2 * math.floor(spec.fraction * head_dim / 2 + 1e-9)
        planes = r // 2
        kept = max(1, min(planes, round(spec.keep * planes)))
        scaled = rope_scaling_reference.frequencies(spec, r)  # = base^(-2m/r) when unscaled
        theta = [scaled[m] if m < kept else 0.0 for m in range(planes)]
        s2 = rope_scaling_reference.attention_factor(spec) ** 2
        if spec.heads is not None and head >= spec.heads:
            theta, s2 = [0.0] * planes, 1.0
        return _rope_entry(theta, k, head_dim, r, s2)
    if isinstance(spec, MLA):
        r = spec.rope_dim or 2 * max(1, head_dim // 4)
        return _rope_entry([spec.base ** (-2 * m / r) for m in range(r // 2)], k, r, r)
    if isinstance(spec, KerpleLog):
        return -spec.r1 * math.log(1 + spec.r2 * abs(k))
    if isinstance(spec, XPos):      # (1/d) sum_m 2 zeta_m^(k/scale_base) cos(theta_m k)
        return sum(2 * ((2 * m / head_dim + spec.gamma) / (1 + spec.gamma)) ** (k / spec.scale_base)
                   * math.cos(spec.base ** (-2 * m / head_dim) * k)
                   for m in range(head_dim // 2)) / head_dim
    raise AssertionError(f"no reference for {spec.name}: add one when adding a PE")


def values_for(spec, n, width, rng):
    if isinstance(spec, RelativeBias):
        size = spec.num_buckets if spec.mode == "t5" else 2 * spec.max_distance + 1
        return rng.standard_normal(size)
    if isinstance(spec, LearnedAbsolute):
        return rng.standard_normal((n, width))
    return None


ENTRIES = list(derivable_entries()) + [(t, parse_spec(t)) for t in
                                         rope_scaling_reference.scaled_specs(planes=4)]  # head dim 8


@pytest.mark.parametrize("name,spec", ENTRIES, ids=[e[0] for e in ENTRIES])
@pytest.mark.parametrize("n", [1, 7, 33])
def test_every_catalogue_entry_matches_its_reference(name, spec, n):
    head_dim, n_heads, head, width = 8, 3, 2, 12
    kern0 = kernel(spec, n, head=head, n_heads=n_heads, head_dim=head_dim, d_model=width)
    parts = kern0.parts if kern0.kind == "hybrid" else {"": kern0}
    assert kern0.kind == "hybrid" or kern0.coupling in ("none", "additive", "multiplicative")
    for part in parts.values():
        rng = np.random.default_rng(5)
        vals = values_for(part.spec, n, width, rng)
        kern = kernel(part.spec, n, head=head, n_heads=n_heads, head_dim=head_dim, d_model=width,
                      values=vals)
        dense = kern.dense()
        assert dense.shape == (n, n) and np.all(np.isfinite(dense))
        ref = reference(part.spec, n, head, n_heads, head_dim, width, vals)
        # entries are sums of <= width/2 terms of size <= |values|: float64 rounding << 1e-10
        assert np.allclose(dense, ref, rtol=1e-10, atol=1e-10), name
        if kern.toeplitz:
            assert np.array_equal(dense[1:, 1:], dense[:-1, :-1])
            assert np.array_equal(dense[:, 0], kern.column) and np.array_equal(dense[0], kern.row)
        if vals is not None:
            assert kern.source == "given"
        if kern.kind in ("rotary", "position-gram"):
            f = kern.factor()
            assert np.allclose(f @ f.T, dense, rtol=1e-10, atol=1e-10)
            assert f.shape[1] >= np.linalg.matrix_rank(dense) if n > 1 else True


def test_learned_values_are_a_stated_seeded_draw():
    for spec in (RelativeBias(), RelativeBias(mode="table"), LearnedAbsolute()):
        a, b = kernel(spec, 20, seed=3), kernel(spec, 20, seed=3)
        assert a.source == "seeded draw" and a.seed == 3
        assert any("seeded draw" in note for note in a.notes)
        assert np.array_equal(a.dense(), b.dense())
        assert not np.array_equal(a.dense(), kernel(spec, 20, seed=4).dense())
    assert kernel(LearnedAbsolute(), 20).toeplitz is False


@st.composite
def rope_specs(draw):
    head_dim = draw(st.integers(4, 24).map(lambda x: 2 * x))     # >= 8: fraction 1/4 keeps a pair
    spec = RoPE(base=draw(st.floats(2.0, 1e6)), fraction=draw(st.sampled_from([1.0, 0.5, 0.25])),
                keep=draw(st.floats(0.05, 1.0)), pairing=draw(st.sampled_from(["interleaved", "half"])))
    return spec, head_dim, draw(st.integers(1, 40))


@given(rope_specs())
def test_rope_plane_kernels_are_hermitian_rank_one_psd_unit_diagonal(data):
    spec, head_dim, n = data
    kern = kernel(spec, n, head_dim=head_dim)
    for m in range(kern.frequencies.size):
        e = kern.plane(m).dense()
        assert np.array_equal(e, e.conj().T)                      # Hermitian (exactly)
        assert np.allclose(np.diag(e), 1.0, rtol=0, atol=1e-15)   # unit diagonal
        ev = np.linalg.eigvalsh(e)
        # eigenvalues of a unit-modulus rank-one n x n matrix: n and zeros; LAPACK error ~ n eps
        assert ev[-1] == pytest.approx(n, rel=1e-12)
        assert np.all(np.abs(ev[:-1]) <= 1e-12 * n)               # rank one, PSD
        u = np.exp(1j * kern.frequencies[m] * np.arange(n))
        assert np.allclose(e, np.outer(u, u.conj()), rtol=0, atol=1e-12)


@given(rope_specs())
def test_rope_average_kernel_is_psd_unit_diagonal_low_rank(data):
    spec, head_dim, n = data
    kern = kernel(spec, n, head_dim=head_dim)
    k = kern.dense()
    assert np.allclose(np.diag(k), 1.0, rtol=0, atol=1e-14)
    ev = np.linalg.eigvalsh(k)
    assert ev[0] >= -1e-12 * n                                    # PSD up to LAPACK rounding
    assert np.sum(ev > 1e-9 * n) <= kern.rank_bound <= head_dim + 1
    assert np.isclose(ev.sum(), n)                                # trace n


def test_alibi_symbol_at_zero_is_minus_slope_n_n_minus_1():
    for n in (2, 10, 333):
        kern = kernel(ALiBi(), n, n_heads=8, head=0)
        _, f = kern.symbol(4 * n)
        assert f[0] == pytest.approx(-0.5 * n * (n - 1))


@pytest.mark.parametrize("call,match", [
    (lambda: kernel("rope", 0), "positive integer"),
    (lambda: kernel("rope", 10, head_dim=7), "even head dimension"),
    (lambda: kernel("alibi", 10, head=8, n_heads=8), "head must be"),
    (lambda: kernel("custom:kernel=log(k)", 10), "not finite at k=0"),
    (lambda: kernel("custom:kernel=1/k", 10), "not finite"),
    (lambda: kernel("relative_bias", 10, values=np.full(32, np.nan)), "NaN"),
    (lambda: kernel("relative_bias", 10, values=np.ones(5)), "expected 32 values"),
    (lambda: kernel("learned_absolute:max_len=16", 17), "max_len=16"),
    (lambda: kernel("hybrid", 5).dense(), "hybrid"),
    (lambda: kernel("learned_absolute", 5).column, "not Toeplitz"),
])
def test_bad_kernel_requests_are_user_errors(call, match):
    with pytest.raises(PosencError, match=match):
        call()
