"""Naming a rotary function that computes its angles or tables in half precision.

Half precision shows only as symptoms elsewhere -- f(·, p) not quite orthogonal, the logit
not quite shift invariant, frequencies off by 1e-4 relative, drift at large p -- so it is
recognised from the numbers themselves:

* *cos/sin tables in float16 / bfloat16*: every entry of every M_p (p ≤ 23) is a number of
  that format (a float32 or float64 table hits one by chance with probability ~2^-13 per
  non-trivial entry, and there are hundreds);
* *angles p·θ in float16 / bfloat16*, cos and sin then taken in float32: the angle of every
  plane that does not wrap by p = 23 (|p·θ| < π, read by atan2 to ~1e-7) is such a number,
  while the exact p·θ_m are not;
* *positions in float16 / bfloat16*: at a large position the slowest plane turns by
  round(p)·θ, not p·θ (float16 also overflows past 65504).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

FORMATS = ("bfloat16", "float16")      # bfloat16 first: its numbers are also float16 ones


def rounded(v: np.ndarray, fmt: str) -> np.ndarray:
    """``v`` rounded to float16 or bfloat16 (round to nearest even), as float64."""
    v = np.asarray(v, dtype=np.float64)
    if fmt == "float16":
        with np.errstate(over="ignore"):
            return v.astype(np.float16).astype(np.float64)
    bits = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def _all_in(v: np.ndarray, fmt: str, rtol: float) -> bool:
    v = v[np.isfinite(v) & (np.abs(v) > 1e-3) & (np.abs(np.abs(v) - 1) > 1e-3)]
    if v.size < 8:
        return False                    # too few non-trivial numbers to tell
    return bool(np.all(np.abs(rounded(v, fmt) - v) <= rtol * np.abs(v)))


def half_tables(M: np.ndarray, planes, theta_guess: Optional[np.ndarray] = None) -> str:
    """Words naming half-precision cos/sin tables or angles in M (S, D, D), or ""."""
    for fmt in FORMATS:
        if _all_in(M[1:], fmt, 1e-7):
            return (f"the cos/sin tables are {fmt}: every entry of f(e_a, p) is a {fmt} number "
                    f"(cos and sin rounded to {fmt}'s {11 if fmt == 'float16' else 8} bits)")
    if not planes:
        return ""
    a = np.array([p[0] for p in planes])
    b = np.array([p[1] for p in planes])
    ang = np.arctan2(M[1:, b, a], M[1:, a, a])                              # (S-1, planes)
    p = np.arange(1, M.shape[0])[:, None]
    step = ang[0]
    keep = np.abs(step) * (M.shape[0] - 1) < math.pi - 0.1                 # planes that do not wrap
    if keep.sum() < 2:
        return ""
    vals = ang[:, keep]
    for fmt in FORMATS:
        if _all_in(vals, fmt, 1e-6) and not _all_in(p * step[keep], fmt, 1e-6):
            return (f"the angles p·θ are computed in {fmt}: every plane's angle at p ≤ "
                    f"{M.shape[0] - 1} is a {fmt} number (cos and sin of a rounded angle)")
    return ""


def half_positions(angle: float, theta: float, p: int) -> str:
    """Words if the slowest plane's angle at p is round(p)·θ for a half format, or ""."""
    if not math.isfinite(angle):
        return (f"the output is not finite at position {p}" + (": positions or angles in "
                "float16 overflow past 65504" if p > 65504 else ""))
    wrap = lambda v: (v + math.pi) % (2 * math.pi) - math.pi  # noqa: E731
    for fmt in FORMATS:
        q = float(rounded(np.array([p]), fmt)[0])
        if not math.isfinite(q):
            continue
        off = abs(wrap((q - p) * theta))
        if q != p and off > 1e-6 and abs(wrap(angle - q * theta)) < 1e-2 * off:
            return (f"the positions are {fmt}: position {p} is read as {q:g} (the slowest "
                    f"plane turns by {q:g}·θ)")
    return ""
