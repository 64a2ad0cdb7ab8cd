"""Scaled RoPE (posenc.encodings.rope_scaling) through the one door: the catalogue's spec strings,
JSON and one-line errors; unscaled specs serialise exactly as before; and the frequencies and
attention factor that the three layers compute independently (theory exact in sympy, numerics in
numpy, empirical in torch) agree with each other and with the plain-Python reference
(tests/rope_scaling_reference.py) for every scaling kind.  Against transformers itself:
tests/test_rope_scaling_transformers.py."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import rope_scaling_reference as ref
from posenc.empirical.model.pe import rope_scaling as torch_scaling
from posenc.encodings import RoPE, parse_spec, spec_from_dict
from posenc.encodings.rope_scaling import DEFAULTS, SCALINGS, USES
from posenc.errors import PosencError
from posenc.numerics import conventions as cv
from posenc.theory import rope_scaling as sym_scaling

#: the fields RoPE had before scaling (stored configs and JSON hold exactly these)
UNSCALED_FIELDS = ["name", "base", "fraction", "pairing", "heads", "keep", "add_absolute"]


@st.composite
def scaled(draw, planes=None):
    """A valid scaled RoPE spec of every kind, with parameters across their ranges."""
    kind = draw(st.sampled_from([k for k in SCALINGS if k != "none"]))
    head_dim = 2 * (planes if planes is not None else draw(st.integers(2, 32)))
    kw = dict(scaling=kind, base=draw(st.sampled_from([100.0, 10000.0, 500000.0])),
              factor=draw(st.sampled_from([0.5, 1.0, 2.0, 4.0, 8.0, 32.0])))
    if kind != "linear" and kind != "ntk":
        kw["original"] = draw(st.sampled_from([2, 64, 1000, 4096, 8192]))
    if kind in ("dynamic", "longrope"):
        kw["seq_len"] = draw(st.sampled_from([1, 100, 4096, 20000]))
    if kind == "yarn":
        slow = draw(st.sampled_from([0.5, 1.0, 2.0]))
        kw.update(beta_slow=slow, beta_fast=slow + draw(st.sampled_from([0.5, 8.0, 31.0])))
    if kind in ("yarn", "longrope"):
        kw["attention_factor"] = draw(st.sampled_from([None, 0.7, 1.5]))
    if kind == "llama3":
        low = draw(st.sampled_from([0.5, 1.0, 2.0]))
        # 1: no band between the two (Llama 4's low_freq_factor = high_freq_factor = 1)
        kw.update(low_freq_factor=low, high_freq_factor=low * draw(st.sampled_from([1, 1.5, 4.0])))
    if kind == "longrope":
        fs = st.lists(st.floats(0.5, 50.0), min_size=head_dim // 2, max_size=head_dim // 2)
        kw.update(short_factor=tuple(draw(fs)), long_factor=tuple(draw(fs)))
    return RoPE(**kw), head_dim


@pytest.mark.parametrize("text", ref.scaled_specs(planes=4) + [
    "rope:scaling=yarn,factor=32,original=4096",                # default attention factor
    "rope:scaling=longrope,factor=8,original=64,seq_len=64,short_factor=1;2;3;4,long_factor=5;6;7;8",
    "rope:base=500000,scaling=llama3,factor=8,original=8192",
    "rope:base=500000,scaling=llama3,factor=16,original=8192,low_freq_factor=1,high_freq_factor=1"])
def test_the_layers_agree_on_every_kind(text):
    spec = parse_spec(text)
    rope = dataclasses.replace(spec.rope if spec.name == "hybrid" else spec, keep=1.0)  # no mask
    test_the_three_layers_and_the_reference_agree_on_frequencies_and_attention_factor.hypothesis \
        .inner_test(case=(rope, 8))


@given(case=scaled())
def test_the_three_layers_and_the_reference_agree_on_frequencies_and_attention_factor(case):
    spec, d = case
    r = spec.rotary_dims(d)
    want = np.array(ref.frequencies(spec, r))
    got_np = cv.rope_frequencies(spec, d)
    got_torch = torch_scaling.scaled_frequencies(spec, r).numpy()
    got_sym = np.array([float(t) for t in sym_scaling.scaled_angles(spec, r)])
    # float64 powers, logs and one division each: relative rounding ~1e-15; 1e-12 leaves margin
    for got in (got_np, got_torch, got_sym):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    s = ref.attention_factor(spec)
    assert math.isclose(cv.rope_attention_factor(spec), s, rel_tol=1e-14)
    assert math.isclose(torch_scaling.attention_factor(spec), s, rel_tol=1e-14)
    assert math.isclose(float(sym_scaling.attention_factor(spec)), s, rel_tol=1e-14)


@given(case=scaled())
def test_a_scaled_spec_round_trips_as_text_and_json(case):
    spec, _ = case
    assert parse_spec(spec.to_string()) == spec
    assert spec_from_dict(spec.to_dict()) == spec
    data = spec.to_dict()
    assert data["scaling"] == spec.scaling
    assert set(data) - set(UNSCALED_FIELDS) <= {"scaling", *USES[spec.scaling]}


@pytest.mark.parametrize("text", ["rope", "rope:base=500000,pairing=half,heads=2,fraction=0.5",
                                  "hybrid:additive=alibi,keep=0.5", "paper-rope"])
def test_an_unscaled_spec_serialises_as_before(text):
    spec = parse_spec(text)
    rope = spec.rope if spec.name == "hybrid" else spec
    assert list(rope.to_dict()) == UNSCALED_FIELDS
    assert "scaling" not in spec.to_string() and "factor" not in spec.to_string()
    assert not rope.scaled and rope.unscaled() == rope


def test_unscaled_drops_every_scaling_field():
    spec = parse_spec("rope:base=500000,heads=2,scaling=yarn,factor=4,original=8192")
    assert spec.unscaled() == RoPE(base=500000.0, heads=2)
    assert set(DEFAULTS) == {f.name for f in dataclasses.fields(RoPE)} - set(UNSCALED_FIELDS)


@pytest.mark.parametrize("text,match", [
    ("rope:scaling=ntk2", "rope: scaling must be one of none, linear, ntk, dynamic, yarn, llama3, longrope"),
    ("rope:scaling=linear,factor=0", r"rope: factor must be a positive number at least 1e-06 and at most 1e\+06; got 0"),
    ("rope:scaling=yarn,factor=2,attention_factor=1e200", "rope: attention_factor must be .* at most"),
    ("rope:scaling=yarn,factor=-2", "rope: factor must be a positive number"),
    ("rope:scaling=linear,factor=inf", "rope: factor must be a positive number"),
    ("rope:factor=4", r"rope: factor needs a scaling \(linear, ntk, dynamic, yarn, llama3, longrope\)"),
    ("rope:scaling=linear,factor=2,beta_fast=8", "rope: beta_fast needs scaling=yarn; got beta_fast=8"),
    ("rope:scaling=ntk,factor=2,seq_len=9", "rope: seq_len needs scaling=dynamic or longrope"),
    ("rope:scaling=dynamic,factor=2", "rope: scaling=dynamic needs seq_len=N"),
    ("rope:scaling=yarn,factor=2,original=0", "rope: original must be a positive integer; got 0"),
    ("rope:scaling=yarn,factor=2,original=100000000", "rope: original=100000000 exceeds the limit"),
    ("rope:scaling=yarn,factor=2,beta_fast=1,beta_slow=2", "rope: yarn needs beta_fast > beta_slow"),
    ("rope:scaling=yarn,factor=2,attention_factor=0", "rope: attention_factor must be a positive"),
    ("rope:scaling=llama3,factor=8,low_freq_factor=5", "rope: llama3 needs high_freq_factor >= low"),
    ("rope:scaling=longrope,factor=2,short_factor=1;1", "rope: scaling=longrope needs long_factor"),
    ("rope:scaling=longrope,short_factor=1;1,long_factor=1", "rope: short_factor and long_factor must"),
    ("rope:scaling=longrope,short_factor=1;nan,long_factor=1;1", "rope: short_factor must be positive"),
    ("rope:scaling=longrope,factor=2,original=1,short_factor=1,long_factor=1",
     "rope: longrope's default attention factor"),
])
def test_bad_scalings_are_one_line_errors(text, match):
    with pytest.raises(PosencError, match=match) as info:
        parse_spec(text)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text,d,match", [
    ("rope:scaling=longrope,short_factor=1;1,long_factor=1;1", 8, "longrope factors have 2 entries; "
                                                                  "the 8 rotary dims have 4 planes"),
    ("rope:scaling=ntk,factor=2", 2, "scaling=ntk changes the base by the power r/\\(r-2\\)"),
    ("rope:fraction=0.25,scaling=dynamic,factor=2,seq_len=9", 8, "needs at least 4 rotary dims"),
])
def test_what_the_head_dim_decides_is_checked_in_every_layer(text, d, match):
    spec = parse_spec(text)
    from posenc.empirical.model.pe.rotary import rope_rotary
    from posenc.numerics.kernels import kernel
    from posenc.theory import derive
    for call in (lambda: spec.rotary_dims(d), lambda: cv.rope_frequencies(spec, d),
                 lambda: kernel(spec, 4, head_dim=d), lambda: rope_rotary(spec, d, 2),
                 lambda: derive(spec, head_dim=d, prove=False)):
        with pytest.raises(PosencError, match=match):
            call()


def test_cli_bad_scaling_is_one_line_with_exit_status_2(main):
    for args in (["bound", "rope:scaling=yarn,factor=0", "--n", "8"],
                 ["derive", "rope:scaling=dynamic,factor=2"],
                 ["bound", "rope:scaling=longrope,short_factor=1,long_factor=1", "--n", "8"]):
        out = main(*args)
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr


def test_encodings_lists_the_scalings(main):
    out = main("encodings")
    assert out.returncode == 0
    for kind in SCALINGS:
        assert f"scaling={kind}" in out.stdout or kind == "none"
    for field in DEFAULTS:
        assert f"    {field} " in out.stdout
