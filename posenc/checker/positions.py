"""Does a user's rotary function use its positions, and is position 0 the identity?

RoPE (Su et al. 2021) rotates by p·θ_m, so f(x, 0) = x and f(·, p) changes with p.  Three slips
keep shift invariance -- so they pass the logit checks of :mod:`.rope` -- and only show as odd
fitted frequencies unless named:

* *the positions are ignored*: f(x, p) is the same for every p, or f rotates by 0..seq−1
  whatever positions it is given (detected by calling it with the positions reversed);
* *positions start at c*: f(x, p) = RoPE(x, p + c), so M_0 = R(c·θ_m) in every plane;
* *sin and cos swapped*: (a, b) -> (a sin − b cos, a cos + b sin) is a rotation by π/2 − p·θ_m,
  so M_0 turns every plane by exactly 90° and the angle decreases with p.

:func:`check_positions` returns the property and, when M_0 is a rotation other than the
identity, M_0 itself so that the plane and frequency checks can read the relative rotations
M_p M_0ᵀ (which for an offset are the true RoPE rotations).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .report import FAIL, PASS, Property, fmt
from .rope import TOL, RopeProbe, find_planes, plane_angles


def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + math.pi) % (2 * math.pi) - math.pi


def _diagnose_start(M: np.ndarray, M0: np.ndarray, summary: dict) -> str:
    """Words for a rotation M_0 ≠ I: swapped sin/cos, an offset, or nothing recognised."""
    rel = np.einsum("sab,cb->sac", M[1:], M0)                               # M_p M_0ᵀ
    planes, _ = find_planes(np.concatenate([rel, M0[None]]))
    if not planes:
        return ""
    phi = np.array([plane_angles(M0[None], pl)[0] for pl in planes])       # angle at p = 0
    theta = np.array([plane_angles(rel[:1], pl)[0] for pl in planes])      # angle per step
    if np.all(np.abs(np.abs(phi) - math.pi / 2) < 1e-6):
        summary["start_angle"] = "pi/2"
        return ("sin and cos look swapped: f(x, 0) turns every plane by 90° "
                "(a sin − b cos, a cos + b sin) and the angle then decreases with p")
    slow = int(np.argmin(np.where(np.abs(theta) > 1e-12, np.abs(theta), np.inf)))
    if abs(theta[slow]) <= 1e-12:
        return ""
    c = round(float(phi[slow] / theta[slow]))
    if c != 0 and np.all(np.abs(_wrap(phi - c * theta)) < 1e-5):
        summary["offset"] = c
        return (f"positions start at {c}: f(x, p) = RoPE(x, p + {c}) (an off-by-one in the "
                f"position ids or the cos/sin table)" if c == 1 else
                f"positions are offset by {c}: f(x, p) = RoPE(x, p + {c})")
    return ""


def check_positions(probe: RopeProbe, M: np.ndarray, positions: np.ndarray,
                    summary: dict) -> tuple[Property, Optional[np.ndarray], bool]:
    """(property, M_0 to factor out or None, the positions are ignored)."""
    D = M.shape[1]
    eye = np.eye(D)
    moving = np.abs(M - M[0]).max()
    if not moving > TOL:
        what = "= x" if not np.abs(M[0] - eye).max() > TOL else "is the same rotation"
        return (Property("uses positions", FAIL, f"the positions are ignored: f(x, p) {what} "
                         f"for every p in 0..{positions[-1]}",
                         f"x = e_0: f(x, 0) and f(x, {positions[-1]}) are equal"), None, True)
    Mrev = probe.matrices(positions[::-1].copy())                           # (S, D, D)
    if not np.abs(Mrev - M).max() > TOL:
        return (Property("uses positions", FAIL, "the positions are ignored: f gives the same "
                         f"result for positions 0..{positions[-1]} and {positions[-1]}..0 -- it "
                         "seems to rotate by 0..seq−1 (an arange) instead of the positions it "
                         "is given", f"x = e_0, positions reversed: f(x, {positions[-1]}) "
                         f"at index 0 equals f(x, 0)"), None, True)
    moved = np.abs(Mrev[::-1] - M).max(axis=(1, 2))
    if np.any(moved > TOL):
        s = int(np.argmax(moved > TOL))
        return (Property("uses positions", FAIL, "f(x, p) depends on where p sits in the "
                         "positions array, not on p alone",
                         f"position {positions[s]}: f differs by {fmt(moved[s], 3)} when the "
                         f"positions are given reversed"), None, False)
    dev0 = np.abs(M[0] - eye)
    if not dev0.max() > TOL:
        return (Property("uses positions", PASS, f"f(x, 0) = x, and f(x, p) follows p (positions "
                         f"0..{positions[-1]} given forward and reversed agree)"), None, False)
    orthogonal = not np.abs(M[0].T @ M[0] - eye).max() > TOL
    words = _diagnose_start(M, M[0], summary) if orthogonal else ""
    a, b = (int(v) for v in np.argwhere(dev0 > TOL)[0])
    cex = (f"x = e_{b}, position 0: f(x,0)_{a} = {fmt(M[0, a, b])}, but f(x, 0) = x gives "
           f"{fmt(eye[a, b])}")
    return (Property("uses positions", FAIL, "f(x, 0) ≠ x" + (f": {words}" if words else ""),
                     cex), M[0] if orthogonal else None, False)


def floored_factor(M: np.ndarray) -> Optional[int]:
    """F ≥ 2 when f(x, p) = f(x, F·⌊p/F⌋) at every probe position and f moves by position F:
    interpolated positions p/F floored to integers ((positions / F).long()), else None."""
    p = np.arange(M.shape[0])
    for F in range(2, M.shape[0] // 2):
        if np.abs(M[F] - M[0]).max() > TOL and not np.abs(M - M[F * (p // F)]).max() > TOL:
            return F
    return None
