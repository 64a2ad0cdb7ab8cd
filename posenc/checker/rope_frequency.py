"""Frequency recovery and large-position precision of a user's rotary function (RoPE, Su et al. 2021).

``check_frequencies`` fits the recovered plane angles θ_m to the catalogue's schedule
θ_m = base^(−2m/r) (posenc.encodings; reference values from
:func:`posenc.numerics.conventions.rope_frequencies`) and compares the user's rotation matrices
with the catalogue RoPE of the detected pairing and base.

``check_drift`` runs the function at positions 10^3..10^6 on float32 and float64 inputs and
compares with a reference rotation whose angles p·θ_m are computed by mpmath at 30 digits.
A float32 implementation rounds θ_m and p·θ_m (relative error ≲ (1 + |ln θ_m|)·u each, u = 2^-24)
and cos/sin to u; the product θ_m(1 + |ln θ_m|) ≤ 1 for θ_m ≤ 1, so its entries are off by at
most about 3u·p·θ_max + 4u per unit input.  We allow 4·eps32·(p·θ_max + 4) = 8u·(p·θ_max + 4):
twice that.  Anything beyond (half precision positions, wrapped position tables, a wrong
frequency at high index) fails.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from ..encodings import RoPE
from ..errors import PosencError
from ..limits import MIN_BASE
from .report import FAIL, NA, PASS, Property, fmt
from .positions import floored_factor
from .rope import EPS32, EPS64, GRID, LARGE, RopeProbe, recover_frequencies
from .rope_scaled_frequency import FREQ_TOL, fit_scaled, name_scaling, nice_bases, reversed_order
from .expect import expected_rope
from .half import half_positions


def _plane_index(pairing: str, a: int) -> int:
    return a // 2 if pairing == "interleaved" else a


def _reference_theta(base: float, r: int, pairing: str) -> np.ndarray:
    from ..numerics.conventions import rope_frequencies
    return rope_frequencies(RoPE(base=base, pairing=pairing), r)            # (r/2,)


def _fit_base(m: np.ndarray, theta: np.ndarray, r: int) -> float:
    """Least-squares ln(base) of log θ_m = −(2m/r) ln(base) over planes with m > 0."""
    use = (m > 0) & (theta > 0)
    if not use.any():
        return 10000.0          # one plane (θ_0 = 1 for any base): the base is not identifiable
    x = 2.0 * m[use] / r
    return float(math.exp(-np.dot(x, np.log(theta[use])) / np.dot(x, x)))


def reference_matrices(positions: np.ndarray, planes, theta: np.ndarray, dim: int) -> np.ndarray:
    """The catalogue rotation at each position for the given planes and angles: (S, dim, dim)."""
    M = np.tile(np.eye(dim), (len(positions), 1, 1))
    for (a, b), t in zip(planes, theta):
        c, s = np.cos(positions * t), np.sin(positions * t)
        M[:, a, a], M[:, b, b], M[:, b, a], M[:, a, b] = c, c, s, -s
    return M


def check_frequencies(M: np.ndarray, Mbig: np.ndarray, big: int, dim: int,
                      summary: dict, expected: Optional[dict] = None) -> Property:
    """θ_m against base^(−2m/r); with ``expected`` (an --expect with a scaling) against the
    expected spec's scaled frequencies (:mod:`.rope_scaled_frequency`)."""
    planes, pairing, r = summary.get("planes"), summary.get("pairing"), summary.get("rotary_dims")
    if not planes or pairing is None or not summary.get("rotations"):
        return Property("frequencies", NA, "needs planes that rotate (see pairing)")
    theta = recover_frequencies(M, Mbig, big, planes)
    m = np.array([_plane_index(pairing, a) for a, _ in planes])
    summary["theta"] = [float(t) for t in theta]
    floored = floored_factor(M)
    if floored:
        summary["floored"] = floored
        return Property("frequencies", FAIL, f"the positions are truncated: f(x, p) = f(x, "
                        f"{floored}·⌊p/{floored}⌋) -- interpolated positions p/{floored} floored "
                        f"to integers ((positions / {floored}).long()) instead of kept as "
                        f"fractions, so the angle moves only every {floored} positions",
                        f"positions 0..{floored - 1} all give f(x, p) = f(x, 0)")
    if theta[np.argmin(m)] < 0:
        a, b = planes[int(np.argmin(m))]
        return Property("frequencies", FAIL, "rotates the other way: (a, b) -> "
                        "(a cos + b sin, −a sin + b cos), i.e. θ_m < 0",
                        f"x = e_{a}, position 1: f(x,1)_{b} = {fmt(M[1, b, a])} (catalogue: "
                        f"+sin θ_0 > 0)")
    flipped = reversed_order(m, theta, r)
    if flipped is not None:
        k = int(np.argmax(m))
        a, b = planes[k]
        return Property("frequencies", FAIL, f"the frequencies are in reverse plane order: θ_m = "
                        f"base^(−2(r/2−1−m)/r) with base {fmt(flipped)}, the slowest plane first "
                        f"(inv_freq reversed, e.g. .flip(0))",
                        f"plane m = {m[k]} (dims {a}, {b}): θ = {fmt(theta[k])}; RoPE's fastest "
                        f"plane is m = 0 (θ_0 = 1)")
    if expected and expected.get("scaling", "none") != "none":
        return _check_scaled(M, m, theta, planes, pairing, r, dim, summary, expected)
    base = _fit_base(m, theta, r)
    if not base > MIN_BASE:           # θ_m rise with m: no RoPE base gives them
        k = int(np.argmax(theta))
        a, b = planes[k]
        return Property("frequencies", FAIL, f"θ_m ≠ base^(−2m/r) for any base > 1: the "
                        f"frequencies rise with m (best fit base {fmt(base)})",
                        f"plane m = {m[k]} (dims {a}, {b}): θ = {fmt(theta[k])}")
    # Prefer a round base (10000, 500000) when it explains θ as well as the exact fit does --
    # within 4x of the fit's own error: float32 tables put both at ~1e-7; a float64
    # implementation with base 44.444... gives the exact fit ~1e-15 and 44.4444 ~1e-7.
    cands = []
    for cand in [b for b in nice_bases(base) if b > MIN_BASE]:     # 1.0004 rounds to 1.00
        ref = _reference_theta(cand, r, pairing)[m]
        cands.append((cand, ref, np.abs(theta - ref) / np.abs(ref)))
    fit_err = float(np.max(cands[-1][2]))
    best = next(c for c in cands if np.max(c[2]) <= max(4 * fit_err, 1e-13) or c is cands[-1])
    base, ref, err = best
    summary["base"] = base
    fraction = r / dim
    spec = RoPE(base=base, pairing=pairing, fraction=fraction if r < dim else 1.0)
    summary["spec"] = spec.to_string()
    kept = len(planes)
    note = f"; planes m ≥ {kept} do not rotate (p-RoPE)" if kept < r // 2 else ""
    if err.max() > FREQ_TOL or not np.all(np.isfinite(err)):
        k = int(np.nanargmax(np.where(np.isfinite(err), err, np.inf)))
        a, b = planes[k]
        words = name_scaling(m, theta, r)
        if words:
            summary["scaling_found"] = words
        return Property("frequencies", FAIL, "θ_m ≠ base^(−2m/r) for any base"
                        + (f": {words}" if words else ""),
                        f"plane m = {m[k]} (dims {a}, {b}): θ = {fmt(theta[k])}, but the best fit "
                        f"base {fmt(base)} gives {fmt(ref[k])}")
    summary["theta_ref"] = [float(t) for t in ref]
    Mref = reference_matrices(np.arange(GRID, dtype=np.float64), planes, ref, dim)
    dev = float(np.abs(M - Mref).max())
    return Property("frequencies", PASS,
                    f"θ_m = base^(−2m/r), base = {base:.6g}, r = {r}{note}; agrees with "
                    f"{spec.to_string()} (max entry deviation {dev:.1e})")


