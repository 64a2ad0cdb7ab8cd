"""Torch PE components against loop references written from the catalogue's conventions."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from empirical_reference import (alibi_slopes_ref, rope_planes_ref, rotate_ref, sinusoidal_ref,
                                 t5_bucket_ref, MATH)
from posenc.encodings import RoPE
from posenc.errors import PosencError
from posenc.encodings.expression import Expr
from posenc.empirical.model.pe import (AlibiBias, KernelBias, TableBias, alibi_slopes, sinusoidal_table,
                                 t5_buckets)
from posenc.empirical.model.pe.rotary import frequency_rotary, rope_rotary


def test_alibi_slopes_match_the_alibi_papers_code_for_six_heads():
    # Press et al.'s get_slopes(6): slopes of 4 heads, then every other slope of 8 heads.
    assert alibi_slopes(6, "press") == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]


@given(st.integers(1, 40), st.sampled_from(["press", "exp"]))
def test_alibi_slopes_match_reference(n, schedule):
    assert alibi_slopes(n, schedule) == pytest.approx(alibi_slopes_ref(n, schedule), rel=1e-15)


@given(st.integers(1, 12), st.sampled_from(["press", "exp"]), st.sampled_from(["symmetric", "causal"]),
       st.integers(0, 50))
def test_alibi_bias_matrix(n_heads, schedule, direction, offset):
    T = 7
    B = AlibiBias(n_heads, schedule, direction)(T, offset, torch.float64)
    slopes = alibi_slopes_ref(n_heads, schedule)
    for h in range(n_heads):
        for i in range(T):
            for j in range(T):
                d = abs(i - j) if direction == "symmetric" else max(i - j, 0)
                assert float(B[h, i, j]) == pytest.approx(-slopes[h] * d, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("nb,md", [(32, 128), (8, 20), (4, 3), (16, 9), (64, 500)])
def test_t5_buckets_match_python_reference(nb, md):
    rel = torch.arange(-700, 701)
    got = t5_buckets(rel, nb, md)
    want = [t5_bucket_ref(int(r), nb, md) for r in rel]
    assert got.tolist() == want
    assert int(got.min()) >= 0 and int(got.max()) < nb


def test_t5_rejects_max_distance_inside_the_exact_range():
    with pytest.raises(PosencError, match="max_distance"):
        t5_buckets(torch.arange(3), 32, 8)


def test_table_bias_clips_offsets():
    tb = TableBias(2, max_distance=3)
    idx = tb.index(9)
    for i in range(9):
        for j in range(9):
            assert int(idx[i, j]) == max(-3, min(3, i - j)) + 3


rope_specs = st.builds(RoPE, base=st.sampled_from([10.0, 10000.0, 500000.0]),
                       fraction=st.sampled_from([1.0, 0.5, 0.75, 0.3]),
                       pairing=st.sampled_from(["interleaved", "half"]),
                       heads=st.sampled_from([None, 1, 2]), keep=st.sampled_from([1.0, 0.5, 0.25]))


@given(rope_specs, st.sampled_from([4, 8, 10]), st.integers(0, 300), st.integers(0, 2 ** 31))
def test_rotary_equals_explicit_rotation_matrices(spec, head_dim, offset, seed):
    H, T = 3, 5
    if 2 * math.floor(spec.fraction * head_dim / 2 + 1e-9) < 2:
        with pytest.raises(PosencError, match="no rotary pair"):
            rope_rotary(spec, head_dim, H)
        return
    rot = rope_rotary(spec, head_dim, H)
    x = torch.randn(2, H, T, head_dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    got = rot(x, offset)
    for h in range(H):
        planes = rope_planes_ref(spec, head_dim, h, H)
        for b in range(2):
            for t in range(T):
                want = rotate_ref(x[b, h, t], planes, t + offset)
                # float64 throughout; angles up to ~300 rad: error ~1e-13
                assert torch.allclose(got[b, h, t], want, atol=1e-11)


@given(rope_specs, st.integers(0, 200), st.integers(0, 200), st.integers(-100, 100), st.integers(0, 2 ** 31))
def test_rope_logit_depends_only_on_the_offset(spec, i, j, t, seed):
    """<R_i q, R_j k> = <R_{i+t} q, R_{j+t} k>: the relative property."""
    head_dim = 8
    rot = rope_rotary(spec, head_dim, 1)
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(head_dim, generator=g, dtype=torch.float64), torch.randn(head_dim, generator=g,
                                                                               dtype=torch.float64)

    def logit(a, b):
        qa = rot(q.view(1, 1, 1, -1), a)
        kb = rot(k.view(1, 1, 1, -1), b)
        return float((qa * kb).sum())
    if min(i + t, j + t) < 0:
        return
    assert logit(i, j) == pytest.approx(logit(i + t, j + t), abs=1e-9)


def test_rope_rejects_odd_head_dim_and_custom_frequencies_too_many():
    with pytest.raises(PosencError, match="even head dimension"):
        rope_rotary(RoPE(), 7, 2)
    with pytest.raises(PosencError, match="frequencies"):
        frequency_rotary((1.0, 0.5, 0.25), 4, 2)


@given(st.integers(1, 17), st.sampled_from([10.0, 10000.0]), st.integers(0, 40))
def test_sinusoidal_table_layout(D, base, offset):
    T = 6
    got = sinusoidal_table(torch.arange(offset, offset + T), D, base)
    assert torch.allclose(got, sinusoidal_ref(T, D, base, offset), atol=1e-12)


@pytest.mark.parametrize("text", ["-0.1*abs(k)", "exp(-abs(k)/3)", "max(-abs(k), -2) + 0.5",
                                  "sin(k) * cos(k/2)", "2", "-log(1 + abs(k))", "min(k, 1) ** 2"])
def test_custom_kernel_bias_matches_math_evaluation(text):
    T = 9
    B = KernelBias(Expr(text))(T, 0, torch.float64)
    for i in range(T):
        for j in range(T):
            assert float(B[0, i, j]) == pytest.approx(Expr(text).evaluate(float(i - j), MATH), abs=1e-12)


def test_custom_kernel_not_finite_is_a_user_error():
    with pytest.raises(PosencError, match="not finite at k = 0"):
        KernelBias(Expr("log(abs(k))"))(4)


def test_custom_frequencies_rotate_planes_in_order():
    rot = frequency_rotary((1.0, 0.25), 6, 1)
    x = torch.randn(1, 1, 3, 6, dtype=torch.float64)
    got = rot(x, 2)
    planes = [(0, 1, 1.0), (2, 3, 0.25)]
    for t in range(3):
        assert torch.allclose(got[0, 0, t], rotate_ref(x[0, 0, t], planes, t + 2), atol=1e-12)
    assert math.isclose(float(rot.thetas[0, 1]), 0.25)
