"""Compact spec strings and JSON dicts -> catalogue specs, with clear errors.

Grammar: ``NAME`` or ``NAME:KEY=VALUE,KEY=VALUE,...``.  Commas inside
parentheses belong to the value (``custom:kernel=max(-abs(k), -5)``); list
values are separated by ``;`` (``custom:frequencies=1;0.5;0.25``); booleans
are ``true``/``false``; ``none`` gives ``None`` for optional parameters.
``hybrid`` takes the additive PE's name as ``additive=NAME``, its parameters
as ``additive.KEY=VALUE`` and RoPE's parameters unprefixed.  NAME may also be
a named spec such as ``paper-rope`` (no parameters allowed then).
"""

from __future__ import annotations

import difflib
from typing import Any, Iterator

from ..coerce import coerce, field_hints, shown
from ..errors import PosencError
from .additive import ADDITIVE_NAMES, Sinusoidal
from .base import PESpec
from .composite import Custom, Hybrid
from .expression import Expr
from .registry import NAMED_SPECS, REGISTRY
from .rotary import RoPE


def _did_you_mean(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _split_params(text: str, body: str) -> list[tuple[str, str]]:
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for item in items:
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise PosencError(f"malformed spec {text!r}: expected KEY=VALUE, got {item.strip()!r}")
        out.append((key, value))
    return out


def _build(name: str, params: dict[str, Any], text: str) -> PESpec:
    if name in NAMED_SPECS:
        if params:
            raise PosencError(f"named spec {name!r} takes no parameters; use the family "
                              f"{NAMED_SPECS[name].name!r} to set them")
        return NAMED_SPECS[name]
    if name not in REGISTRY:
        known = sorted(REGISTRY) + sorted(NAMED_SPECS)
        raise PosencError(f"unknown positional encoding {name!r}{_did_you_mean(name, known)}; "
                          f"known: {', '.join(known)}")
    cls = REGISTRY[name]
    if cls is Hybrid:
        return _build_hybrid(params, text)
    fields = field_hints(cls)
    kwargs = {}
    for key, raw in params.items():
        if key not in fields:
            raise PosencError(f"unknown parameter {key!r} for {name}{_did_you_mean(key, list(fields))}; "
                              f"known: {', '.join(fields) or 'none'}")
        kwargs[key] = coerce(fields[key], raw, f"{name}: {key}")
    return cls(**kwargs)


def _build_hybrid(params: dict[str, Any], text: str) -> PESpec:
    additive = params.pop("additive", None)
    if isinstance(additive, dict):  # JSON form
        add_spec = spec_from_dict(additive)
        add_params: dict[str, Any] = {}
    else:
        add_name = additive if additive is not None else Sinusoidal.name
        if add_name not in ADDITIVE_NAMES:
            raise PosencError(f"hybrid: additive must be one of {', '.join(ADDITIVE_NAMES)}; "
                              f"got {add_name!r}")
        add_params = {k.partition(".")[2]: v for k, v in params.items() if k.startswith("additive.")}
        add_spec = _build(add_name, add_params, text)
    rope = params.pop("rope", None)
    rest = {k: v for k, v in params.items() if not k.startswith("additive.")}
    if isinstance(rope, dict):
        if rest:
            raise PosencError(f"hybrid: unknown parameter(s) {', '.join(rest)}")
        rope_spec = spec_from_dict(rope)
    else:
        rope_spec = _build(RoPE.name, rest, text)
    return Hybrid(additive=add_spec, rope=rope_spec)  # type: ignore[arg-type]


def parse_spec(text: str) -> PESpec:
    """Parse a compact spec string such as ``rope:base=500000,pairing=half,heads=2``."""
    if not isinstance(text, str):
        raise PosencError(f"a PE spec must be a string such as 'rope'; got {text!r}")
    if not text.strip():
        raise PosencError("empty positional-encoding spec")
    name, colon, body = text.strip().partition(":")
    name = name.strip()
    if colon and not body.strip():
        raise PosencError(f"malformed spec {text!r}: nothing after ':'")
    params: dict[str, Any] = {}
    if colon:
        for key, value in _split_params(text, body):
            if key in params:
                raise PosencError(f"malformed spec {text!r}: {key!r} given twice")
            params[key] = value
    return _build(name, params, text)


def as_spec(spec: str | PESpec) -> PESpec:
    """A catalogue spec: a spec string parsed (:func:`parse_spec`), a PESpec as it is."""
    return parse_spec(spec) if isinstance(spec, str) else spec


def spec_from_dict(data: Any) -> PESpec:
    """Inverse of :meth:`PESpec.to_dict` (JSON round trip)."""
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise PosencError(f"a PE spec must be an object with a 'name'; got {shown(data, 200)}")
    params = {k: v for k, v in data.items() if k != "name"}
    return _build(data["name"], params, shown(data, 200))


def derivable_entries() -> Iterator[tuple[str, PESpec]]:
    """:func:`all_entries` that the symbolic and numeric layers derive (all but the paper
    code's MLA, whose logit is not Toeplitz: ``PESpec.has_toeplitz_form``)."""
    return ((name, spec) for name, spec in all_entries() if spec.has_toeplitz_form)


def all_entries() -> Iterator[tuple[str, PESpec]]:
    """Every catalogue family at its defaults, then every named spec."""
    for name, cls in REGISTRY.items():
        if name == "custom":
            yield "custom:kernel", Custom(kernel=Expr("-0.1*abs(k)"))
            yield "custom:frequencies", Custom(frequencies=(1.0, 0.1, 0.01))
        else:
            yield name, cls()
    yield from NAMED_SPECS.items()
