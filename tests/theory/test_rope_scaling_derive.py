"""``derive`` of a scaled RoPE states what scaling does to the logit: RoPE's Toeplitz kernel at
rescaled frequencies (proved Toeplitz as before) and, for YaRN / LongRoPE, the attention factor s
on q and k, so every rotary term carries s^2 (YaRN's temperature)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from posenc.encodings import parse_spec
from posenc.theory import derive


@pytest.mark.parametrize("text,says", [
    ("rope:scaling=yarn,factor=4", ["yarn scaling: the kernel is RoPE's Toeplitz kernel",
                                    "attention factor s = log(4)/10 + 1 = 1.13863",
                                    "s^2 = 1.29648", "sum_m s^2 Re["]),
    ("rope:scaling=linear,factor=2", ["theta'_m = theta_m / 2", "angles: theta_0 = 1/2"]),
    ("rope:scaling=dynamic,factor=2,original=16,seq_len=40",
     ["at N = 40 (the length it scales for: another length gives other frequencies)"]),
    ("rope:scaling=longrope,factor=4,original=64,short_factor=1;2,long_factor=3;4",
     ["e = short_factor (seq_len None, original 64)", "s = sqrt(log(4)/log(64) + 1) = 1.1547",
      "s^2 = 1.33333"]),
])
def test_derive_states_the_scaling(text, says):
    form = derive(text)
    out = form.text()
    for phrase in says:
        assert phrase in out, out
    assert all(t.toeplitz.is_toeplitz for t in form.terms)
    # the terms (s^2 on each rotary one) sum to what the model computes (s on q and on k)
    assert all(form.analysis.decomposition_proved)
    assert form.declared_family == form.family == "multiplicative"
    if "s^2" in " ".join(says):
        assert r"s^2\," in form.latex()


def test_linear_and_dynamic_have_no_attention_factor():
    for text in ("rope:scaling=linear,factor=2", "rope:scaling=llama3,factor=8,original=64"):
        out = derive(text).text()
        assert "attention factor" not in out and "s^2" not in out


@given(a=st.sampled_from([0.5, 1.25, 3.0]), seed=st.integers(0, 2**31), n=st.integers(1, 6))
def test_the_attention_factor_multiplies_the_rotary_logit_by_its_square(a, seed, n):
    # same frequencies (yarn, factor 4), attention factor a vs 1: the logits differ by a^2
    # exactly in the maths; float64 evaluation of O(1) sums: 1e-9
    forms = [derive(parse_spec(f"rope:scaling=yarn,factor=4,original=64,attention_factor={x}"),
                    n_heads=2, prove=False) for x in (a, 1.0)]
    rng = np.random.default_rng(seed)
    values = {k: rng.normal(size=tuple(n if s in ("n", "n+") else s for s in shape))
              for k, shape in forms[0].inputs().items()}
    got, one = (f.to_numpy_function()(values) for f in forms)
    np.testing.assert_allclose(got, a * a * one, rtol=1e-9, atol=1e-9)
