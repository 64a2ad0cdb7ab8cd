"""The catalogue's conventions in exact (sympy / integer) arithmetic.

Implements, independently of the numeric and empirical layers, the conventions
fixed in the docstring of :mod:`posenc.encodings`: sinusoidal frequencies
(Vaswani et al. 2017), RoPE planes, pairing and p-RoPE mask (Su et al. 2021;
Barbero et al. 2024), ALiBi slopes (Press et al. 2022), T5 buckets (Raffel et
al. 2020) and the per-offset table of the paper's code.  Values are exact
sympy numbers so that proofs never see a rounded constant.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import sympy as sp

from ..encodings import RoPE, XPos
from ..errors import PosencError
from .rope_scaling import scaled_angles

#: (first coordinate, second coordinate, exact angle per position step) of one rotary plane.
Plane = tuple[int, int, sp.Expr]


def exact(value: float) -> sp.Expr:
    """A float from the catalogue as an exact rational (10000.0 -> 10000, 0.01 -> 1/100)."""
    return sp.nsimplify(value, rational=True)


def sinusoidal_frequencies(model_dim: int, base: float) -> list[sp.Expr]:
    """``omega_m = base^(-2m/D)``, m = 0 .. D/2 - 1; PE[p, 2m] = sin(p omega_m), PE[p, 2m+1] = cos."""
    if model_dim % 2:
        raise PosencError(f"sinusoidal needs an even model width; got {model_dim}")
    b = exact(base)
    return [b ** sp.Rational(-2 * m, model_dim) for m in range(model_dim // 2)]


def pair(pairing: str, m: int, rotary_dims: int) -> tuple[int, int]:
    """Coordinates of plane ``m``: ``interleaved`` (2m, 2m+1) or ``half`` (m, m + r/2)."""
    if pairing == "interleaved":
        return 2 * m, 2 * m + 1
    if pairing == "half":
        return m, m + rotary_dims // 2
    raise PosencError(f"pairing must be interleaved or half; got {pairing!r}")


def rope_planes(spec: RoPE, head_dim: int) -> list[Plane]:
    """Every rotary plane of a RoPE head at its (scaled: :mod:`.rope_scaling`) angle; planes
    dropped by p-RoPE get angle 0."""
    r = spec.rotary_dims(head_dim)
    kept = spec.kept_planes(head_dim)
    angles = scaled_angles(spec, r)
    planes = []
    for m in range(r // 2):
        theta = angles[m] if m < kept else sp.Integer(0)
        planes.append((*pair(spec.pairing, m, r), theta))
    return planes


def xpos_planes(spec: XPos, head_dim: int) -> list[tuple[int, int, sp.Expr, sp.Expr]]:
    """xPos planes (2m, 2m+1, theta_m = base^(-2m/d), lambda_m = zeta_m^(1/scale_base)) with
    zeta_m = (2m/d + gamma)/(1 + gamma), exact; every dim of the head rotates."""
    if head_dim % 2:
        raise PosencError(f"xpos needs an even head dimension; got {head_dim}")
    b, g, s = exact(spec.base), exact(spec.gamma), exact(spec.scale_base)
    return [(2 * m, 2 * m + 1, b ** sp.Rational(-2 * m, head_dim),
             ((sp.Rational(2 * m, head_dim) + g) / (1 + g)) ** (1 / s))
            for m in range(head_dim // 2)]


def frequency_planes(frequencies: Sequence[float], head_dim: int) -> list[Plane]:
    """Planes of a custom frequency list: plane m = dims (2m, 2m+1) with angle f_m."""
    if 2 * len(frequencies) > head_dim:
        raise PosencError(f"custom: {len(frequencies)} frequencies need a head dim of at least "
                          f"{2 * len(frequencies)}; got {head_dim}")
    return [(2 * m, 2 * m + 1, exact(f)) for m, f in enumerate(frequencies)]


def alibi_slopes(n_heads: int, schedule: str) -> list[sp.Expr]:
    """Exact slopes of heads h = 1..H: ``press`` 2^(-8h/H) (standard extension), ``exp`` e^(-h/H);
    ``exp0``: e^(-h/H) for h = 0..H-1 (the paper's code)."""
    if schedule in ("exp", "exp0"):
        first = 0 if schedule == "exp0" else 1
        return [sp.exp(sp.Rational(-h, n_heads)) for h in range(first, first + n_heads)]

    def power_of_two(count: int) -> list[sp.Expr]:
        return [sp.Integer(2) ** sp.Rational(-8 * h, count) for h in range(1, count + 1)]

    p = 1 << (n_heads.bit_length() - 1)  # nearest power of two <= H
    if p == n_heads:
        return power_of_two(n_heads)
    return power_of_two(p) + power_of_two(2 * p)[0::2][: n_heads - p]


def t5_check(num_buckets: int, max_distance: int) -> None:
    if max_distance <= num_buckets // 4:
        raise PosencError(f"relative_bias: t5 needs max_distance > num_buckets/4 = "
                          f"{num_buckets // 4}; got {max_distance}")


def t5_bucket(relative: int, num_buckets: int, max_distance: int) -> int:
    """T5's bidirectional bucket of ``relative = j - i``, in exact integer arithmetic.

    Same rule as T5 / HF ``_relative_position_bucket`` (half the buckets per
    sign, exact below ``num_buckets/4``, then ``floor`` of the log-spaced index,
    capped), but the floor of ``log(n/e) / log(M/e) * (h - e)`` is decided by
    comparing integer powers, so ties are resolved exactly.
    """
    half = num_buckets // 2
    base = half if relative > 0 else 0
    n = abs(int(relative))
    exact_below = half // 2
    if n < exact_below:
        return base + n
    steps = half - exact_below
    cap = half - 1 - exact_below
    ratio, target = Fraction(max_distance, exact_below), Fraction(n, exact_below) ** steps
    v = 0
    while v < cap and ratio ** (v + 1) <= target:
        v += 1
    return base + exact_below + v


def t5_bucket_formula(k: sp.Expr, num_buckets: int, max_distance: int) -> sp.Expr:
    """The same bucket as a sympy formula of ``k = j - i`` (for display)."""
    half = num_buckets // 2
    e = half // 2
    n = sp.Abs(k)
    large = sp.Min(half - 1, e + sp.floor(sp.log(n / e) / sp.log(sp.Rational(max_distance, e))
                                          * (half - e)))
    return (sp.Piecewise((half, k > 0), (0, True))
            + sp.Piecewise((n, n < e), (large, True)))


def table_index(offset: sp.Expr, max_distance: int) -> sp.Expr:
    """The paper code's per-offset table: offset ``i - j`` clipped to ``[-M, M]``."""
    return sp.Max(-max_distance, sp.Min(max_distance, offset))
