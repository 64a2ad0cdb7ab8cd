"""``posenc check`` knows scaled RoPE (posenc.encodings.rope_scaling).

A correct linear / YaRN / Llama-3 rotary function -- written here like transformers'
``ROPE_INIT_FUNCTIONS`` and ``apply_rotary_pos_emb`` (half pairing, cos and sin times the attention
factor), and through transformers itself when it is installed -- passes with the matching
``--expect scaling=..,factor=..``; a wrong factor fails naming the expected and the found one;
without --expect the scaling is named (still a failure: plain RoPE was checked).

Tolerances are the checker's own (rope.TOL, FREQ_TOL); the float32 frequencies of transformers
are within them (tests/test_rope_scaling_transformers.py: ~1e-6 relative)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from posenc.checker import check_callable
from posenc.checker.expect import parse_expect
from posenc.checker.rope_scale import constant_scale
from posenc.checker.rope_scaled_frequency import name_scaling, per_band_factor, uniform_factor
from posenc.encodings import RoPE
from posenc.errors import PosencError
from posenc.numerics.conventions import rope_frequencies


def props(report):
    return {p.name: p for p in report.properties}


# --- the user's code, written like transformers' (modeling_rope_utils, 5.x) ---------------------

def hf_linear(dim, base=10000.0, factor=4.0):
    inv_freq = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    return inv_freq / factor, 1.0


def hf_yarn(dim, base=10000.0, factor=4.0, original=4096, beta_fast=32.0, beta_slow=1.0):
    attention_factor = 0.1 * math.log(factor) + 1.0

    def find_correction_dim(num_rotations):
        return (dim * math.log(original / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    pos_freqs = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp
    inv_freq = (inv_freq_interpolation * (1 - extrapolation_factor)
                + inv_freq_extrapolation * extrapolation_factor)
    return inv_freq, attention_factor


def hf_ntk(dim, base=10000.0, factor=4.0):
    """Static NTK-aware: transformers' dynamic NTK at the length where its ratio is the factor."""
    base = base * factor ** (dim / (dim - 2))
    return 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)), 1.0


