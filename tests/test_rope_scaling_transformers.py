"""Scaled RoPE against transformers' own ``ROPE_INIT_FUNCTIONS`` (the conventions the catalogue
follows, DESIGN.md): for each scaling kind, the frequencies and the attention factor of the theory
(sympy), numerics (numpy) and empirical (torch) layers equal those transformers computes for the
same config, built as a tiny ``LlamaConfig`` with ``rope_parameters``.  Skipped without
transformers (the ``thirdparty`` extra: ``pip install -e ".[train,test,thirdparty]"``).

Tolerance: transformers computes the frequencies in float32 (``base ** (arange / dim)`` in
float32: relative error up to a few ulp times |(2m/r) ln base| <= 13 for base 5e5, ~1e-6); we
allow 1e-5 relative.  The attention factor is a Python float in both: 1e-12."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

transformers = pytest.importorskip("transformers")
rope_utils = pytest.importorskip("transformers.modeling_rope_utils")

from posenc.empirical.model.pe import rope_scaling as torch_scaling  # noqa: E402
from posenc.encodings import RoPE, parse_spec  # noqa: E402
from posenc.numerics import conventions as cv  # noqa: E402
from posenc.theory import rope_scaling as sym_scaling  # noqa: E402

logging.getLogger("transformers").setLevel(logging.ERROR)   # factor < 1 etc. only warn there


def transformers_rope(spec: RoPE, head_dim: int) -> tuple[np.ndarray, float]:
    """transformers' (inv_freq, attention_factor) for the config that states ``spec``."""
    kind = "dynamic" if spec.scaling == "ntk" else spec.scaling
    params = {"rope_type": kind, "rope_theta": spec.base, "factor": spec.factor}
    if spec.fraction != 1:
        params["partial_rotary_factor"] = spec.fraction
    max_pos, seq_len = int(spec.original * max(spec.factor, 1.0)) + 1, None
    if spec.scaling == "ntk":
        # static NTK is dynamic NTK at the length N where (f N / L) - (f - 1) = f: N = L (2f-1)/f
        max_pos, seq_len = spec.original, spec.original * (2 * spec.factor - 1) / spec.factor
    if spec.scaling == "dynamic":
        max_pos, seq_len = spec.original, spec.seq_len
    if kind in ("yarn", "llama3", "longrope"):
        params["original_max_position_embeddings"] = spec.original
    if kind == "yarn":
        params.update(beta_fast=spec.beta_fast, beta_slow=spec.beta_slow)
    if kind == "llama3":
        params.update(low_freq_factor=spec.low_freq_factor, high_freq_factor=spec.high_freq_factor)
    if kind == "longrope":
        params.update(short_factor=list(spec.short_factor), long_factor=list(spec.long_factor))
        seq_len = spec.seq_len
    if kind in ("yarn", "longrope") and spec.attention_factor is not None:
        params["attention_factor"] = spec.attention_factor
    config = transformers.LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4,
                                      head_dim=head_dim, max_position_embeddings=max_pos,
                                      rope_parameters=params)
    inv_freq, s = rope_utils.ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len=seq_len)
    return inv_freq.double().numpy(), float(s)


def layer_values(spec: RoPE, d: int) -> dict[str, tuple[np.ndarray, float]]:
    r = spec.rotary_dims(d)
    return {"numerics": (cv.rope_frequencies(spec, d), cv.rope_attention_factor(spec)),
            "empirical": (torch_scaling.scaled_frequencies(spec, r).numpy(),
                          torch_scaling.attention_factor(spec)),
            "theory": (np.array([float(t) for t in sym_scaling.scaled_angles(spec, r)]),
                       float(sym_scaling.attention_factor(spec)))}


