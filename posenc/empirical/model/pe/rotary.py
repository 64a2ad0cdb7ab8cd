"""Rotary position embedding (RoPE; Su et al. 2021) for (batch, heads, seq, head_dim) tensors.

Conventions (those of :mod:`posenc.encodings`): rotary dims ``r = 2 floor(f d / 2)``
are the first ``r`` dims of a head; plane ``m`` has ``theta_m = base^(-2m/r)``;
p-RoPE (``keep < 1``) keeps the ``round(keep * r/2)`` highest frequencies (the
smallest ``m``) and sets the others to 0; pairing ``interleaved`` puts plane m
on dims (2m, 2m+1), ``half`` on (m, m + r/2); a vector at position p is rotated
in each plane by ``p * theta_m``: ``(a, b) -> (a cos - b sin, a sin + b cos)``.
Partial RoPE (``heads = k``) rotates heads 0..k-1 only (the others get theta 0).  A scaled
RoPE (``scaling=...``, :mod:`.rope_scaling`) rotates by its scaled frequencies and multiplies
the rotary dims of q and k by its attention factor s (phasors ``s exp(i p theta)``), on the heads
it rotates.

Custom frequencies (``custom:frequencies=f0;f1;...``) rotate plane m on dims
(2m, 2m+1) by ``p * f_m`` in every head.  MLA's decoupled part uses
``theta_m = base^(-2m/rope_dim)`` with interleaved pairing.

Implementation: a table of unit phasors ``exp(i p theta)`` (heads, seq, planes),
complex, computed in float64 and cast.  A plane (a, b) is the complex number
``a + i b``; rotating it is one complex product.  With ``interleaved`` pairing the
pairs are viewed as complex numbers (``view_as_complex``; a copy first only where the
layout does not allow the view), with ``half`` pairing the complex number is built
from the two halves; bfloat16 (under autocast) rotates in float32.  (One complex
product, not the real formula ``a cos - b sin``: in float32 the two differ in the last
bit, and the fast path of training, which rotates in place by the same phasors, is
bit for bit the complex product.)
"""

from __future__ import annotations

import torch
from torch import nn

from ....encodings import RoPE, XPos
from ....errors import PosencError
from .rope_scaling import attention_factor, scaled_frequencies
from .table_cache import TableCache


class Rotary(nn.Module):
    """RoPE with a per-head frequency table ``thetas`` (heads or 1, planes) and a pairing."""

    def __init__(self, head_dim: int, thetas: torch.Tensor, pairing: str = "interleaved",
                 gains: torch.Tensor | None = None):
        super().__init__()
        if thetas.dim() != 2 or 2 * thetas.shape[1] > head_dim or pairing not in ("interleaved", "half"):
            raise ValueError("thetas must be (heads, planes) with 2 * planes <= head_dim")
        if gains is not None and tuple(gains.shape) != (thetas.shape[0],):
            raise ValueError("gains must be (heads,), one attention factor per row of thetas")
        self.head_dim, self.pairing = head_dim, pairing
        self.rotary_dims = 2 * int(thetas.shape[1])
        # Non-persistent: derived from the spec, so checkpoints stay spec-independent.
        self.register_buffer("thetas", thetas.to(torch.float64), persistent=False)  # (H, P)
        # scaled RoPE's attention factor s per head (None: 1): the phasors are s exp(i p theta)
        self.register_buffer("gains", None if gains is None else gains.to(torch.float64),
                             persistent=False)  # (H,)
        self._cache = TableCache()

    @property
    def n_heads(self) -> int:
        return int(self.thetas.shape[0])

    def planes(self) -> list[tuple[int, int]]:
        """The (a, b) dims of each plane m."""
        P = self.rotary_dims // 2
        if self.pairing == "interleaved":
            return [(2 * m, 2 * m + 1) for m in range(P)]
        return [(m, m + P) for m in range(P)]

    def angles(self, positions: torch.Tensor) -> torch.Tensor:
        """(heads, seq, planes) float64 angles ``p * theta``."""
        return positions.to(torch.float64)[None, :, None] * self.thetas[:, None, :]

    def phasors(self, seq: int, offset: int, dtype: torch.dtype) -> torch.Tensor:
        """exp(i p theta) (heads, seq, planes), complex of ``dtype``'s precision (cached)."""
        cdtype = torch.complex128 if dtype == torch.float64 else torch.complex64
        def make() -> torch.Tensor:
            ang = self.angles(torch.arange(offset, offset + seq, device=self.thetas.device))
            mag = torch.ones_like(ang) if self.gains is None else \
                self.gains[:, None, None].expand_as(ang)
            return torch.polar(mag, ang).to(cdtype)  # float64 -> dtype
        return self._cache.get((seq, offset, cdtype), make, self.thetas)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Rotate ``x`` (batch, heads, seq, head_dim) by its positions offset, offset+1, ...: plane m
        as the complex number a + ib times its phasor."""
        if x.dtype not in (torch.float32, torch.float64):  # (bfloat16 under autocast)
            return self(x.float(), offset).to(x.dtype)
        r, P = self.rotary_dims, self.rotary_dims // 2
        w = self.phasors(x.shape[-2], offset, x.dtype)  # (H or 1, T, P), broadcast over batch
        if self.pairing == "interleaved":  # plane m on dims (2m, 2m + 1)
            pairs = x[..., :r].unflatten(-1, (P, 2))  # (B, H, T, P, 2)
            z = torch.view_as_complex(pairs if _complex_view_ok(pairs) else pairs.contiguous())
            rot = torch.view_as_real(z * w).flatten(-2)
        else:  # plane m on dims (m, m + P)
            z = torch.complex(x[..., :P], x[..., P:r]) * w
            rot = torch.cat([z.real, z.imag], dim=-1)
        return rot if r == self.head_dim else torch.cat([rot, x[..., r:]], dim=-1)

    def rotate_qk(self, q: torch.Tensor, k: torch.Tensor, offset: int = 0
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries and keys at positions offset, offset+1, ... (RoPE: the same rotation)."""
        return self(q, offset), self(k, offset)


