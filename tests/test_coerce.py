"""posenc.coerce: the one conversion of user values (spec strings, JSON specs and configs, CLI
values) into typed fields.  Every field of every catalogue entry and config class goes through
it both ways; Optional[X] and X | None both work."""

from __future__ import annotations

import dataclasses
import json
from typing import Optional

import pytest
from hypothesis import given, strategies as st

from posenc.coerce import coerce, field_hints, is_int, is_number
from posenc.empirical import config as C
from posenc.encodings import REGISTRY, PESpec, _format_value
from posenc.errors import PosencError
from posenc.encodings.expression import Expr

CONFIGS = [C.TaskConfig, C.ModelConfig, C.TrainConfig]
SPECS = [cls for name, cls in REGISTRY.items() if name != "custom"]


def _fields(classes):
    for cls in classes:
        instance = cls()
        for name, hint in field_hints(cls).items():
            yield pytest.param(cls, name, hint, getattr(instance, name), id=f"{cls.__name__}.{name}")


def _json(value):
    return json.loads(json.dumps(list(value) if isinstance(value, tuple) else value))


@pytest.mark.parametrize("cls,name,hint,value", list(_fields(SPECS)))
def test_every_spec_field_round_trips_as_text_and_json(cls, name, hint, value):
    if isinstance(value, PESpec):                 # hybrid's parts: built by their own parser
        assert coerce(hint, value, name) is value
        return
    text = "none" if value is None else _format_value(value)
    assert coerce(hint, text, f"{cls.name}: {name}") == value
    assert coerce(hint, _json(value), f"{cls.name}: {name}") == value


@pytest.mark.parametrize("cls,name,hint,value", list(_fields(CONFIGS)))
def test_every_config_field_round_trips_as_json_and_rejects_a_wrong_type(cls, name, hint, value):
    if dataclasses.is_dataclass(value):
        return
    out = coerce(hint, _json(value), name, text=False)
    assert out == value and type(out) is type(value)
    wrong = "x" if not isinstance(value, str) else 3
    with pytest.raises(PosencError, match=f"^{name} must be"):
        coerce(hint, wrong, name, text=False)


def test_custom_fields():
    hints = field_hints(REGISTRY["custom"])
    assert coerce(hints["kernel"], "exp(-abs(k))", "k") == Expr("exp(-abs(k))")
    assert coerce(hints["frequencies"], "1;0.5", "f") == (1.0, 0.5)
    assert coerce(hints["frequencies"], [1, 0.5], "f") == (1.0, 0.5)
    assert coerce(hints["kernel"], "none", "k") is None


@pytest.mark.parametrize("hint", [Optional[int], int | None])
def test_optional_and_pep604_unions(hint):
    assert coerce(hint, None, "v") is None
    assert coerce(hint, "none", "v") is None
    assert coerce(hint, "1e3", "v") == 1000
    assert coerce(hint, 7, "v", text=False) == 7
    with pytest.raises(PosencError, match="v must be int; got True"):
        coerce(hint, True, "v", text=False)
    with pytest.raises(PosencError, match="v must be int"):
        coerce(hint, "7", "v", text=False)          # a JSON config never reads a string as int


def test_none_for_a_required_field():
    with pytest.raises(PosencError, match="v cannot be none"):
        coerce(int, None, "v")
    with pytest.raises(PosencError, match="v must be float; got None"):
        coerce(float, None, "v", text=False)


def test_fixed_length_tuple():
    assert coerce(tuple[float, float], [0.9, 1], "b", text=False) == (0.9, 1.0)
    with pytest.raises(PosencError, match="b must be a list of 2 numbers"):
        coerce(tuple[float, float], [0.9], "b", text=False)
    with pytest.raises(PosencError, match="b must be a list of 2 numbers"):
        coerce(tuple[float, float], [0.9, True], "b", text=False)


@given(st.one_of(st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3),
                 st.none()))
def test_is_int_and_is_number_never_take_a_bool(v):
    assert is_int(v) == (type(v) is int)
    assert is_number(v) == (type(v) in (int, float))
