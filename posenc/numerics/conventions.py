"""The catalogue's conventions as numpy: slopes, buckets, frequencies, tables.

Implemented from the conventions written in the module docstring of
:mod:`posenc.encodings` -- not by calling the catalogue's helpers -- so that the
tests comparing the two are evidence.  Sources: ALiBi, Press et al. 2022 (and
the reference ``get_slopes``); T5 buckets, Raffel et al. 2020 (the reference
``_relative_position_bucket``, bidirectional); RoPE, Su et al. 2021, p-RoPE
Barbero et al. 2024; sinusoidal, Vaswani et al. 2017; MLA, DeepSeek-V2 2024.

``alibi_slopes(n_heads, schedule) -> (H,)``
``t5_bucket(rel, num_buckets, max_distance) -> int array``  (rel = j - i)
``rope_frequencies(spec, head_dim) -> (r/2,)``  theta_m (scaled) after the p-RoPE mask
``rope_attention_factor(spec) -> float``  s of a scaled RoPE (yarn, longrope; else 1)
``mla_rope_dim(spec, head_dim) -> int``
``sinusoidal_table(n, width, base) -> (n, width)``
"""

from __future__ import annotations

import math

import numpy as np

from ..encodings import MLA, RoPE
from ..encodings.rope_scaling import check_planes
from ..coerce import is_int
from ..errors import PosencError
from .rope_scaling import attention_factor as rope_attention_factor  # noqa: F401
from .rope_scaling import scaled_frequencies


def alibi_slopes(n_heads: int, schedule: str = "press") -> np.ndarray:
    """Slopes of heads h = 1..H: ``2^(-8h/H)`` (press) or ``exp(-h/H)`` (exp); ``exp0``:
    ``exp(-h/H)`` for h = 0..H-1.

    For H not a power of two the press schedule is that of the largest power of
    two P < H followed by the first H - P slopes of odd h (h = 1, 3, 5, ...) of
    the 2P schedule, i.e. ``get_slopes(2P)[0::2][:H-P]`` (reference get_slopes).
    """
    if not is_int(n_heads) or n_heads < 1:
        raise PosencError(f"alibi: number of heads must be a positive integer; got {n_heads!r}")
    if schedule in ("exp", "exp0"):  # exp0: h = 0..H-1, the paper's code
        first = 0 if schedule == "exp0" else 1
        return np.exp(-np.arange(first, first + n_heads) / n_heads)
    if schedule != "press":
        raise PosencError(f"alibi: slope schedule must be press, exp or exp0; got {schedule!r}")

    def power_of_two(p: int) -> list[float]:
        return [2.0 ** (-8.0 * h / p) for h in range(1, p + 1)]

    p = 1 << (n_heads.bit_length() - 1)                          # largest power of two <= H
    if p == n_heads:
        return np.array(power_of_two(p))
    return np.array(power_of_two(p) + power_of_two(2 * p)[0::2][: n_heads - p])


def t5_bucket(rel: np.ndarray, num_buckets: int, max_distance: int) -> np.ndarray:
    """Bidirectional T5 bucket of the relative position ``rel = j - i`` (key minus query).

    Half the buckets per sign (``rel > 0`` gets the upper half); within a half,
    distances below ``max_exact = num_buckets // 4`` get their own bucket and
    larger ones ``max_exact + floor(log(a / max_exact) / log(max_distance /
    max_exact) * (half - max_exact))``, capped at ``half - 1``.  Boundaries are
    decided in exact arithmetic (float results within 1e-9 of an integer are
    settled with integer powers), so e.g. a = 16 lands in bucket 10, not 9.
    When ``max_distance <= max_exact`` every a >= max_exact takes the last bucket.
    """
    rel = np.asarray(rel, dtype=np.int64)
    half = num_buckets // 2
    max_exact = half // 2
    a = np.abs(rel)
    out = np.where(rel > 0, half, 0).astype(np.int64)
    if max_exact < 1:
        return out + np.minimum(a, half - 1)
    small = a < max_exact
    large = np.full(a.shape, half - 1, dtype=np.int64)
    if max_distance > max_exact:
        span = half - max_exact
        with np.errstate(divide="ignore"):
            x = np.log(np.maximum(a, 1) / max_exact) / math.log(max_distance / max_exact) * span
        j = np.floor(x).astype(np.int64)
        near = np.abs(x - np.round(x)) < 1e-9
        for idx in np.flatnonzero(near & ~small):
            aa, jj = int(a.flat[idx]), int(round(x.flat[idx]))
            # (a / me)^span >= (md / me)^jj  <=>  a^span * me^jj >= md^jj * me^span
            exact = aa ** span * max_exact ** jj >= max_distance ** jj * max_exact ** span
            j.flat[idx] = jj if exact else jj - 1
        large = np.minimum(max_exact + j, half - 1)
    return out + np.where(small, a, large)


