"""Checks of the front door's arguments: one PosencError line for a value of the wrong kind.

The layers check sizes and ranges (``posenc.limits``); these check what only a Python caller
can get wrong -- a string where a flag goes, a number where a path goes -- so that no bad
argument reaches a layer as a TypeError or, worse, as a truthy string taken for True.

The call itself -- an unknown keyword, a missing or extra argument -- is checked by
:func:`posenc.public_call.public`, which ``posenc/__init__.py`` applies to every function it
exports.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

from .errors import PosencError
from .encodings import PESpec


def flag(name: str, value: Any, optional: bool = False) -> Optional[bool]:
    """A real bool (or None where ``optional``): ``save="no"`` must not mean True."""
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        kind = "True, False or None" if optional else "True or False"
        raise PosencError(f"{name} must be {kind}; got {value!r}")
    return value


def spec(value: Any) -> Any:
    """A spec string or a catalogue PESpec."""
    if not isinstance(value, (str, PESpec)):
        raise PosencError(f"a PE spec must be a string such as 'rope' or a PESpec; got {value!r}")
    return value


def path(name: str, value: Any, optional: bool = False) -> Any:
    """A path (str or os.PathLike), not empty: ``out=""`` would mean the current folder."""
    if value is None and optional:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise PosencError(f"{name} must be a path (str or os.PathLike); got {value!r}")
    if not os.fspath(value).strip():
        raise PosencError(f"{name} is an empty path; name a file or folder")
    return value


def names(name: str, value: Any) -> Optional[list[str]]:
    """None, a comma-separated string ("rope,alibi") or a sequence of non-empty strings."""
    if value is None:
        return None
    items: Sequence[Any] = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(x, str) for x in items):
        raise PosencError(f"{name} must be a comma-separated string or a list of strings; "
                          f"got {value!r}")
    out = [x.strip() for x in items if x.strip()]
    if not out:
        raise PosencError(f"{name} is empty; name at least one (leave it out for all)")
    return out


def mapping(name: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise PosencError(f"{name} must be a dict of dotted config keys to values; got {value!r}")
    return dict(value)
