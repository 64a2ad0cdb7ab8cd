"""The front door's call check: a public function refuses a call its signature does not take
in one PosencError line, as the command line refuses an unknown option.

It lives beside ``posenc/__init__.py`` (which applies it to every function it exports), outside
``posenc.api``: importing any layer runs ``posenc/__init__.py``, and the layers must not load the
API package (tests/test_layers.py).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar, cast

from .coerce import shown
from .errors import MissingExtraError, PosencError


F = TypeVar("F", bound=Callable[..., Any])


def public(fn: F) -> F:
    """``fn`` refusing a call its signature does not take with one PosencError line, as the
    command line refuses an unknown option (``posenc: unrecognized arguments: --bogus 1``):
    ``posenc.bound: unrecognized arguments: bogus=1 (it takes spec, n, head, ...)``.  The
    arguments are bound to the signature before ``fn`` runs, so nothing has started; ``fn``'s
    own TypeErrors are not touched.  A module of the ``train`` extra missing on the light install
    is one line too (:class:`~posenc.errors.MissingExtraError`, which is also the
    ModuleNotFoundError it was).  The wrapper keeps ``fn``'s name, docstring and signature, and
    its type for a type checker."""
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
        try:
            return fn(*args, **kwargs)
        except ModuleNotFoundError as exc:  # torch & co. of the train extra, on the light install
            missing = MissingExtraError.of(exc, name)
            if missing is None:
                raise
            raise missing from None
    # pickled by reference as ``posenc.NAME`` (the wrapper itself), so a public function still
    # travels to a process pool or inside a functools.partial
    checked.__module__, checked.__qualname__ = "posenc", fn.__name__
    return cast(F, checked)