def hf_llama3(dim, base=500000.0, factor=8.0, original=8192, low_freq_factor=1.0,
              high_freq_factor=4.0):
    inv_freq = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    low_freq_wavelen = original / low_freq_factor
    high_freq_wavelen = original / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (original / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * inv_freq_llama / factor + smooth * inv_freq_llama
    medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return np.where(medium, smoothed, inv_freq_llama), 1.0


def rotary(init, fraction=1.0, **kw):
    """apply_rotary_pos_emb with rotate_half; the cos/sin tables times the attention factor."""
    def f(x, positions):
        d = x.shape[-1]
        r = int(d * fraction)
        inv_freq, s = init(r, **kw)
        freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
        emb = np.concatenate([freqs, freqs], -1)
        cos, sin = np.cos(emb) * s, np.sin(emb) * s
        xr, xp = x[..., :r], x[..., r:]
        x1, x2 = xr[..., : r // 2], xr[..., r // 2:]
        rotate_half = np.concatenate([-x2, x1], -1)
        return np.concatenate([xr * cos + rotate_half * sin, xp], -1)
    return f


LINEAR = rotary(hf_linear)
YARN = rotary(hf_yarn)


# --- --expect scaling=...: the correct ones pass, a wrong factor fails naming both -------------

@pytest.mark.parametrize("fn, expect", [
    (LINEAR, "scaling=linear,factor=4"),
    (YARN, "scaling=yarn,factor=4,original=4096"),
    (rotary(hf_yarn, factor=16.0, original=2048), "scaling=yarn,factor=16,original=2048"),
    (rotary(hf_llama3), "base=500000,scaling=llama3,factor=8,original=8192"),
    (rotary(hf_yarn, fraction=0.5), "scaling=yarn,factor=4"),
    (rotary(hf_ntk), "scaling=ntk,factor=4"),
])
def test_a_correct_scaled_rope_passes_with_its_expect(fn, expect):
    report = check_callable(fn, "rope", dim=32, expect=expect)
    assert report.ok, report.text()
    p = props(report)
    assert p["expected"].status == "pass" and p["float32 drift"].status == "pass", report.text()
    assert "scaled frequencies of rope:" in p["frequencies"].detail


def test_yarns_attention_factor_is_accepted_as_the_expected_one():
    report = check_callable(YARN, "rope", dim=32, expect="scaling=yarn,factor=4")
    p = props(report)["norm preservation"]
    s = 0.1 * math.log(4) + 1
    assert p.status == "pass" and f"s = {s:.6g}" in p.detail, report.text()
    assert report.summary["attention_factor"] == pytest.approx(s, rel=1e-12)


def test_a_wrong_linear_factor_fails_naming_expected_and_found():
    report = check_callable(LINEAR, "rope", dim=32, expect="scaling=linear,factor=2")
    assert not report.ok
    p = props(report)["frequencies"]
    assert p.status == "fail", report.text()
    assert "found: frequencies are base^(−2m/r)/4 " in p.detail, p.detail
    assert "expected: frequencies are base^(−2m/r)/2 " in p.detail, p.detail
    assert props(report)["expected"].status == "fail"


def test_a_wrong_yarn_factor_fails_naming_expected_and_found():
    report = check_callable(YARN, "rope", dim=32, expect="scaling=yarn,factor=2")
    p = props(report)
    norm, freq = p["norm preservation"], p["frequencies"]
    s4, s2 = 0.1 * math.log(4) + 1, 0.1 * math.log(2) + 1
    assert norm.status == "fail" and f"s = {s4:.6g}" in norm.detail, report.text()
    assert f"has s = {s2:.6g}" in norm.detail, norm.detail
    assert freq.status == "fail" and "found: planes" in freq.detail, freq.detail
    assert "per-band factor from 1 to 4" in freq.detail.split("expected:")[0], freq.detail
    assert "per-band factor from 1 to 2" in freq.detail.split("expected:")[1], freq.detail


def test_a_missing_attention_factor_fails_the_yarn_expectation():
    no_s = rotary(lambda d, **kw: (hf_yarn(d, **kw)[0], 1.0))
    report = check_callable(no_s, "rope", dim=32, expect="scaling=yarn,factor=4")
    p = props(report)
    assert p["frequencies"].status == "pass", report.text()
    assert p["expected"].status == "fail" and "attention factor s = 1 " in p["expected"].detail
    ok = check_callable(no_s, "rope", dim=32, expect="scaling=yarn,factor=4,attention_factor=1")
    assert ok.ok, ok.text()


# --- without --expect: the scaling is named ---------------------------------------------------

def test_linear_scaling_is_named_without_expect():
    report = check_callable(LINEAR, "rope", dim=32)
    p = props(report)["frequencies"]
    assert p.status == "fail" and "linear scaling ×4 (position interpolation)?" in p.detail
    assert "base^(−2m/r)/4 with base 10000" in p.detail, p.detail


def test_yarn_is_named_without_expect_and_its_scale_does_not_fail_the_positions():
    report = check_callable(YARN, "rope", dim=32)
    p = props(report)
    assert p["uses positions"].status == "pass", report.text()
    assert p["pairing"].status == "pass"
    norm = p["norm preservation"]
    assert norm.status == "fail" and "‖f(x,p)‖ = 1.13863 ‖x‖ at every p" in norm.detail
    assert "an attention factor s (YaRN's 0.1 ln F + 1 with F = 4" in norm.detail, norm.detail
    freq = p["frequencies"]
    assert freq.status == "fail" and "per-band factor from 1 to 4: YaRN / Llama-3" in freq.detail


def test_a_scale_of_no_yarn_factor_is_named_an_attention_factor_only():
    s = math.sqrt(1 + math.log(4) / math.log(4096))                         # LongRoPE's default
    f = rotary(lambda d: (hf_linear(d)[0], s))
    norm = props(check_callable(f, "rope", dim=16))["norm preservation"]
    assert norm.status == "fail" and f"= {s:.6g} ‖x‖ at every p" in norm.detail, norm.detail
    assert "a constant scale of a rotation: an attention factor s" in norm.detail
    assert "with F =" not in norm.detail


def test_llama3_is_named_as_a_per_band_factor():
    report = check_callable(rotary(hf_llama3), "rope", dim=32)
    freq = props(report)["frequencies"]
    assert "per-band factor from 1 to 8" in freq.detail and "base 500000" in freq.detail, freq.detail
    assert props(report)["norm preservation"].status == "pass"


def test_a_scale_that_varies_with_position_is_not_an_attention_factor():
    def f(x, positions):
        return LINEAR(x, positions) * (1.1 + 0.01 * np.asarray(positions))[:, None]
    report = check_callable(f, "rope", dim=16)
    assert "not orthogonal" in props(report)["norm preservation"].detail
    assert "attention factor" not in props(report)["norm preservation"].detail


# --- the pieces -------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(base=st.sampled_from([10000.0, 500000.0, 1e6]), factor=st.floats(1.5, 64),
       half_r=st.integers(2, 64))
def test_a_uniform_factor_is_recovered(base, factor, half_r):
    r = 2 * half_r
    theta = rope_frequencies(RoPE(base=base, scaling="linear", factor=factor), r)
    m = np.arange(half_r)
    got_base, got_factor = uniform_factor(m, theta, r)
    assert got_base == pytest.approx(base, rel=1e-9) and got_factor == pytest.approx(factor, rel=1e-9)
    assert per_band_factor(m, rope_frequencies(RoPE(base=base), r), r) is None
    assert name_scaling(m, rope_frequencies(RoPE(base=base), r), r) == ""


@settings(max_examples=40, deadline=None)
@given(factor=st.floats(1.5, 64), original=st.sampled_from([2048, 4096, 32768]),
       half_r=st.integers(8, 64))
def test_yarns_per_band_factor_is_recovered(factor, original, half_r):
    r = 2 * half_r
    spec = RoPE(scaling="yarn", factor=factor, original=original)
    theta = rope_frequencies(spec, r)
    band = per_band_factor(np.arange(half_r), theta, r)
    top = 1 / (theta[-1] / 10000.0 ** (-2.0 * (half_r - 1) / r))           # the last plane's
    assert band is not None and band["base"] == 10000.0
    assert band["factor"] == pytest.approx(top, rel=1e-12)
    assert uniform_factor(np.arange(half_r), theta, r) is None


def test_constant_scale_reads_the_scaled_dims_only():
    M = np.tile(np.eye(6), (3, 1, 1))
    M[:, :4] *= 1.2
    assert np.allclose(constant_scale(M), [1.2] * 4 + [1, 1])
    assert constant_scale(np.tile(np.eye(6), (3, 1, 1))) is None
    M[1] *= 1.1                          # not the same at every position
    assert constant_scale(M) is None


def test_scaling_keys_are_the_catalogues():
    e = parse_expect("scaling=yarn,factor=4,original=2048,beta_fast=16")
    assert e == {"scaling": "yarn", "factor": 4.0, "original": 2048, "beta_fast": 16.0,
                 "kind": "rope"}
    e = parse_expect("scaling=longrope,factor=2,short_factor=1:1,long_factor=2;2")
    assert e["short_factor"] == [1.0, 1.0] and e["long_factor"] == [2.0, 2.0]


@pytest.mark.parametrize("text, needle", [
    ("scaling=bogus", "scaling must be one of"),
    ("factor=4", "factor needs a scaling"),
    ("scaling=linear,factor=-1", "factor must be a positive number"),
    ("scaling=linear,beta_fast=3", "beta_fast needs scaling=yarn"),
    ("scaling=yarn,factor=4,factor=2", "factor given twice"),
])
def test_bad_scaling_expect_is_one_line(text, needle):
    with pytest.raises(PosencError) as exc:
        parse_expect(text)
    assert needle in str(exc.value) and "\n" not in str(exc.value), str(exc.value)


def test_bad_scaling_expect_exits_2(main):
    out = main("check", "posenc.checker:check_callable", "--expect", "scaling=yarn,factor=0")
    assert out.returncode == 2 and "factor must be a positive number" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


# --- through transformers itself -------------------------------------------------------------

def _transformers_rotary(kind, **params):
    transformers = pytest.importorskip("transformers")
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")

    def init(dim):
        config = transformers.LlamaConfig(
            hidden_size=4 * dim, num_attention_heads=4, head_dim=dim,
            max_position_embeddings=4096 * 4,
            rope_parameters={"rope_type": kind, "rope_theta": 10000.0, **params})
        inv, s = rope_utils.ROPE_INIT_FUNCTIONS[kind](config, "cpu")
        return inv.double().numpy(), float(s)
    return rotary(init)


@pytest.mark.parametrize("kind, params, expect", [
    ("linear", {"factor": 4.0}, "scaling=linear,factor=4"),
    ("yarn", {"factor": 4.0, "original_max_position_embeddings": 4096},
     "scaling=yarn,factor=4,original=4096"),
])
def test_transformers_scaled_rope_passes_with_its_expect(kind, params, expect):
    fn = _transformers_rotary(kind, **params)
    report = check_callable(fn, "rope", dim=32, expect=expect)
    assert report.ok, report.text()
    wrong = check_callable(fn, "rope", dim=32, expect=expect.replace("factor=4", "factor=8"))
    assert not wrong.ok and props(wrong)["frequencies"].status == "fail", wrong.text()


# --- rope-qk: f(q, k, positions) with a stated scaling ---------------------------------------

def qk_of(init, q_offset=0, **kw):
    """``apply_rotary_pos_emb(q, k, cos, sin)``: one scaled table for both, q at positions +
    ``q_offset`` (0: correct; else the KV-cache offset bug)."""
    side = rotary(init, **kw)

    def f(q, k, positions):
        p = np.asarray(positions)
        return side(q, p + q_offset), side(k, p)
    return f


@pytest.mark.parametrize("init, params, expect", [
    (hf_linear, {}, "scaling=linear,factor=4"),
    (hf_yarn, {}, "scaling=yarn,factor=4,original=4096"),
    (hf_llama3, {}, "base=500000,scaling=llama3,factor=8,original=8192"),
    # (NTK changes the base: the base must be stated, or the recovered one is taken as it)
    (hf_ntk, {}, "base=10000,scaling=ntk,factor=4"),
])
def test_rope_qk_takes_a_stated_scaling(init, params, expect):
    report = check_callable(qk_of(init, **params), "rope-qk", dim=32, expect=expect)
    assert report.ok, report.text()
    p = props(report)
    assert "scaled frequencies of rope:" in p["frequencies"].detail, report.text()
    assert p["expected"].status == "pass"
    wrong = expect.replace("factor=4", "factor=2").replace("factor=8", "factor=2")
    bad = check_callable(qk_of(init, **params), "rope-qk", dim=32, expect=wrong)
    assert not bad.ok and props(bad)["frequencies"].status == "fail", bad.text()


def test_rope_qk_reads_yarns_attention_factor_on_both_sides():
    report = check_callable(qk_of(hf_yarn), "rope-qk", dim=32,
                            expect="scaling=yarn,factor=4,original=4096")
    s = 0.1 * math.log(4) + 1
    for side in ("q", "k"):
        p = props(report)[f"norm preservation ({side})"]
        assert p.status == "pass" and f"s = {s:.6g}" in p.detail, report.text()
        assert report.summary[f"attention_factor_{side}"] == pytest.approx(s, rel=1e-12)
    # without --expect the factor is a failure of norm preservation, named, not a crash
    plain = check_callable(qk_of(hf_yarn), "rope-qk", dim=32)
    assert props(plain)["norm preservation (q)"].status == "fail"
    assert "not orthogonal" in props(plain)["norm preservation (q)"].detail


def test_rope_qk_with_a_scaling_still_names_the_kv_cache_offset():
    report = check_callable(qk_of(hf_linear, q_offset=5), "rope-qk", dim=32,
                            expect="scaling=linear,factor=4")
    p = props(report)["same rotation for q and k"]
    assert p.status == "fail" and "KV-cache offset" in p.detail, report.text()


def test_transformers_apply_rotary_pos_emb_passes_as_rope_qk_with_its_scaling():
    side = _transformers_rotary("yarn", factor=4.0, original_max_position_embeddings=4096)

    def f(q, k, positions):
        return side(q, positions), side(k, positions)
    report = check_callable(f, "rope-qk", dim=32, expect="scaling=yarn,factor=4,original=4096")
    assert report.ok, report.text()
    wrong = check_callable(f, "rope-qk", dim=32, expect="scaling=yarn,factor=8,original=4096")
    assert not wrong.ok, wrong.text()


@pytest.mark.parametrize("scaled_side", ["q", "k"])
def test_rope_qk_refuses_an_attention_factor_on_one_side_only(scaled_side):
    """transformers multiplies cos and sin of both q and k by YaRN's factor s (the logit gets s^2);
    one side scaled gives the logit s: a bug, whatever the expected scaling."""
    side = rotary(hf_yarn)
    s = 0.1 * math.log(4) + 1

    def f(q, k, positions):
        q2, k2 = side(q, positions), side(k, positions)
        return (q2, k2 / s) if scaled_side == "q" else (q2 / s, k2)
    report = check_callable(f, "rope-qk", dim=32, expect="scaling=yarn,factor=4,original=4096")
    assert not report.ok, report.text()
    p = props(report)["same factor for q and k"]
    assert p.status == "fail" and f"only {scaled_side} is scaled" in p.detail, report.text()
    both = check_callable(qk_of(hf_yarn), "rope-qk", dim=32,
                          expect="scaling=yarn,factor=4,original=4096")
    assert props(both)["same factor for q and k"].status == "pass"