def _check_scaled(M: np.ndarray, m: np.ndarray, theta: np.ndarray, planes, pairing: str, r: int,
                  dim: int, summary: dict, expected: dict) -> Property:
    base, ref, err = fit_scaled(m, theta, r, expected)
    conv = {k: v for k, v in expected.items() if k not in ("kind", "pairing", "fraction")}
    spec = expected_rope({**conv, "base": base, "pairing": pairing,
                          "fraction": r / dim if r < dim else 1.0})
    summary["base"] = base
    summary["spec"] = spec.to_string()
    if err.max() > FREQ_TOL or not np.all(np.isfinite(err)):
        k = int(np.nanargmax(np.where(np.isfinite(err), err, np.inf)))
        a, b = planes[k]
        found = name_scaling(m, theta, r) or "neither a uniform nor a per-band factor"
        want = name_scaling(m, ref, r)
        summary["scaling_found"] = f"found: {found}"
        return Property("frequencies", FAIL, f"θ_m are not the frequencies of {spec.to_string()}"
                        f": found: {found}" + (f"; expected: {want}" if want else ""),
                        f"plane m = {m[k]} (dims {a}, {b}): θ = {fmt(theta[k])}, the expected "
                        f"spec gives {fmt(ref[k])}")
    summary["theta_ref"] = [float(t) for t in ref]
    summary["scaled"] = True
    Mref = reference_matrices(np.arange(GRID, dtype=np.float64), planes, ref, dim)
    dev = float(np.abs(M - Mref).max())
    return Property("frequencies", PASS,
                    f"θ_m = the scaled frequencies of {spec.to_string()} (base {base:.6g}, r = {r}; "
                    f"max relative deviation {err.max():.1e}, max entry deviation {dev:.1e})")