def _rotary_dims(fraction: float, head_dim: int) -> int:
    if not is_int(head_dim) or head_dim < 1:
        raise PosencError(f"head dimension must be a positive integer; got {head_dim!r}")
    if fraction == 1 and head_dim % 2:
        raise PosencError(f"rope needs an even head dimension; got {head_dim}")
    # the catalogue's rule (encodings.RoPE.rotary_dims): floor with a 1e-9 allowance, so that a
    # fraction one ulp below a pair boundary (0.9999999999999999 of 2) still keeps that pair
    r = 2 * math.floor(float(fraction) * head_dim / 2 + 1e-9)
    if r < 2:
        raise PosencError(f"rope: fraction {fraction} of head dim {head_dim} leaves no rotary pair")
    return r


def rope_frequencies(spec: RoPE, head_dim: int) -> np.ndarray:
    """theta_m = base^(-2m/r), m = 0..r/2-1, scaled by the spec's scaling
    (:mod:`.rope_scaling`), with the lowest frequencies zeroed by p-RoPE."""
    r = _rotary_dims(spec.fraction, head_dim)
    check_planes(spec, r)
    planes = r // 2
    theta = scaled_frequencies(spec, r)
    kept = max(1, min(planes, round(spec.keep * planes)))        # Python round: half to even
    theta[kept:] = 0.0
    return theta


def rotary_dims(spec: RoPE, head_dim: int) -> int:
    return _rotary_dims(spec.fraction, head_dim)


def mla_rope_dim(spec: MLA, head_dim: int) -> int:
    """Width of MLA's decoupled RoPE part: given, else head_dim // 2 rounded down to even (>= 2)."""
    if not is_int(head_dim) or head_dim < 1:
        raise PosencError(f"head dimension must be a positive integer; got {head_dim!r}")
    if spec.rope_dim is not None:
        return spec.rope_dim
    return max(2, (head_dim // 2) // 2 * 2)


def mla_frequencies(spec: MLA, head_dim: int) -> np.ndarray:
    r = mla_rope_dim(spec, head_dim)
    return spec.base ** (-2.0 * np.arange(r // 2) / r)


def sinusoidal_frequencies(width: int, base: float) -> np.ndarray:
    """omega_m = base^(-2m/D), m = 0..D/2-1, for an even model width D."""
    if not isinstance(width, int) or width < 2 or width % 2:
        raise PosencError(f"sinusoidal PE needs an even model width >= 2; got {width!r}")
    return base ** (-2.0 * np.arange(width // 2) / width)


def sinusoidal_table(n: int, width: int, base: float = 10000.0,
                     layout: str = "interleaved") -> np.ndarray:
    """PE[p, 2m] = sin(p omega_m), PE[p, 2m+1] = cos(p omega_m); shape (n, width).
    ``layout="half"``: PE[p, m] = sin(p omega_m), PE[p, D/2 + m] = cos(p omega_m)."""
    omega = sinusoidal_frequencies(width, base)
    angle = np.arange(n)[:, None] * omega[None, :]              # (n, D/2)
    if layout == "half":
        return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    table = np.empty((n, width))
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle)
    return table
