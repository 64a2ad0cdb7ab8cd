"""The additive entries: absolute embeddings added to the input (sinusoidal, learned) and
attention biases (relative/T5, ALiBi, KERPLE-log)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..limits import MAX_BUCKETS, MAX_SEQ_LEN
from .parts import BUCKET_RULES, DIRECTIONS, SINUSOIDAL_LAYOUTS, SLOPE_SCHEDULES, Part
from .base import PESpec, _base, _check, _choice, _positive, _positive_int

@dataclass(frozen=True)
class Sinusoidal(PESpec):
    """Fixed sin/cos absolute embedding added to the input (Vaswani et al. 2017)."""

    name: ClassVar[str] = "sinusoidal"
    doc: ClassVar[str] = "fixed sin/cos absolute embedding added to the input"
    base: float = 10000.0
    layout: str = "interleaved"

    def __post_init__(self) -> None:
        _base(self.name, "base", self.base)
        _choice(self.name, "layout", self.layout, tuple(SINUSOIDAL_LAYOUTS))

    @property
    def family(self) -> str:
        return "additive-input"

    def parts(self) -> tuple[Part, ...]:
        return (Part("absolute", "sinusoidal", self),)


@dataclass(frozen=True)
class LearnedAbsolute(PESpec):
    """A learned embedding per absolute position, added to the input (GPT-2, BERT)."""

    name: ClassVar[str] = "learned_absolute"
    doc: ClassVar[str] = "learned per-position embedding added to the input"
    max_len: int = 512

    def __post_init__(self) -> None:
        _positive_int(self.name, "max_len", self.max_len, MAX_SEQ_LEN)

    @property
    def family(self) -> str:
        return "additive-input"

    def parts(self) -> tuple[Part, ...]:
        return (Part("absolute", "learned", self, learned=True),)


@dataclass(frozen=True)
class RelativeBias(PESpec):
    """A learned scalar bias per head and relative position (Shaw et al. 2018; T5)."""

    name: ClassVar[str] = "relative_bias"
    doc: ClassVar[str] = "learned per-head bias of the offset: t5 log-buckets or a per-offset table"
    mode: str = "t5"
    num_buckets: int = 32
    max_distance: int = 128

    def __post_init__(self) -> None:
        _choice(self.name, "mode", self.mode, tuple(BUCKET_RULES))
        _positive_int(self.name, "num_buckets", self.num_buckets, MAX_BUCKETS)
        _positive_int(self.name, "max_distance", self.max_distance, MAX_SEQ_LEN)
        if self.mode == "t5":
            _check(self.num_buckets >= 4 and self.num_buckets % 2 == 0,
                   f"{self.name}: t5 needs an even num_buckets >= 4; got {self.num_buckets}")

    @property
    def family(self) -> str:
        return "additive-bias"

    def parts(self) -> tuple[Part, ...]:
        return (Part("bias", self.mode, self, learned=True),)


@dataclass(frozen=True)
class ALiBi(PESpec):
    """Attention with linear biases: -slope_h * distance (Press et al. 2022)."""

    name: ClassVar[str] = "alibi"
    doc: ClassVar[str] = ("linear distance bias per head; slopes press 2^(-8h/H), exp exp(-h/H) "
                          "(h = 1..H) or exp0 exp(-h/H) (h = 0..H-1, the paper's code)")
    slopes: str = "press"
    direction: str = "symmetric"

    def __post_init__(self) -> None:
        _choice(self.name, "slopes", self.slopes, tuple(SLOPE_SCHEDULES))
        _choice(self.name, "direction", self.direction, tuple(DIRECTIONS))

    @property
    def family(self) -> str:
        return "additive-bias"

    def parts(self) -> tuple[Part, ...]:
        return (Part("bias", "alibi", self),)


@dataclass(frozen=True)
class KerpleLog(PESpec):
    """KERPLE, logarithmic variant (Chi et al. 2022): B_ij = -r1 log(1 + r2 |i - j|) with
    r1, r2 > 0 learned per head (the values here are their initial values)."""

    name: ClassVar[str] = "kerple_log"
    doc: ClassVar[str] = "bias -r1 log(1 + r2|i-j|), r1, r2 > 0 learned per head (KERPLE-log)"
    r1: float = 1.0
    r2: float = 1.0

    def __post_init__(self) -> None:
        _positive(self.name, "r1", self.r1)
        _positive(self.name, "r2", self.r2)

    @property
    def family(self) -> str:
        return "additive-bias"

    def parts(self) -> tuple[Part, ...]:
        return (Part("bias", "kerple_log", self, learned=True),)


#: The entries a hybrid may take as its additive part.
ADDITIVE_NAMES = ("sinusoidal", "learned_absolute", "relative_bias", "alibi")
