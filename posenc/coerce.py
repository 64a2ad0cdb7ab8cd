"""One place that turns user values into typed field values: specs, configs, CLI values.

``coerce(hint, value, label, text=...)`` converts ``value`` to the type ``hint``
(a type or typing form; :func:`field_hints` resolves a dataclass's annotations)
or raises a one-line
:class:`~posenc.errors.PosencError` ``"{label} must be {kind}; got {value!r}"``.

Types: ``bool``, ``int``, ``float``, ``str``, a type made from its text (one with a ``TEXT_KIND``
naming it: :class:`~posenc.encodings.expression.Expr`, which this module does not import: the
catalogue imports it), ``tuple[float, ...]`` (any length), ``tuple[float, float]`` (fixed length) and
``tuple[int, ...]`` (its items as ``int`` fields),
``Optional[X]`` and ``X | None`` (``None``, or ``"none"`` in text mode, gives
``None``), and nested dataclasses (returned unchanged: their own builder
checks them).

Two modes: ``text=True`` (spec strings and JSON specs, command-line values)
parses strings (``"true"``, ``"1e6"``, ``"1;0.5"``) and accepts an integral
float for an int; ``text=False`` (JSON configs) requires the JSON type itself
(an int is never a string or a bool).  :func:`is_int` / :func:`is_number` are
the type tests every module uses (a bool is never a number).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from typing import Any, Mapping

from .errors import PosencError
from .limits import parse_int


def is_int(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """An int or float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for a one-line message, at most ``limit`` characters: a huge int is
    named by its digit count (its repr may be thousands of digits, or refused by Python)."""
    if is_int(value) and abs(value) >= 10 ** limit:
        return f"an integer of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except Exception:                       # a repr that raises: name the type instead
        return f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


@functools.cache
def field_hints(cls: type) -> Mapping[str, Any]:
    """Field name -> resolved type of a dataclass (annotation strings evaluated by typing), read-only.

    Resolved once per class: a class's annotations do not change, and evaluating them
    (``typing.get_type_hints``) was 95% of the time of parsing a spec string and most of the time
    of reading a config dict (about 0.25 ms a class)."""
    hints = typing.get_type_hints(cls)
    return types.MappingProxyType({f.name: hints[f.name] for f in dataclasses.fields(cls)})


def _optional(hint: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0], True
        raise TypeError(f"no coercion for the union {hint}")  # pragma: no cover - not used
    return hint, False


def _from_text(hint: Any) -> bool:
    """A type made from its text, ``hint(str(value))``: it names itself by ``TEXT_KIND``."""
    return isinstance(hint, type) and isinstance(getattr(hint, "TEXT_KIND", None), str)


def kind_name(hint: Any) -> str:
    """How an error message names the type."""
    if _from_text(hint):
        return hint.TEXT_KIND
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        what = "integers" if args[0] is int else "numbers"
        return f"list of {what}" if args[-1] is Ellipsis else f"a list of {len(args)} {what}"
    return getattr(hint, "__name__", str(hint))


def coerce(hint: Any, value: Any, label: str, *, text: bool = True) -> Any:
    """``value`` as the type ``hint`` (see the module docstring), else PosencError."""
    base, optional = _optional(hint)
    if value is None or (text and optional and isinstance(value, str)
                         and value.strip().lower() == "none"):
        if optional:
            return None
        if text:
            raise PosencError(f"{label} cannot be none")
    if dataclasses.is_dataclass(base) and not _from_text(base):
        return value
    try:
        return _convert(base, value, text)
    except PosencError:
        raise  # already one clear line (a PosencError is a ValueError too)
    except (ValueError, TypeError, OverflowError):
        raise PosencError(f"{label} must be {kind_name(base)}; got {shown(value)}") from None


def _convert(base: Any, value: Any, text: bool) -> Any:
    if base is bool:
        if isinstance(value, bool):
            return value
        if text and isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ValueError
    if base is int:
        if is_int(value):
            return value
        if text and isinstance(value, float) and value.is_integer():
            return int(value)
        if text and isinstance(value, str):
            try:
                return parse_int(value, "value")                     # also 1e6
            except PosencError:
                raise ValueError from None
        raise ValueError
    if base is float:
        if not (is_number(value) or (text and isinstance(value, str))):
            raise ValueError
        out = float(value)
        if math.isnan(out):
            raise ValueError
        return out
    if base is str:
        if not isinstance(value, str):
            raise ValueError
        return value
    if _from_text(base):
        if not text and not isinstance(value, str):
            raise ValueError
        return base(str(value))
    if typing.get_origin(base) is tuple:
        args = typing.get_args(base)
        items = value.split(";") if text and isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise ValueError
        if args[-1] is not Ellipsis and len(items) != len(args):
            raise ValueError
        if args[0] is int:  # tuple[int, ...]: each item as an int field
            return tuple(_convert(int, v.strip() if isinstance(v, str) else v, text) for v in items)
        if not text and not all(is_number(v) for v in items):
            raise ValueError
        return tuple(float(v) for v in items)
    raise TypeError(f"no coercion for {base}")  # pragma: no cover - a new field type needs one
