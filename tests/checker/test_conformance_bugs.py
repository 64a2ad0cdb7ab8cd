"""``posenc check`` on the bugs real PE code has: each adapter is written here, in
numpy or torch, the way a user would; each bug must be named, each correct variant must pass."""

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from posenc.errors import PosencError
from posenc.checker import check_callable


def props(report):
    return {p.name: p for p in report.properties}


def status(report):
    return {p.name: p.status for p in report.properties}


# --- adapters: RoPE variants (numpy) ----------------------------------------------------------

def make_rope(base=10000.0, pairing="interleaved", offset=0, swap=False, slip=False,
              ignore=None, dim_only=None):
    """RoPE on x (..., seq, d).  offset: positions + offset; swap: sin and cos exchanged; slip:
    theta = base^(-m/d) (the arange(d/2)/d indexing slip); ignore: "all" (no rotation) or
    "arange" (rotate by 0..seq-1 whatever the positions); dim_only: refuse other head dims."""
    def f(x, positions):
        x = np.asarray(x, dtype=np.float64)
        d = x.shape[-1]
        if dim_only is not None and d != dim_only:
            raise ValueError(f"expected head dim {dim_only}, got {d}")
        pos = np.asarray(positions, dtype=np.float64) + offset
        if ignore == "arange":
            pos = np.arange(x.shape[-2], dtype=np.float64)
        m = np.arange(d // 2)
        theta = base ** (-(m / d if slip else 2.0 * m / d))
        ang = pos[:, None] * theta[None, :]                                 # (seq, d/2)
        c, s = np.cos(ang), np.sin(ang)
        if ignore == "all":
            c, s = np.ones_like(c), np.zeros_like(s)
        if swap:
            c, s = s, c
        if pairing == "interleaved":
            a, b = x[..., 0::2], x[..., 1::2]
        else:
            a, b = x[..., : d // 2], x[..., d // 2:]
        ra, rb = a * c - b * s, a * s + b * c
        out = np.empty_like(x)
        if pairing == "interleaved":
            out[..., 0::2], out[..., 1::2] = ra, rb
        else:
            out[..., : d // 2], out[..., d // 2:] = ra, rb
        return out
    return f


# --- adapters: biases (numpy) -----------------------------------------------------------------

def press(H):
    p = 1 << (H.bit_length() - 1)
    pw = lambda q: [2.0 ** (-8.0 * h / q) for h in range(1, q + 1)]  # noqa: E731
    return np.array(pw(p) if p == H else pw(p) + pw(2 * p)[0::2][: H - p])


def rel(n):
    k = np.arange(n)
    return k[:, None] - k[None, :]                                          # i - j


def alibi_no_abs(H, n):                 # bidirectional ALiBi that forgot abs: -s (i - j)
    return -press(H)[:, None, None] * rel(n)[None]


def alibi_symmetric(H, n):
    return -press(H)[:, None, None] * np.abs(rel(n))[None]


def alibi_causal_masked(H, n):
    B = -press(H)[:, None, None] * rel(n)[None]
    return np.where(rel(n)[None] >= 0, B, -np.inf)


def bloom_alibi(H, n):
    """Bloom's build_alibi_tensor: slope * j in every row (a per-row constant away from
    Toeplitz), plus the causal mask the attention adds."""
    B = press(H)[:, None, None] * np.arange(n)[None, None, :] * np.ones((1, n, 1))
    return np.where(rel(n)[None] >= 0, B, -np.inf)


def alibi_over_row(H, n):               # ALiBi divided by (i + 1): not softmax-equivalent
    return alibi_symmetric(H, n) / (np.arange(n)[None, :, None] + 1.0)


def softmax(B):
    B = B - B.max(axis=-1, keepdims=True)
    e = np.exp(B)
    return e / e.sum(axis=-1, keepdims=True)


# --- 1. a missed bug with a false "pass" --------------------------------------------------------

def test_bidirectional_alibi_without_abs_fails_the_form():
    report = check_callable(alibi_no_abs, "bias")
    p = props(report)
    assert not report.ok, report.text()
    assert p["ALiBi form"].status == "fail"
    assert "abs" in p["ALiBi form"].detail and "grows with distance" in p["ALiBi form"].detail
    assert "pass" not in report.text().split("ALiBi form")[1].split("\n")[0]


# --- 2. softmax-equivalent biases pass, others fail --------------------------------------------

def test_bloom_style_bias_is_softmax_equivalent_and_passes():
    # the premise, independently of the checker: its attention equals causal ALiBi's
    for H in (3, 8):
        assert np.allclose(softmax(bloom_alibi(H, 16)), softmax(alibi_causal_masked(H, 16)),
                           atol=1e-12)
    report = check_callable(bloom_alibi, "bias")
    assert report.ok, report.text()
    assert "softmax-equivalent" in props(report)["Toeplitz"].detail
    assert report.summary["direction"] == "causal" and report.summary["schedule"] == "press"


def test_alibi_divided_by_row_index_still_fails():
    assert not np.allclose(softmax(alibi_over_row(4, 16)), softmax(alibi_symmetric(4, 16)))
    report = check_callable(alibi_over_row, "bias")
    assert status(report)["Toeplitz"] == "fail", report.text()
    assert "per-row constant" in props(report)["Toeplitz"].detail


def test_constant_shift_of_alibi_is_alibi():
    report = check_callable(lambda H, n: alibi_symmetric(H, n) + 3.0, "bias")
    assert report.ok and report.summary["schedule"] == "press", report.text()


# --- 3. --expect ----------------------------------------------------------------------------------

def test_expect_base_catches_the_wrong_base():
    rope10k = make_rope(10000.0)
    assert check_callable(rope10k, "rope", dim=16).ok           # conforms: base only printed
    report = check_callable(rope10k, "rope", dim=16, expect="base=500000")
    p = props(report)["expected"]
    assert p.status == "fail" and "base is 10000, expected 500000" in p.detail, report.text()
    assert "logits differ" in p.detail
    assert check_callable(make_rope(500000.0), dim=16, expect="base=500000").ok


def test_expect_names_the_indexing_slip():
    slipped = make_rope(10000.0, slip=True)                      # exactly RoPE with base 100
    assert check_callable(slipped, "rope", dim=16).ok
    report = check_callable(slipped, "rope", dim=16, expect="base=10000")
    p = props(report)["expected"]
    assert p.status == "fail" and "base is 100," in p.detail and "indexing slip" in p.detail


def test_expect_pairing_and_fraction():
    report = check_callable(make_rope(pairing="interleaved"), dim=8,
                            expect="pairing=half,base=10000")
    assert "pairing is interleaved, expected half" in props(report)["expected"].detail
    report = check_callable(make_rope(), dim=8, expect="fraction=0.5")
    assert "8 of 8 dims rotate" in props(report)["expected"].detail
    assert check_callable(make_rope(pairing="half"), dim=8, expect="pairing=half").ok
    # a convention left out of --expect is not demanded: base alone passes a half-split RoPE
    assert check_callable(make_rope(pairing="half"), dim=8, expect="base=10000").ok


def test_expect_catches_an_offset_that_keeps_the_logits():
    report = check_callable(make_rope(offset=1), "rope", dim=8, expect="base=10000")
    p = props(report)["expected"]
    assert p.status == "fail" and "positions start at 1" in p.detail
    # R_{m+1}^T R_{n+1} = R_m^T R_n: the logits cannot show a common offset, and we say so
    assert "logits ⟨f(q,m), f(k,n)⟩ still equal the reference's" in p.detail


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([100.0, 10000.0, 500000.0]), st.sampled_from(["interleaved", "half"]),
       st.sampled_from([4, 8, 12]))
def test_expect_passes_exactly_the_conventions_used(base, pairing, dim):
    f = make_rope(base, pairing)
    assert check_callable(f, dim=dim, expect=f"base={base},pairing={pairing}").ok
    other = 2 * base
    report = check_callable(f, dim=dim, expect=f"base={other},pairing={pairing}")
    assert status(report)["expected"] == "fail"


def test_expect_for_biases():
    assert check_callable(alibi_symmetric, expect="slopes=press,direction=symmetric").ok
    report = check_callable(alibi_symmetric, expect="slopes=exp")
    assert status(report)["expected"] == "fail" and "exp gives" in props(report)["expected"].detail
    report = check_callable(alibi_symmetric, expect="direction=causal")
    assert "direction is symmetric, expected causal" in props(report)["expected"].detail
    assert check_callable(bloom_alibi, expect="slopes=press,direction=causal").ok
    listed = ":".join(repr(float(s)) for s in press(4))
    report = check_callable(alibi_symmetric, expect=f"slopes={listed}")
    assert report.ok and "[4]" in props(report)["expected"].detail
    report = check_callable(alibi_symmetric, expect="slopes=0.5:0.25:0.125:0.0625:0.01")
    assert status(report)["expected"] == "fail"


@pytest.mark.parametrize("expect, needle", [
    ("base", "key=value"), ("base=abc", "not a number"), ("base=0.5", "> 1"),
    ("pairing=diagonal", "interleaved or half"), ("slopes=press,base=10", "mixes"),
    ("color=red", "unknown key 'color'"), ("fraction=2", "(0, 1]"), ("slopes=1:-2", "positive"),
])
def test_bad_expect_is_one_line(expect, needle):
    with pytest.raises(PosencError, match=re.escape(needle)):
        check_callable(alibi_symmetric, expect=expect)


# --- 4. messages that name the bug --------------------------------------------------------------

@pytest.mark.parametrize("variant, words", [
    (dict(swap=True), "sin and cos look swapped"),
    (dict(ignore="arange"), "the positions are ignored"),
    (dict(ignore="all"), "the positions are ignored"),
    (dict(offset=1), "positions start at 1"),
])
def test_position_bugs_are_named(variant, words):
    report = check_callable(make_rope(**variant), "rope", dim=8)
    p = props(report)["uses positions"]
    assert p.status == "fail" and words in p.detail, report.text()


def test_offset_rope_still_recovers_its_frequencies():
    report = check_callable(make_rope(offset=1), "rope", dim=16)
    st_ = status(report)
    assert st_["frequencies"] == "pass" and report.summary["base"] == 10000.0, report.text()
    assert st_["float32 drift"] == "pass" and st_["shift invariance"] == "pass"


def test_ignored_positions_do_not_blame_the_frequencies():
    report = check_callable(make_rope(ignore="arange"), "rope", dim=8)
    assert status(report)["frequencies"] == "n/a", report.text()


@pytest.mark.parametrize("heads_used, words", [(lambda H: H + 1, "of H+1"),
                                               (lambda H: H - 1, "of H−1")])
def test_slope_hints_for_one_head_too_many_or_too_few(heads_used, words):
    def g(H, n):
        Hs = heads_used(H) or 1             # `n_heads - 1 or 1`: H = 1 keeps its own slope
        s = 2.0 ** (-8.0 * np.arange(1, H + 1) / Hs)
        return -s[:, None, None] * np.abs(rel(n))[None]
    report = check_callable(g, "bias")
    p = props(report)["slope schedule"]
    assert p.status == "fail" and words in p.detail, report.text()


# --- 5. contract errors first -------------------------------------------------------------------

def test_wrong_shape_bias_reports_the_bias_error_alone():
    def g(n_heads, n):
        return np.zeros((n_heads, 1, n))
    with pytest.raises(PosencError) as err:
        check_callable(g)
    text = str(err.value)
    assert "g(2, 4) returned shape (2, 1, 4), not (2, 4, 4)" in text
    assert "rotary" not in text and "x of shape" not in text


def test_rope_error_has_no_bias_attempt_message():
    def f(x, positions):
        raise ValueError("my rotary complaint")
    with pytest.raises(PosencError) as err:
        check_callable(f)
    assert "my rotary complaint" in str(err.value)
    assert "as a bias function" not in str(err.value) and "g(2, 4)" not in str(err.value)


def test_llama_native_four_axis_layout_is_accepted():
    """HF Llama style: cos/sin of shape (1, seq, d) unsqueezed at dim 1, so the output keeps
    the shape of x only for x of shape (b, heads, seq, d)."""
    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def f(x, positions):
        d = x.shape[-1]
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        freqs = positions.double()[None, :, None] * inv[None, None, :]     # (1, seq, d/2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)           # (1, 1, seq, d)
        return x * cos + rotate_half(x) * sin
    report = check_callable(f, "rope", dim=16)
    assert report.ok, report.text()
    assert "4 axes" in props(report)["shape"].detail and report.summary["pairing"] == "half"


def test_adapter_hard_coded_to_128_dims_hears_about_dim():
    with pytest.raises(PosencError, match=r"--head-dim 128"):
        check_callable(make_rope(dim_only=128), "rope")
    assert check_callable(make_rope(dim_only=128), "rope", dim=128).ok


# --- 6. smaller ---------------------------------------------------------------------------------

def test_unseeded_bias_is_non_deterministic_not_length_dependent():
    def g(H, n):
        return alibi_symmetric(H, n) + np.random.default_rng().normal(size=(H, n, n))
    report = check_callable(g, "bias")
    p = props(report)
    assert p["deterministic"].status == "fail" and "unseeded" in p["deterministic"].detail
    assert "length independent" not in p


NEG_ZERO = re.compile(r"(?<![\w.])-0(?![\d.e])")


@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(0.1, 2.0), min_size=3, max_size=3))
def test_no_negative_zero_in_counterexamples(values):
    """A learned (T5-like) bias with a non-zero diagonal: its 'not linear in the distance'
    counterexample used to read '−slope·0 = -0'."""
    def g(H, n):
        k = np.abs(rel(n))
        table = np.array([values[0], -values[1], values[2]] + [-1.0] * n)
        return np.broadcast_to(table[np.minimum(k, n)], (H, n, n)).copy()
    text = check_callable(g, "bias").text()
    assert not NEG_ZERO.search(text), text


def test_front_door_check_takes_a_callable_or_an_impl_string_with_expect():
    import posenc
    from posenc.checker import ConformanceReport

    report = posenc.check(alibi_symmetric, expect="slopes=press")
    assert isinstance(report, ConformanceReport) and report.ok
    assert report.to_dict()["ok"] is True and "conforms" in report.text()
    bad = posenc.check(alibi_symmetric, expect="slopes=exp")
    assert not bad.ok and [p.name for p in bad.failures] == ["expected"]


@pytest.mark.parametrize("dim", [100000, 5, 0])
def test_head_dim_is_bounded_before_anything_is_allocated(dim):
    # --dim 100000 used to build 24 rotation matrices of 100000² entries
    with pytest.raises(PosencError, match="--head-dim must be an even number in"):
        check_callable(make_rope(), "rope", dim=dim)