def _complex_view_ok(pairs: torch.Tensor) -> bool:
    """Whether ``pairs`` (.., P, 2) can be viewed as complex numbers without a copy."""
    return (pairs.stride(-1) == 1 and pairs.storage_offset() % 2 == 0
            and all(st % 2 == 0 for st in pairs.stride()[:-1]))


def rope_rotary(spec: RoPE, head_dim: int, n_heads: int) -> Rotary:
    """The catalogue RoPE spec as a :class:`Rotary` (raises PosencError on odd head dims); a
    scaled RoPE (:mod:`.rope_scaling`) gets its frequencies and, on the heads it rotates, its
    attention factor."""
    r = spec.rotary_dims(head_dim)
    planes = r // 2
    kept = spec.kept_planes(head_dim)
    theta = scaled_frequencies(spec, r)  # (P,)
    theta[kept:] = 0.0  # p-RoPE: the lowest frequencies do not rotate
    thetas = theta.expand(n_heads, planes).clone()
    s = attention_factor(spec)
    gains = torch.full((n_heads,), s, dtype=torch.float64) if s != 1.0 else None
    for h in range(n_heads):
        if not spec.applies_to(h, n_heads):
            thetas[h] = 0.0
            if gains is not None:
                gains[h] = 1.0
    return Rotary(head_dim, thetas, spec.pairing, gains)


def frequency_rotary(freqs: tuple[float, ...], head_dim: int, n_heads: int) -> Rotary:
    """Custom rotary frequencies: plane m on dims (2m, 2m+1) rotates by ``p * freqs[m]``."""
    planes = len(freqs)
    if 2 * planes > head_dim:
        raise PosencError(f"custom: {planes} frequencies need a head dimension of at least "
                          f"{2 * planes}; got {head_dim}")
    thetas = torch.tensor(freqs, dtype=torch.float64).expand(n_heads, planes).clone()
    return Rotary(head_dim, thetas, "interleaved")


def mla_rotary(rope_dim: int, base: float) -> Rotary:
    """MLA's decoupled RoPE on ``rope_dim`` dims: one table broadcast over heads."""
    planes = rope_dim // 2
    m = torch.arange(planes, dtype=torch.float64)
    theta = (torch.tensor(float(base), dtype=torch.float64) ** (-2.0 * m / rope_dim))[None, :]
    return Rotary(rope_dim, theta, "interleaved")


