"""The structural split of a catalogue spec into its parts, and the conventions, as data.

A spec is made of at most one part per *role*:

==========  ===================================================  ========================
role        where the part enters the logit                      kinds
==========  ===================================================  ========================
absolute    an embedding p_i added to the input x_i = c_i + p_i  sinusoidal, learned
bias        an additive attention bias B_ij (per head or shared) alibi, t5, table, kernel,
                                                                 kerple_log
rotary      a rotation of queries and keys by their positions    rope, frequencies, xpos
mla         latent attention: a position-free content path + a   mla
            decoupled RoPE path (the paper code's: a mix,        mla_paper_code
            not a rotation, not Toeplitz)
==========  ===================================================  ========================

``spec.parts()`` (each catalogue class in :mod:`posenc.encodings`) states the
split once, in the order the symbolic layer states the parts' definitions;
:func:`structure` validates it.  Each layer (theory, numerics, empirical) keeps
a table ``{kind: formula}`` of its own and looks every part up there: a kind a
layer does not know is an error (:func:`unknown_part`), never a silent
fallback.  The conventions below are the catalogue's choices, by name; each
layer computes them independently and the cross-layer tests compare.

Nothing here imports sympy, numpy or torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..errors import PosencError

ROLES = ("absolute", "bias", "rotary", "mla")

#: Rotary pairings: which two dims of the first r (rotary) dims form plane m.
PAIRINGS: dict[str, str] = {
    "interleaved": "plane m = dims (2m, 2m+1)",
    "half": "plane m = dims (m, m + r/2)",
}

#: ALiBi slope schedules, head h = 1 .. H.
SLOPE_SCHEDULES: dict[str, str] = {
    "press": "2^(-8h/H); for H not a power of two, the slopes of the nearest lower power of two P "
             "followed by every other slope of 2P (the first H - P of them)",
    "exp": "exp(-h/H)",
    "exp0": "exp(-h/H) for h = 0 .. H-1 (the paper's code: head 0 has slope 1)",
}

#: Sinusoidal table layouts (model width D, omega_m = base^(-2m/D)).
SINUSOIDAL_LAYOUTS: dict[str, str] = {
    "interleaved": "PE[p, 2m] = sin(p omega_m), PE[p, 2m+1] = cos(p omega_m)",
    "half": "PE[p, m] = sin(p omega_m), PE[p, D/2 + m] = cos(p omega_m) (the paper code's rope table)",
}

#: MLA ``rope`` option -> the kind of its mla part.
MLA_ROPES: dict[str, str] = {"rotary": "mla", "paper_code": "mla_paper_code"}

#: Part kinds whose logit is not a function of i - j, with the reason: theory and numerics have
#: no Toeplitz form to derive or bound, and their tables map the kind to this one-line refusal
#: (:func:`not_toeplitz`); the empirical layer builds it.
NOT_TOEPLITZ: dict[str, str] = {
    "mla_paper_code":
        "mla:rope=paper_code is not a rotation: the paper code builds cat[sin, cos] and reads its "
        "even entries as sin and its odd ones as cos, mixing frequencies, so the logit is not a "
        "function of i - j (not Toeplitz); there is no Toeplitz form to derive or bound (train, "
        "ablate and probe it with the empirical layer)",
}

#: ALiBi directions.
DIRECTIONS: dict[str, str] = {
    "symmetric": "B_ij = -slope |i - j|",
    "causal": "B_ij = -slope (i - j) for j <= i, 0 above the diagonal",
}

#: Relative-bias index rules.
BUCKET_RULES: dict[str, str] = {
    "t5": "T5 bucket of j - i: half the buckets per sign, exact below num_buckets/4, "
          "log-spaced up to max_distance",
    "table": "one value per offset i - j clipped to [-max_distance, max_distance]",
}

#: Absolute embeddings MLA and RoPE(add_absolute) can add to the input.
ABSOLUTES = ("none", "learned", "sinusoidal")


@dataclass(frozen=True)
class Part:
    """One part of a spec: its role, the formula kind, and the spec holding its parameters.

    ``spec`` is ``None`` only for a ``learned`` absolute table as long as the
    model's sequence (MLA's ``absolute=learned``).  ``learned``: the part's values
    are trained parameters (one set per layer in a model), not a fixed formula.
    """

    role: str
    kind: str
    spec: Any = None
    learned: bool = False


@dataclass(frozen=True)
class Structure:
    """The parts of one spec, at most one per role."""

    spec: Any
    parts: tuple[Part, ...]

    def get(self, role: str) -> Optional[Part]:
        found = [p for p in self.parts if p.role == role]
        return found[0] if found else None

    @property
    def absolute(self) -> Optional[Part]:
        return self.get("absolute")

    @property
    def bias(self) -> Optional[Part]:
        return self.get("bias")

    @property
    def rotary(self) -> Optional[Part]:
        return self.get("rotary")

    @property
    def mla(self) -> Optional[Part]:
        return self.get("mla")

    @property
    def additive(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if p.role in ("absolute", "bias"))

    @property
    def multiplicative(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if p.role in ("rotary", "mla"))


def structure(spec: Any) -> Structure:
    """The validated parts of ``spec`` (a catalogue entry)."""
    parts = tuple(spec.parts())
    roles = [p.role for p in parts]
    for p in parts:
        if p.role not in ROLES or not isinstance(p.kind, str) or not p.kind:
            raise PosencError(f"{spec.name}: unknown part {p.role}/{p.kind}")
    if len(set(roles)) != len(roles):
        raise PosencError(f"{spec.name}: more than one part per role: {roles}")
    if len(parts) > 2 or (len(parts) == 2 and not (
            len([p for p in parts if p.role in ("absolute", "bias")]) == 1)):
        raise PosencError(f"{spec.name}: a spec is at most one additive and one multiplicative part; "
                          f"got {roles}")
    return Structure(spec, parts)


def unknown_part(layer: str, part: Part, spec: Any) -> PosencError:
    """The error a layer raises for a part kind it has no formula for."""
    return PosencError(f"{layer}: no formula for the {part.role} part {part.kind!r} of "
                       f"{getattr(spec, 'name', spec)!r}")


def not_toeplitz(spec: Any) -> PosencError:
    """The one-line refusal of theory and numerics for a spec with a part in NOT_TOEPLITZ."""
    reasons = [NOT_TOEPLITZ[p.kind] for p in spec.parts() if p.kind in NOT_TOEPLITZ]
    return PosencError(reasons[0] if reasons else f"{spec.name}: has a Toeplitz form")
