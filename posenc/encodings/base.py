"""The base of every catalogue entry (:class:`PESpec`: to_dict, to_string, parts), the
validation helpers the entries share, and the entry with no parts (:class:`NoPE`)."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

from ..coerce import is_int, is_number, shown
from ..errors import PosencError
from ..limits import MIN_BASE
from .expression import Expr
from .parts import NOT_TOEPLITZ, Part

FAMILIES = ("none", "additive-input", "additive-bias", "multiplicative", "hybrid")


def _check(ok: bool, msg: str) -> None:
    if not ok:
        raise PosencError(msg)


def _choice(pe: str, param: str, value: Any, options: tuple[str, ...]) -> None:
    _check(value in options, f"{pe}: {param} must be one of {', '.join(options)}; got {value!r}")


def _positive(pe: str, param: str, value: Any) -> None:
    """A positive finite number (a huge int is compared, never converted: no OverflowError)."""
    _check(is_number(value) and 0 < value <= sys.float_info.max,
           f"{pe}: {param} must be a positive number; got {shown(value)}")


def _base(pe: str, param: str, value: Any) -> None:
    """A base of frequencies base^(-2m/r): a finite number > MIN_BASE = 1
    (:data:`posenc.limits.MIN_BASE`: only then do the frequencies fall from plane to plane; a base
    of 1e-300 gave angles of 1e300 radians)."""
    _check(is_number(value) and MIN_BASE < value <= sys.float_info.max,
           f"{pe}: {param} must be a number > {MIN_BASE:g} (the frequencies {param}^(-2m/r) fall "
           f"from plane to plane only then); got {shown(value)}")


def _positive_int(pe: str, param: str, value: Any, limit: int) -> None:
    """A positive integer no larger than ``limit`` (a bound of :mod:`posenc.limits`)."""
    _check(is_int(value) and value >= 1,
           f"{pe}: {param} must be a positive integer; got {shown(value)}")
    _check(value <= limit, f"{pe}: {param}={shown(value)} exceeds the limit {limit}")


@dataclass(frozen=True)
class PESpec:
    """Base of every catalogue entry.  Subclasses set ``name`` and ``family``."""

    name: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    #: Fields left out of :meth:`to_dict` at their defaults (fields added after run configs and
    #: stored JSON were written, so that those stay as they were; ``to_string`` leaves out every
    #: default anyway).
    omitted_at_default: ClassVar[tuple[str, ...]] = ()

    @property
    def family(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def parts(self) -> tuple[Part, ...]:
        """The structural split of this spec (see :mod:`posenc.encodings.parts`); every entry declares it."""
        raise PosencError(f"{self.name or type(self).__name__}: the catalogue entry declares no parts")

    @property
    def has_toeplitz_form(self) -> bool:
        """Whether the symbolic and numeric layers can derive it: no part of a kind whose logit
        is not Toeplitz (:data:`posenc.encodings.parts.NOT_TOEPLITZ`; mla:rope=paper_code)."""
        return not any(p.kind in NOT_TOEPLITZ for p in self.parts())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in self.omitted_at_default and value == f.default:
                continue
            if isinstance(value, PESpec):
                value = value.to_dict()
            elif isinstance(value, Expr):
                value = value.text
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def to_string(self) -> str:
        """The compact spec string, listing only non-default parameters."""
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default or (f.default_factory is not dataclasses.MISSING  # type: ignore[misc]
                                      and value == f.default_factory()):  # type: ignore[misc]
                continue
            parts.append(f"{f.name}={_format_value(value)}")
        return self.name + (":" + ",".join(parts) if parts else "")


@dataclass(frozen=True)
class NoPE(PESpec):
    """No positional information at all (Kazemnejad et al. 2023)."""

    name: ClassVar[str] = "nope"
    doc: ClassVar[str] = "no positional encoding"

    @property
    def family(self) -> str:
        return "none"

    def parts(self) -> tuple[Part, ...]:
        return ()


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ";".join(_format_value(v) for v in value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return str(value)
