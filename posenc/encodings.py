"""The single catalogue of positional encodings (PEs): pure data.

One frozen dataclass per PE family holds that family's parameters with their
documented defaults; every convention that silently differs between code bases
is an explicit parameter.  Nothing here imports sympy, numpy or torch: the
symbolic (``posenc.theory``), numeric (``posenc.numerics``) and empirical
(``posenc.empirical``) layers each implement these specs independently, so that
their agreement is evidence, not an echo.

Conventions shared by every layer (head dimension ``d``, ``H`` heads, query
position ``i``, key position ``j``, offset ``k = i - j``):

* **RoPE.**  Rotary dims ``r = 2 * floor(fraction * d / 2)`` (the first ``r``
  dims of a head; the rest carry no position).  Plane ``m = 0 .. r/2 - 1`` has
  frequency ``theta_m = base ** (-2 m / r)``; with ``keep < 1`` (p-RoPE,
  Barbero et al. 2024) only the ``round(keep * r / 2)`` highest frequencies
  rotate and the planes of the lowest ones get ``theta_m = 0``.  Pairing
  ``interleaved``: plane m = dims (2m, 2m+1); ``half``: dims (m, m + r/2).  A
  vector at position p is rotated in each plane by angle ``p * theta_m``:
  ``(a, b) -> (a cos - b sin, a sin + b cos)``, i.e. ``a + ib -> (a + ib) e^{i p theta}``.
  ``heads = k`` applies the rotation to heads ``0 .. k-1`` only (partial RoPE).
* **Sinusoidal** (Vaswani et al. 2017): ``PE[p, 2m] = sin(p / base^(2m/D))``,
  ``PE[p, 2m+1] = cos(p / base^(2m/D))`` for model width ``D``, added to the input
  (``layout=interleaved``); ``layout=half`` puts every sine first and every cosine
  after: ``PE[p, m] = sin(p / base^(2m/D))``, ``PE[p, D/2 + m] = cos(...)`` (the
  table the paper code's ``rope`` model adds to its input).
* **ALiBi** (Press et al. 2022): head ``h = 1 .. H`` has slope ``2^(-8h/H)``
  (``press``; for ``H`` not a power of two, the slopes of the nearest lower power
  of two ``P`` followed by every other slope of ``2P``, first ``H - P`` of them)
  or ``exp(-h/H)`` (``exp``), or ``exp(-h/H)`` for ``h = 0 .. H-1`` (``exp0``, the
  paper's code: head 0 has slope 1).  Bias ``B_ij = -slope * |i - j|``
  (``symmetric``) or ``-slope * (i - j)`` for ``j <= i`` and 0 above the diagonal
  (``causal``; use with a causal attention mask).
* **Relative bias.**  ``t5``: the T5 bucket of the relative position ``j - i``
  (Raffel et al. 2020; bidirectional, half the buckets per sign, exact below
  ``num_buckets/4``, log-spaced up to ``max_distance``); ``table``: one scalar
  per offset ``i - j`` clipped to ``[-max_distance, max_distance]`` (the paper's
  code).  Values are learned, one table per head.
* **MLA** (DeepSeek-V2, 2024): queries and keys are a content part computed
  from latents of widths ``q_latent``/``kv_latent`` and carrying no position,
  concatenated with a decoupled RoPE part of width ``rope_dim`` whose key is
  shared across heads when ``shared_rope_key``.  ``None`` widths are resolved
  by the model: latents ``4 * head_dim`` (capped at the model width),
  ``rope_dim = head_dim // 2`` rounded down to even.  ``rope=paper_code`` is the
  paper code's MLA instead: its "RoPE" is not a rotation (see
  :mod:`posenc.empirical.paper_code`), the query's rope part is shared across heads,
  ``rope_dim`` defaults to ``head_dim``; its logit is not Toeplitz, so the symbolic
  and numeric layers refuse it.
* **Custom.**  ``kernel``: an additive bias ``B_ij = g(i - j)``, the same for every
  head.  ``frequencies``: plane m rotates dims (2m, 2m+1) (interleaved) with
  frequency ``frequencies[m]``; dims past ``2 * len(frequencies)`` carry no position.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from .coerce import is_int, is_number
from .errors import PosencError
from .expression import Expr
from .limits import MAX_BUCKETS, MAX_HEADS, MAX_SEQ_LEN, MAX_WIDTH
from .parts import (ABSOLUTES, BUCKET_RULES, DIRECTIONS, MLA_ROPES, NOT_TOEPLITZ, PAIRINGS,
                    SINUSOIDAL_LAYOUTS, SLOPE_SCHEDULES, Part, not_toeplitz)

FAMILIES = ("none", "additive-input", "additive-bias", "multiplicative", "hybrid")


def _check(ok: bool, msg: str) -> None:
    if not ok:
        raise PosencError(msg)


def _choice(pe: str, param: str, value: Any, options: tuple[str, ...]) -> None:
    _check(value in options, f"{pe}: {param} must be one of {', '.join(options)}; got {value!r}")


def _positive(pe: str, param: str, value: Any) -> None:
    _check(is_number(value)
           and math.isfinite(value) and value > 0,
           f"{pe}: {param} must be a positive number; got {value!r}")


def _positive_int(pe: str, param: str, value: Any, limit: int) -> None:
    """A positive integer no larger than ``limit`` (a bound of :mod:`posenc.limits`)."""
    _check(is_int(value) and value >= 1,
           f"{pe}: {param} must be a positive integer; got {value!r}")
    _check(value <= limit, f"{pe}: {param}={value} exceeds the limit {limit}")


@dataclass(frozen=True)
class PESpec:
    """Base of every catalogue entry.  Subclasses set ``name`` and ``family``."""

    name: ClassVar[str] = ""
    doc: ClassVar[str] = ""

    @property
    def family(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def parts(self) -> tuple[Part, ...]:
        """The structural split of this spec (see :mod:`posenc.parts`); every entry declares it."""
        raise PosencError(f"{self.name or type(self).__name__}: the catalogue entry declares no parts")

    @property
    def has_toeplitz_form(self) -> bool:
        """Whether the symbolic and numeric layers can derive it: no part of a kind whose logit
        is not Toeplitz (:data:`posenc.parts.NOT_TOEPLITZ`; mla:rope=paper_code)."""
        return not any(p.kind in NOT_TOEPLITZ for p in self.parts())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
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


@dataclass(frozen=True)
class Sinusoidal(PESpec):
    """Fixed sin/cos absolute embedding added to the input (Vaswani et al. 2017)."""

    name: ClassVar[str] = "sinusoidal"
    doc: ClassVar[str] = "fixed sin/cos absolute embedding added to the input"
    base: float = 10000.0
    layout: str = "interleaved"

    def __post_init__(self) -> None:
        _positive(self.name, "base", self.base)
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
class RoPE(PESpec):
    """Rotary position embedding (Su et al. 2021) with every convention explicit."""

    name: ClassVar[str] = "rope"
    doc: ClassVar[str] = "rotary embedding; partial heads, p-RoPE keep, pairing, optional absolute"
    base: float = 10000.0
    fraction: float = 1.0
    pairing: str = "interleaved"
    heads: Optional[int] = None
    keep: float = 1.0
    add_absolute: bool = False

    def __post_init__(self) -> None:
        _positive(self.name, "base", self.base)
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

    @property
    def family(self) -> str:
        return "hybrid" if self.add_absolute else "multiplicative"

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
        _positive(self.name, "base", self.base)
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
        _positive(self.name, "base", self.base)
        _positive(self.name, "gamma", self.gamma)
        _positive(self.name, "scale_base", self.scale_base)

    @property
    def family(self) -> str:
        return "multiplicative"

    def parts(self) -> tuple[Part, ...]:
        return (Part("rotary", "xpos", self),)


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


ADDITIVE_NAMES = ("sinusoidal", "learned_absolute", "relative_bias", "alibi")


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


REGISTRY: dict[str, type[PESpec]] = {
    cls.name: cls for cls in (NoPE, Sinusoidal, LearnedAbsolute, RelativeBias, ALiBi,
                              RoPE, MLA, Hybrid, Custom, XPos, KerpleLog)
}

#: The exact conventions of the paper's public code (Qihuai27/Deposit-Pattern-Research), by
#: name: ``dis_gen/trans.py`` (nope, absolute, alibi, relative, random, rope -- its ``rope``
#: adds a cat[sin, cos] table to the input), ``count_gen/partialrope.py`` (RoPE on the first k
#: heads, nothing added to the input) and ``dis_gen/mla.py``.  A preset name is resolved to its
#: spec when a run config is made (:class:`posenc.empirical.config.ModelConfig`), so a run
#: records what it trained; :data:`PRESETS_VERSION` counts the times their meaning changed.
PRESETS: dict[str, PESpec] = {
    "paper-nope": NoPE(),
    "paper-absolute": Sinusoidal(),
    "paper-random": LearnedAbsolute(max_len=128),
    "paper-rope": Hybrid(additive=Sinusoidal(layout="half"), rope=RoPE()),
    "paper-alibi": ALiBi(slopes="exp0"),
    "paper-relative": RelativeBias(mode="table", max_distance=127),
    "paper-mla": MLA(rope="paper_code", kv_latent=128, q_latent=128, absolute="learned"),
    "paper-absolute-rope": Hybrid(additive=Sinusoidal(layout="half"), rope=RoPE()),
}
#: 2: the presets follow the paper code exactly (issue 14); before, paper-alibi had slopes
#: exp(-h/H) for h = 1..H, paper-rope and paper-absolute-rope an interleaved sin/cos table,
#: paper-relative 257 offsets and paper-mla a true rotation.
PRESETS_VERSION = 2
#: Preset names a run config may hold only if it was written before :data:`PRESETS_VERSION` 2.
OLD_PRESET_NAMES = tuple(PRESETS)


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ";".join(_format_value(v) for v in value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return str(value)


from .spec_parsing import parse_spec, spec_from_dict, all_entries, derivable_entries  # noqa: E402,F401