@st.composite
def configs(draw):
    kind = draw(st.sampled_from(["linear", "ntk", "dynamic", "yarn", "llama3", "longrope"]))
    fraction = draw(st.sampled_from([1.0, 0.5]))
    # NTK-aware scaling raises the base to the power r/(r-2): at r = 2 rotary dims transformers
    # divides by zero and posenc refuses the spec (test_ntk_needs_four_rotary_dims), so the
    # comparison starts at r = 4
    smallest = 2 if kind in ("ntk", "dynamic") and fraction < 1 else 1
    d = 4 * draw(st.integers(smallest, 32))
    kw = dict(scaling=kind, base=draw(st.sampled_from([10000.0, 500000.0, 1e6])),
              factor=draw(st.sampled_from([1.0, 2.0, 4.0, 8.0, 16.0, 40.0])),
              fraction=fraction)
    if kind not in ("linear", "ntk"):
        kw["original"] = draw(st.sampled_from([512, 2048, 4096, 8192, 32768]))
    if kind in ("dynamic", "longrope"):
        kw["seq_len"] = draw(st.sampled_from([100, 4096, 9000, 131072]))
    if kind == "yarn":
        kw.update(beta_fast=draw(st.sampled_from([32.0, 16.0, 4.0])),
                  beta_slow=draw(st.sampled_from([1.0, 2.0])))
    if kind in ("yarn", "longrope"):
        kw["attention_factor"] = draw(st.sampled_from([None, 1.25]))
    if kind == "llama3":
        low = draw(st.sampled_from([1.0, 2.0]))       # high = low: Llama 4 (transformers warns)
        kw.update(low_freq_factor=low, high_freq_factor=draw(st.sampled_from([low, 4.0, 8.0])))
    if kind == "longrope":
        r = 2 * int(kw["fraction"] * d / 2)
        fs = st.lists(st.floats(1.0, 64.0), min_size=r // 2, max_size=r // 2).map(tuple)
        kw.update(short_factor=draw(fs), long_factor=draw(fs))
    return RoPE(**kw), d


@given(case=configs())
def test_every_layer_equals_transformers(case):
    spec, d = case
    want, s = transformers_rope(spec, d)
    for layer, (freqs, factor) in layer_values(spec, d).items():
        np.testing.assert_allclose(freqs, want, rtol=1e-5, atol=0, err_msg=layer)
        assert math.isclose(factor, s, rel_tol=1e-12), (layer, factor, s)


@pytest.mark.parametrize("kind", ["ntk", "dynamic"])
def test_ntk_needs_four_rotary_dims(kind):
    """Where transformers' NTK formula divides by r - 2 = 0, posenc refuses the spec in one line."""
    from posenc.errors import PosencError
    extra = {"seq_len": 9000} if kind == "dynamic" else {}
    with pytest.raises(PosencError, match="at least 4 rotary dims"):
        cv.rope_frequencies(RoPE(scaling=kind, factor=4.0, fraction=0.5, **extra), 4)
    with pytest.raises(ZeroDivisionError):
        transformers_rope(RoPE(scaling=kind, factor=4.0, fraction=0.5, **extra), 4)


#: the settings of released models: Llama 3.1 (8B), YaRN as in the issue, Phi-3-style LongRoPE
MODELS = [
    "rope:base=500000,scaling=llama3,factor=8,original=8192",
    # Llama 4 Scout: low_freq_factor = high_freq_factor = 1 (no band between the two)
    "rope:base=500000,scaling=llama3,factor=16,original=8192,low_freq_factor=1,high_freq_factor=1",
    "rope:scaling=yarn,factor=4",
    "rope:base=1000000,scaling=yarn,factor=4,original=32768",
    "rope:scaling=linear,factor=4",
    "rope:scaling=ntk,factor=4",
    "rope:scaling=dynamic,factor=4,original=4096,seq_len=16384",
    "rope:scaling=longrope,factor=32,original=4096,seq_len=131072,short_factor="
    + ";".join("1" for _ in range(48)) + ",long_factor="
    + ";".join(f"{1 + 0.8 * m:g}" for m in range(48)),
]


@pytest.mark.parametrize("text", MODELS)
def test_released_settings_equal_transformers(text):
    spec = parse_spec(text)
    want, s = transformers_rope(spec, 96)
    for layer, (freqs, factor) in layer_values(spec, 96).items():
        np.testing.assert_allclose(freqs, want, rtol=1e-5, atol=0, err_msg=layer)
        assert math.isclose(factor, s, rel_tol=1e-12)
