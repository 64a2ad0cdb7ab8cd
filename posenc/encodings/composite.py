"""The entries built from others or from the user's input: a hybrid (an additive PE plus RoPE)
and a custom kernel or frequency list."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Optional

from ..coerce import is_number
from .expression import Expr
from ..limits import MAX_WIDTH
from .parts import Part
from .additive import ADDITIVE_NAMES, Sinusoidal
from .base import PESpec, _check
from .rotary import RoPE

@dataclass(frozen=True)
class Hybrid(PESpec):
    """An additive PE together with RoPE (the paper's Absolute+RoPE)."""

    name: ClassVar[str] = "hybrid"
    doc: ClassVar[str] = "an additive PE plus RoPE, e.g. hybrid:additive=sinusoidal"
    additive: PESpec = field(default_factory=lambda: Sinusoidal())
    rope: RoPE = field(default_factory=lambda: RoPE())

    def __post_init__(self) -> None:
        _check(isinstance(self.additive, PESpec) and self.additive.name in ADDITIVE_NAMES,
               f"hybrid: additive must be one of {', '.join(ADDITIVE_NAMES)}")
        _check(isinstance(self.rope, RoPE) and not self.rope.add_absolute,
               "hybrid: rope must be a plain rope spec (add_absolute=false)")

    @property
    def family(self) -> str:
        return "hybrid"

    def parts(self) -> tuple[Part, ...]:
        return self.additive.parts() + self.rope.parts()

    def to_string(self) -> str:
        """``hybrid:additive=NAME[,additive.P=V...][,ROPE_PARAM=V...]``."""
        parts = [f"additive={self.additive.name}"]
        add_params = self.additive.to_string().partition(":")[2]
        parts += [f"additive.{p}" for p in add_params.split(",") if p]
        rope_params = self.rope.to_string().partition(":")[2]
        parts += [p for p in rope_params.split(",") if p]
        return "hybrid:" + ",".join(parts)


@dataclass(frozen=True)
class Custom(PESpec):
    """A user-given relative kernel g(k) (additive bias) or frequency list (multiplicative)."""

    name: ClassVar[str] = "custom"
    doc: ClassVar[str] = "user kernel g(k) of the offset k=i-j (bias), or rotary frequencies"
    kernel: Optional[Expr] = None
    frequencies: Optional[tuple[float, ...]] = None

    def __post_init__(self) -> None:
        _check((self.kernel is None) != (self.frequencies is None),
               "custom: give exactly one of kernel=EXPR or frequencies=F1;F2;...")
        if isinstance(self.kernel, str):
            object.__setattr__(self, "kernel", Expr(self.kernel))
        if self.frequencies is not None:
            freqs = tuple(self.frequencies) if isinstance(self.frequencies, (list, tuple)) \
                else (self.frequencies,)
            _check(len(freqs) <= MAX_WIDTH // 2,
                   f"custom: at most {MAX_WIDTH // 2} frequencies; got {len(freqs)}")
            _check(len(freqs) >= 1 and all(is_number(f)
                                           and math.isfinite(f) for f in freqs),
                   f"custom: frequencies must be finite numbers; got {self.frequencies!r}")
            object.__setattr__(self, "frequencies", tuple(float(f) for f in freqs))

    @property
    def family(self) -> str:
        return "additive-bias" if self.kernel is not None else "multiplicative"

    def parts(self) -> tuple[Part, ...]:
        if self.kernel is not None:
            return (Part("bias", "kernel", self),)
        return (Part("rotary", "frequencies", self),)