def _mp_reference(x: np.ndarray, positions, planes, base: float, r: int, pairing: str,
                  theta: Optional[Sequence[float]] = None) -> np.ndarray:
    """Rotate x (B, S, D) at ``positions`` with angles p·θ_m computed by mpmath at 30 digits;
    θ_m = base^(−2m/r) at 30 digits, or the float64 ``theta`` per plane (a scaled RoPE's: their
    rounding, ≤ 1.1e-16·p·θ, is far below even the float64 bound 4·eps64·(p·θ + 4))."""
    import mpmath as mp

    out = x.copy()
    with mp.workdps(30):
        for k, (a, b) in enumerate(planes):
            mm = _plane_index(pairing, a)
            th = (mp.power(mp.mpf(base), -mp.mpf(2 * mm) / r) if theta is None
                  else mp.mpf(theta[k]))
            for s, p in enumerate(positions):
                ang = mp.mpf(int(p)) * th
                c, sn = float(mp.cos(ang)), float(mp.sin(ang))
                xa, xb = x[:, s, a], x[:, s, b]
                out[:, s, a] = xa * c - xb * sn
                out[:, s, b] = xa * sn + xb * c
    return out


def _half_positions(probe: RopeProbe, p: int, planes, pairing: str, summary: dict) -> str:
    """Words if the rotation at p is that of p rounded to a half format (see :mod:`.half`)."""
    try:
        Mp = probe.matrices(np.array([p]))[0]
    except PosencError:
        return ""
    k = int(np.argmax([_plane_index(pairing, a) for a, _ in planes]))      # the slowest plane
    a, b = planes[k]
    if not np.all(np.isfinite(Mp)):
        return half_positions(float("nan"), 0.0, p)
    return half_positions(float(np.arctan2(Mp[b, a], Mp[a, a])), summary["theta_ref"][k], p)


def check_drift(probe: RopeProbe, dim: int, summary: dict,
                large: Sequence[int] = LARGE) -> Property:
    """f at the ``large`` positions (see :mod:`.reach`), each in a call of its own."""
    if "theta_ref" not in summary:
        return Property("float32 drift", NA, "needs the catalogue frequency schedule")
    if not len(large):
        return Property("float32 drift", NA, "no position past 23 to probe (see large positions)")
    planes, pairing, r, base = (summary["planes"], summary["pairing"], summary["rotary_dims"],
                                summary["base"])
    positions = np.array(sorted(large), dtype=np.int64)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, len(positions), dim))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)                          # unit vectors
    try:
        y64 = np.concatenate([probe.apply(x[:, k:k + 1], positions[k:k + 1])
                              for k in range(len(positions))], axis=1)
        y32 = np.concatenate([probe.apply(x[:, k:k + 1].astype(np.float32), positions[k:k + 1])
                              for k in range(len(positions))], axis=1)
    except PosencError as exc:
        return Property("float32 drift", FAIL, "raised at large positions", str(exc))
    shifted = positions + int(summary.get("offset", 0))      # "positions start at c": see positions.py
    theta = summary["theta_ref"] if summary.get("scaled") else None
    ref = _mp_reference(x.astype(np.float32).astype(np.float64), shifted, planes,
                        base, r, pairing, theta)
    ref64 = _mp_reference(x, shifted, planes, base, r, pairing, theta)
    tmax = max(abs(t) for t in summary["theta_ref"])
    e32 = np.abs(y32 - ref).max(axis=(0, 2))                                # (len(LARGE),)
    e64 = np.abs(y64 - ref64).max(axis=(0, 2))
    b32 = 4 * EPS32 * (positions * tmax + 4)
    b64 = 4 * EPS64 * (positions * tmax + 4)
    summary["drift"] = {str(int(p)): {"float32_error": float(e), "float32_bound": float(b),
                                      "float64_error": float(f), "float64_bound": float(c)}
                        for p, e, b, f, c in zip(positions, e32, b32, e64, b64)}
    tables = ("float64 input computed in float64" if np.all(e64 <= b64) else
              f"float64 input is off by {e64[-1]:.1e} at p={positions[-1]} (float64 arithmetic allows "
              f"{b64[-1]:.1e}): its cos/sin tables are float32")
    bad = np.flatnonzero(~(e32 <= b32))
    if bad.size:
        k = int(bad[0])
        words = _half_positions(probe, int(positions[k]), planes, pairing, summary)
        return Property("float32 drift", FAIL, "float32 output drifts beyond float32 rounding"
                        + (f": {words}" if words else ""),
                        f"position {positions[k]}: max |f(x,p) − exact| = {fmt(e32[k], 3)} for unit x "
                        f"(float32 rounding of p·θ allows {fmt(b32[k], 3)})")
    return Property("float32 drift", PASS,
                    f"float32 input: max error {e32[-1]:.1e} at p={positions[-1]} (rounding bound "
                    f"{b32[-1]:.1e}); {tables}")