class XPosRotary(Rotary):
    """xPos (Sun et al. 2022): RoPE on every dim (interleaved), theta_m = base^(-2m/d), with plane
    m of the query at position p scaled by zeta_m^(p/scale_base) and of the key by
    zeta_m^(-p/scale_base), zeta_m = (2m/d + gamma)/(1 + gamma); so the logit's plane m carries
    zeta_m^((i-j)/scale_base).  The same for every head."""

    def __init__(self, head_dim: int, n_heads: int, base: float, gamma: float, scale_base: float):
        if head_dim % 2:
            raise PosencError(f"xpos needs an even head dimension; got {head_dim}")
        planes = head_dim // 2
        m = torch.arange(planes, dtype=torch.float64)
        theta = torch.tensor(float(base), dtype=torch.float64) ** (-2.0 * m / head_dim)
        super().__init__(head_dim, theta.expand(n_heads, planes).clone(), "interleaved")
        zeta = (2.0 * m / head_dim + gamma) / (1.0 + gamma)
        self.register_buffer("log_decay", torch.log(zeta) / scale_base, persistent=False)  # (P,)

    def scales(self, seq: int, offset: int, dtype: torch.dtype) -> torch.Tensor:
        """lambda_m^p per dim, (seq, head_dim): each plane's factor on both of its dims."""
        pos = torch.arange(offset, offset + seq, device=self.log_decay.device, dtype=torch.float64)
        return torch.exp(pos[:, None] * self.log_decay[None, :]).repeat_interleave(2, -1).to(dtype)

    def rotate_qk(self, q: torch.Tensor, k: torch.Tensor, offset: int = 0
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.scales(q.shape[-2], offset, q.dtype)
        return self(q, offset) * s, self(k, offset) / s


def xpos_rotary(spec: XPos, head_dim: int, n_heads: int) -> XPosRotary:
    return XPosRotary(head_dim, n_heads, spec.base, spec.gamma, spec.scale_base)


#: rotary part kind (posenc.encodings.parts) -> (part spec, head_dim, n_heads) -> module.
ROTARY_FORMULAS = {
    "rope": rope_rotary,
    "frequencies": lambda r, head_dim, n_heads: frequency_rotary(r.frequencies, head_dim, n_heads),
    "xpos": xpos_rotary,
}


class PaperCodeMix(nn.Module):
    """The paper code's MLA "RoPE" (``mla:rope=paper_code``): not a rotation.

    With ``f_m = base^(-2m/r)`` (m = 0 .. r/2-1) and the table
    ``T[p] = [sin(p f_0), .., sin(p f_{r/2-1}), cos(p f_0), .., cos(p f_{r/2-1})]``
    the code reads ``s = T[p][0::2]`` as sines and ``c = T[p][1::2]`` as cosines, so
    both halves mix frequencies (and a plane can get sin and cos of different
    angles, or two sines).  With ``a = x[0::2]``, ``b = x[1::2]`` the output is
    ``[a c - b s, a s + b c]`` (the first halves, then the second halves).  Tables
    in float64, then cast; ``rotary_dims`` for the hooks that expect a Rotary.
    """

    def __init__(self, rope_dim: int, base: float):
        super().__init__()
        if rope_dim % 2:
            raise PosencError(f"mla:rope=paper_code needs an even rope_dim; got {rope_dim}")
        self.rotary_dims, self.head_dim, self.base = rope_dim, rope_dim, float(base)
        self.register_buffer("_probe", torch.zeros(0), persistent=False)
        self._cache = TableCache()

    def tables(self, seq: int, offset: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """The code's "cos" and "sin" (seq, r/2) for positions offset .. offset+seq-1."""
        def make() -> tuple[torch.Tensor, torch.Tensor]:
            r, dev = self.rotary_dims, self._probe.device
            f = torch.tensor(self.base, dtype=torch.float64) ** (
                -torch.arange(0, r, 2, dtype=torch.float64) / r)
            ang = torch.arange(offset, offset + seq, dtype=torch.float64, device=dev)[:, None] \
                * f.to(dev)[None, :]
            table = torch.cat([ang.sin(), ang.cos()], dim=-1)  # (T, r)
            return table[:, 1::2].to(dtype), table[:, 0::2].to(dtype)
        return self._cache.get((seq, offset, dtype), make, self._probe)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """x (batch, heads, seq, r) -> the code's mixed output, same shape."""
        cos, sin = self.tables(x.shape[-2], offset, x.dtype)
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


#: mla part kind (posenc.encodings.parts) -> (MLA spec, rope_dim) -> the decoupled path's position module.
MLA_FORMULAS = {
    "mla": lambda spec, rope_dim: mla_rotary(rope_dim, spec.base),
    "mla_paper_code": lambda spec, rope_dim: PaperCodeMix(rope_dim, spec.base),
}
