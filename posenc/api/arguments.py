"""Checks of the front door's arguments: one PosencError line for a value of the wrong kind.

The layers check sizes and ranges (``posenc.limits``); these check what only a Python caller
can get wrong -- a string where a flag goes, a number where a path goes -- so that no bad
argument reaches a layer as a TypeError or, worse, as a truthy string taken for True.

:func:`public` checks the call itself -- an unknown keyword, a missing or extra argument -- for
every public function (``posenc/__init__.py`` applies it to each one it exports), with the line
the command line prints for an unknown option.
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any, Callable, Optional, Sequence

from ..coerce import shown
from ..errors import PosencError


def public(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` refusing a call its signature does not take with one PosencError line, as the
    command line refuses an unknown option (``posenc: unrecognized arguments: --bogus 1``):
    ``posenc.bound: unrecognized arguments: bogus=1 (it takes spec, n, head, ...)``.  The
    arguments are bound to the signature before ``fn`` runs, so nothing has started; ``fn``'s
    own TypeErrors are not touched.  The wrapper keeps ``fn``'s name, docstring and signature."""
    signature = inspect.signature(fn)
    name = f"posenc.{fn.__name__}"
    open_keywords = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            unknown = [k for k in kwargs if k not in signature.parameters and not open_keywords]
            takes = ", ".join(signature.parameters)
            if unknown:
                given = ", ".join(f"{k}={shown(kwargs[k])}" for k in unknown)
                raise PosencError(f"{name}: unrecognized arguments: {given} (it takes "
                                  f"{takes})") from None
            raise PosencError(f"{name}: {exc} (it takes {takes})") from None
        return fn(*args, **kwargs)
    return checked


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
    from ..encodings import PESpec
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
