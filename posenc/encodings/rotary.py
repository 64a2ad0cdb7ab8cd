"""The multiplicative entries: RoPE (every convention explicit), MLA with decoupled RoPE, xPos."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar, Optional

from ..coerce import is_number
from ..limits import MAX_HEADS, MAX_WIDTH
from .parts import ABSOLUTES, MLA_ROPES, PAIRINGS, Part, not_toeplitz
from .additive import Sinusoidal
from .base import PESpec, _base, _check, _choice, _positive, _positive_int
from . import rope_scaling

@dataclass(frozen=True)
class RoPE(PESpec):
    """Rotary position embedding (Su et al. 2021) with every convention explicit.

    ``scaling`` and the fields after it scale the frequencies for a longer context
    (:mod:`posenc.encodings.rope_scaling`: linear, ntk, dynamic, yarn, llama3, longrope, as
    transformers' ``ROPE_INIT_FUNCTIONS``); at their defaults they are left out of
    :meth:`to_dict` and :meth:`to_string`, so an unscaled spec serialises as before."""

    name: ClassVar[str] = "rope"
    doc: ClassVar[str] = ("rotary embedding; partial heads, p-RoPE keep, pairing, optional absolute; "
                          "scaling=" + "|".join(k for k in rope_scaling.SCALINGS if k != "none"))
    omitted_at_default: ClassVar[tuple[str, ...]] = tuple(rope_scaling.DEFAULTS)
    base: float = 10000.0
    fraction: float = 1.0
    pairing: str = "interleaved"
    heads: Optional[int] = None
    keep: float = 1.0
    add_absolute: bool = False
    scaling: str = "none"
    factor: float = 1.0
    original: int = 4096
    seq_len: Optional[int] = None
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    attention_factor: Optional[float] = None
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    short_factor: Optional[tuple[float, ...]] = None
    long_factor: Optional[tuple[float, ...]] = None

    def __post_init__(self) -> None:
        _base(self.name, "base", self.base)
        _check(is_number(self.fraction)
               and 0 < self.fraction <= 1,
               f"{self.name}: fraction must be in (0, 1]; got {self.fraction!r}")
        _choice(self.name, "pairing", self.pairing, tuple(PAIRINGS))
        if self.heads is not None:
            _positive_int(self.name, "heads", self.heads, MAX_HEADS)
        _check(is_number(self.keep)
               and 0 < self.keep <= 1,
               f"{self.name}: keep must be in (0, 1]; got {self.keep!r}")
        _check(isinstance(self.add_absolute, bool),
               f"{self.name}: add_absolute must be true or false; got {self.add_absolute!r}")
        for name in ("short_factor", "long_factor"):   # a list from JSON or the Python API
            value = getattr(self, name)
            if isinstance(value, (list, tuple)):
                object.__setattr__(self, name, tuple(float(v) if is_number(v) else v for v in value))
        rope_scaling.validate(self)

    @property
    def family(self) -> str:
        return "hybrid" if self.add_absolute else "multiplicative"

    @property
    def scaled(self) -> bool:
        """Whether a scaling changes the frequencies (or the attention factor)."""
        return self.scaling != "none"

    def unscaled(self) -> "RoPE":
        """The same RoPE without its scaling (what ``bound`` shows beside a scaled one)."""
        return dataclasses.replace(self, **rope_scaling.DEFAULTS)

    def parts(self) -> tuple[Part, ...]:
        rotary = (Part("rotary", "rope", dataclasses.replace(self, add_absolute=False)),)
        return rotary + ((Part("absolute", "sinusoidal", Sinusoidal()),) if self.add_absolute else ())

    def rotary_dims(self, head_dim: int) -> int:
        """Number of rotated dims of a head of width ``head_dim`` (validated)."""
        _positive_int(self.name, "head_dim", head_dim, MAX_WIDTH)
        if self.fraction == 1:
            _check(head_dim % 2 == 0, f"rope needs an even head dimension; got {head_dim}")
        r = 2 * int(math.floor(self.fraction * head_dim / 2 + 1e-9))
        _check(r >= 2, f"rope: fraction {self.fraction} of head dim {head_dim} leaves no rotary pair")
        rope_scaling.check_planes(self, r)
        return r

    def kept_planes(self, head_dim: int) -> int:
        """Number of planes that rotate after the p-RoPE mask (the highest frequencies)."""
        planes = self.rotary_dims(head_dim) // 2
        return max(1, min(planes, int(round(self.keep * planes))))

    def applies_to(self, head: int, n_heads: int) -> bool:
        return self.heads is None or head < min(self.heads, n_heads)


@dataclass(frozen=True)
class MLA(PESpec):
    """Multi-head latent attention with decoupled RoPE (DeepSeek-V2, 2024)."""

    name: ClassVar[str] = "mla"
    doc: ClassVar[str] = "latent attention: position-free content path + decoupled RoPE path"
    kv_latent: Optional[int] = None
    q_latent: Optional[int] = None
    rope_dim: Optional[int] = None
    base: float = 10000.0
    shared_rope_key: bool = True
    absolute: str = "none"
    rope: str = "rotary"

    def __post_init__(self) -> None:
        for p in ("kv_latent", "q_latent"):
            if getattr(self, p) is not None:
                _positive_int(self.name, p, getattr(self, p), MAX_WIDTH)
        if self.rope_dim is not None:
            _positive_int(self.name, "rope_dim", self.rope_dim, MAX_WIDTH)
            _check(self.rope_dim % 2 == 0, f"mla: rope_dim must be even; got {self.rope_dim}")
        _base(self.name, "base", self.base)
        _check(isinstance(self.shared_rope_key, bool), "mla: shared_rope_key must be true or false")
        _choice(self.name, "absolute", self.absolute, ABSOLUTES)
        _choice(self.name, "rope", self.rope, tuple(MLA_ROPES))
        if self.rope == "paper_code":
            _check(self.shared_rope_key, "mla: rope=paper_code shares its rope key across heads "
                                         "(shared_rope_key=false is not the paper's code)")

    def refuse_non_toeplitz(self) -> None:
        """The symbolic and numeric layers derive Toeplitz forms: refuse the paper code's MLA."""
        if not self.has_toeplitz_form:
            raise not_toeplitz(self)

    @property
    def family(self) -> str:
        return "multiplicative" if self.absolute == "none" else "hybrid"

    def parts(self) -> tuple[Part, ...]:
        mla = (Part("mla", MLA_ROPES[self.rope], dataclasses.replace(self, absolute="none")),)
        if self.absolute == "sinusoidal":
            return mla + (Part("absolute", "sinusoidal", Sinusoidal()),)
        if self.absolute == "learned":  # a table as long as the model's sequence
            return mla + (Part("absolute", "learned", None, learned=True),)
        return mla

    def resolved_rope_dim(self, head_dim: int) -> int:
        if self.rope_dim is not None:
            return self.rope_dim
        return head_dim if self.rope == "paper_code" else 2 * max(1, head_dim // 4)


@dataclass(frozen=True)
class XPos(PESpec):
    """RoPE with a per-plane exponential decay (xPos; Sun et al. 2022, "A length-extrapolatable
    Transformer").  Plane m of r = head_dim dims (interleaved) rotates by theta_m = base^(-2m/r)
    and has decay zeta_m = (2m/r + gamma) / (1 + gamma) in (0, 1]: the query at position i is
    scaled by zeta_m^(i/scale_base), the key at j by zeta_m^(-j/scale_base), so plane m of the
    logit carries zeta_m^((i-j)/scale_base) e^{i theta_m (i-j)} -- Toeplitz, not Hermitian."""

    name: ClassVar[str] = "xpos"
    doc: ClassVar[str] = "RoPE with decay zeta_m^((i-j)/scale_base), zeta_m = (2m/d + gamma)/(1 + gamma)"
    base: float = 10000.0
    gamma: float = 0.4
    scale_base: float = 512.0

    def __post_init__(self) -> None:
        _base(self.name, "base", self.base)
        _positive(self.name, "gamma", self.gamma)
        _positive(self.name, "scale_base", self.scale_base)

    @property
    def family(self) -> str:
        return "multiplicative"

    def parts(self) -> tuple[Part, ...]:
        return (Part("rotary", "xpos", self),)
