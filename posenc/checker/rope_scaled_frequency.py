"""Scaled RoPE frequencies in a user's rotary function (:mod:`posenc.encodings.rope_scaling`).

* :func:`name_scaling` -- words for recovered θ_m that are not base^(−2m/r) but look like a
  known scaling: a *uniform* factor (least squares of log θ_m = a + b·m: the slope gives the base,
  the intercept the factor F = e^(−a); linear scaling / position interpolation), or a *per-band*
  factor (the fast planes follow base^(−2m/r), the slow ones are divided by a factor that rises
  with m up to F: YaRN, Llama 3.1 and NTK-by-parts all do this).
* :func:`fit_scaled` -- ``--expect scaling=KIND,factor=F,...``: the catalogue's scaled
  frequencies (:func:`posenc.numerics.conventions.rope_frequencies`) of the expected spec, at the
  expected base or else at the base that explains θ best (the estimates below, rounded).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .report import fmt
from .expect import expected_rope

# θ recovered from float32 tables is off by ≲ (1 + |ln θ|)·u ≲ 6e-7 relative (θ ≥ 1e-4); a
# different base or frequency layout changes some θ_m by ≥ 1e-3 relative.
FREQ_TOL = 1e-5
REF_BASE = 10000.0


def nice_bases(base: float) -> list[float]:
    """``base`` to 3, 4 and 6 significant digits, then itself (round bases first)."""
    return [float(f"{base:.{k}g}") for k in (3, 4, 6)] + [base]


def _round_base(base: float, ok) -> float:
    """The roundest of :func:`nice_bases` for which ``ok(base)`` holds, else ``base``."""
    return next((b for b in nice_bases(base) if ok(b)), base)


def _shown(v: float) -> str:
    """A factor for a message: an integer when it is one to 1e-4, else 4 digits."""
    n = round(v)
    return str(n) if n >= 1 and abs(v / n - 1) < 1e-4 else fmt(v, 4)


def _times(k: int) -> str:
    return {2: "twice", 3: "three times"}.get(k, f"{k} times")


def reversed_order(m: np.ndarray, theta: np.ndarray, r: int) -> Optional[float]:
    """The base when θ_m = base^(−2(r/2−1−m)/r) (a base > 1): the planes' frequencies in reverse
    order (``inv_freq.flip(0)``), the slowest plane first; None otherwise."""
    if len(m) < 3 or sorted(m.tolist()) != list(range(r // 2)) or not np.all(theta > 0):
        return None
    flipped = r // 2 - 1 - m
    use = flipped > 0
    x = 2.0 * flipped[use] / r
    base = math.exp(-np.dot(x, np.log(theta[use])) / np.dot(x, x))
    if not base > 1.0:
        return None

    def ok(b: float) -> bool:
        return bool(np.max(np.abs(b ** (-2.0 * flipped / r) / theta - 1)) <= FREQ_TOL)
    return _round_base(base, ok) if ok(base) else None


def uniform_factor(m: np.ndarray, theta: np.ndarray, r: int) -> Optional[tuple[float, float]]:
    """(base, F) when θ_m = base^(−2m/r) / F to FREQ_TOL with F ≠ 1, from the least-squares fit
    of log θ_m = a + b·m (base = e^(−b r/2), F = e^(−a)); None otherwise."""
    if len(m) < 2 or len(set(m.tolist())) < 2 or not np.all(theta > 0):
        return None
    A = np.stack([np.ones(len(m)), m.astype(np.float64)], axis=1)
    (a, b), *_ = np.linalg.lstsq(A, np.log(theta), rcond=None)
    factor = math.exp(-a)
    if abs(factor - 1) <= FREQ_TOL or b >= 0:
        return None

    def ok(base: float) -> bool:
        return bool(np.max(np.abs(base ** (-2.0 * m / r) / factor / theta - 1)) <= FREQ_TOL)

    base = math.exp(-b * r / 2)
    if not ok(base):
        return None
    return _round_base(base, ok), factor


def per_band_factor(m: np.ndarray, theta: np.ndarray, r: int) -> Optional[dict]:
    """The fast planes m ≤ k follow base^(−2m/r); the slower ones are divided by a factor
    base^(−2m/r)/θ_m that rises with m (never falls, never below 1) to F > 1.  The base comes
    from plane 1 (plane 0 must be unchanged, θ_0 = 1).  None when θ is not of that form."""
    order = np.argsort(m)
    m, theta = m[order], theta[order]
    if len(m) < 3 or m[0] != 0 or m[1] != 1 or not np.all(theta > 0):
        return None
    if abs(theta[0] - 1) > FREQ_TOL:
        return None

    def ok(base: float) -> bool:
        return abs(base ** (-2.0 / r) / theta[1] - 1) <= FREQ_TOL

    base = _round_base(theta[1] ** (-r / 2.0), ok)
    ratio = base ** (-2.0 * m / r) / theta                                  # the factor per plane
    factor = float(ratio.max())
    if factor <= 1 + FREQ_TOL or np.any(ratio < 1 - FREQ_TOL):
        return None
    if np.any(np.diff(ratio) < -FREQ_TOL * ratio[1:]):
        return None                         # falls somewhere: not one band boundary
    kept = int(m[np.flatnonzero(ratio > 1 + FREQ_TOL)[0] - 1])
    top = int(m[np.flatnonzero(ratio >= factor * (1 - FREQ_TOL))[0]])
    return {"base": base, "factor": factor, "kept": kept, "top": top}


def name_scaling(m: np.ndarray, theta: np.ndarray, r: int) -> str:
    """Words for a recognised scaling of θ (``""`` if none is recognised)."""
    uniform = uniform_factor(m, theta, r)
    if uniform:
        base, factor = uniform
        times = round(1 / factor)
        if times >= 2 and abs(times * factor - 1) <= FREQ_TOL:     # θ_0 = k: every angle ×k
            return (f"every angle is multiplied by {times}: θ_m = {times}·base^(−2m/r) with base "
                    f"{fmt(base)} (θ_0 = {times}, where RoPE has 1 for any base) -- the positions "
                    f"multiplied by {times}: RoPE applied {_times(times)}, or a linear factor "
                    f"{times} applied as p·{times} instead of p/{times}")
        return (f"frequencies are base^(−2m/r)/{_shown(factor)} with base {fmt(base)}: linear "
                f"scaling ×{_shown(factor)} (position interpolation)?")
    band = per_band_factor(m, theta, r)
    if band:
        f = _shown(band["factor"])
        return (f"planes m ≤ {band['kept']} follow base^(−2m/r) with base {fmt(band['base'])} and "
                f"the slower ones are divided by a factor rising to {f} (reached at m = "
                f"{band['top']}): a per-band factor from 1 to {f}: YaRN / Llama-3 / NTK-by-parts "
                f"scaling?")
    return ""


def scaled_theta(expected: dict, base: float, r: int) -> np.ndarray:
    from ..numerics.conventions import rope_frequencies

    conv = {k: v for k, v in expected.items() if k not in ("kind", "pairing", "fraction")}
    conv["base"] = base
    return rope_frequencies(expected_rope(conv), r)                         # (r/2,)


def _estimates(m: np.ndarray, theta: np.ndarray, r: int) -> list[float]:
    """Base estimates that need no model of the scaling: plane 1 over plane 0 (exact where the
    fast planes are unchanged or all share one factor) and the slope of log θ_m = a + b·m."""
    out = []
    i0, i1 = np.flatnonzero(m == 0), np.flatnonzero(m == 1)
    if i0.size and i1.size and theta[i0[0]] > 0 and theta[i1[0]] > 0:
        out.append((theta[i0[0]] / theta[i1[0]]) ** (r / 2.0))
    if len(set(m.tolist())) >= 2 and np.all(theta > 0):
        b = np.polyfit(m.astype(np.float64), np.log(theta), 1)[0]
        out.append(math.exp(-b * r / 2))
    return [e for e in out if math.isfinite(e) and e > 1]


def fit_scaled(m: np.ndarray, theta: np.ndarray, r: int,
               expected: dict) -> tuple[float, np.ndarray, np.ndarray]:
    """(base, the expected spec's θ at the planes m, relative error per plane).

    The expected base if given; else each estimate of :func:`_estimates` is carried over to the
    scaling's own base (a base change like NTK's multiplies the estimate by the same number at
    every base: the estimate of the reference spec at base 10000, divided by 10000), rounded
    (:func:`nice_bases`), and the roundest base within 4x of the best one's error is taken."""
    if "base" in expected:
        ref = scaled_theta(expected, expected["base"], r)[m]
        return expected["base"], ref, np.abs(theta - ref) / np.abs(ref)
    ref0 = scaled_theta(expected, REF_BASE, r)
    m_all = np.arange(r // 2)
    cands: list[float] = []
    for got, want in zip(_estimates(m, theta, r), _estimates(m_all, ref0, r)):
        cands += nice_bases(got * REF_BASE / want)
    cands = sorted(set(cands), key=lambda b: (len(f"{b:.15g}"), b)) or [REF_BASE]
    scored = []
    for base in cands:
        ref = scaled_theta(expected, base, r)[m]
        scored.append((base, ref, np.abs(theta - ref) / np.abs(ref)))
    best = min(float(np.max(e)) for _, _, e in scored)
    return next(c for c in scored if np.max(c[2]) <= max(4 * best, 1e-13))
