"""The catalogue: validation, spec strings and JSON round trip."""

import json

import pytest
from hypothesis import given, strategies as st

from posenc.encodings import (MLA, NAMED_SPECS, REGISTRY, ALiBi, Custom, Hybrid, RelativeBias, RoPE,
                              Sinusoidal, all_entries,
                              parse_spec, spec_from_dict)
from posenc.errors import PosencError


@pytest.mark.parametrize("name,spec", list(all_entries()))
def test_every_entry_round_trips(name, spec):
    assert parse_spec(spec.to_string()) == spec
    assert spec_from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


def test_every_family_is_declared():
    families = {"none", "additive-input", "additive-bias", "multiplicative", "hybrid"}
    for _, spec in all_entries():
        assert spec.family in families


def test_paper_presets_match_the_papers_code():
    """trans.py's rope adds cat[sin, cos] (half layout), its alibi slopes start at
    h = 0, its relative table has 2 * 128 - 1 offsets, mla.py's "RoPE" is not a rotation."""
    assert NAMED_SPECS["paper-rope"] == Hybrid(additive=Sinusoidal(layout="half"), rope=RoPE())
    assert NAMED_SPECS["paper-alibi"].slopes == "exp0"
    assert NAMED_SPECS["paper-relative"] == RelativeBias(mode="table", max_distance=127)
    assert NAMED_SPECS["paper-mla"] == MLA(rope="paper_code", kv_latent=128, q_latent=128,
                                       absolute="learned")
    assert NAMED_SPECS["paper-mla"].resolved_rope_dim(16) == 16
    assert NAMED_SPECS["paper-absolute-rope"] == NAMED_SPECS["paper-rope"]


@given(base=st.floats(1.5, 1e7), fraction=st.sampled_from([0.25, 0.5, 1.0]),
       pairing=st.sampled_from(["interleaved", "half"]),
       heads=st.one_of(st.none(), st.integers(1, 16)), keep=st.floats(0.05, 1.0),
       add_absolute=st.booleans())
def test_rope_round_trip(base, fraction, pairing, heads, keep, add_absolute):
    spec = RoPE(base=base, fraction=fraction, pairing=pairing, heads=heads, keep=keep,
                add_absolute=add_absolute)
    assert parse_spec(spec.to_string()) == spec
    assert spec_from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


def test_hybrid_parameters():
    spec = parse_spec("hybrid:additive=alibi,additive.slopes=exp,pairing=half,base=500")
    assert spec.additive == ALiBi(slopes="exp")
    assert spec.rope == RoPE(pairing="half", base=500.0)
    assert parse_spec(spec.to_string()) == spec


def test_kernel_expression_with_commas():
    spec = parse_spec("custom:kernel=max(-abs(k), -5)")
    assert isinstance(spec, Custom) and str(spec.kernel) == "max(-abs(k), -5)"
    assert spec.kernel.evaluate(-7, {"abs": abs, "max": max}) == -5


@pytest.mark.parametrize("text,fragment", [
    ("ropee", "unknown positional encoding 'ropee' (did you mean 'rope'?)"),
    ("rope:bse=10", "unknown parameter 'bse'"),
    ("rope:fraction=0", "fraction must be in (0, 1]"),
    ("rope:fraction=1.5", "fraction must be in (0, 1]"),
    ("rope:base=-1", "base must be a number > 1"),
    ("rope:base=nan", "base must be float"),
    ("rope:base", "expected KEY=VALUE"),
    ("rope:", "nothing after ':'"),
    ("rope:base=1,base=2", "given twice"),
    ("alibi:slopes=linear", "slopes must be one of press, exp"),
    ("paper-rope:base=2", "takes no parameters"),
    ("custom", "exactly one of"),
    ("custom:kernel=__import__('os')", "not an allowed function"),
    ("custom:kernel=k.real", "attribute access"),
    ("custom:kernel=k[0]", "Subscript is not allowed"),
    ("custom:kernel=lambda: 1", "Lambda is not allowed"),
    ("custom:kernel=exp(-", "syntax error"),
    ("hybrid:additive=rope", "additive must be one of"),
    ("", "empty"),
])
def test_bad_specs_raise_one_clear_error(text, fragment):
    with pytest.raises(PosencError) as info:
        parse_spec(text)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_odd_head_dim_for_rope():
    with pytest.raises(PosencError, match="even head dimension"):
        RoPE().rotary_dims(7)
    assert RoPE(fraction=0.5).rotary_dims(8) == 4
    assert RoPE(keep=0.5).kept_planes(8) == 2


def test_registry_names_are_the_class_names():
    for name, cls in REGISTRY.items():
        assert cls.name == name
