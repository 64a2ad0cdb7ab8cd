"""Dynamic NTK scaling (``--expect scaling=dynamic,factor=F,original=L``, or a dynamic rope from
a transformers config): the frequencies past the trained length and after a long call.

transformers (``modeling_rope_utils``: ``dynamic_rope_update`` and
``_compute_dynamic_ntk_parameters``, 5.x) computes, before each forward pass,
``seq_len = max(position_ids) + 1``; when ``seq_len > L`` (``max_position_embeddings``) the base
becomes ``base ((F seq_len / L) − (F − 1))^(r/(r−2))``, so a call whose largest position is L−1
keeps the trained frequencies and one that reaches position L does not.  It caches the largest
seq_len seen (a later call that is longer than L but shorter than the cached one keeps the
cached frequencies) and *resets* to the trained frequencies when a call with ``seq_len < L``
follows.  A stateless implementation that recomputes per call agrees with that on every call
probed here, which are:

0. positions 0..23 alone (the trained frequencies), 1. 0..23 and L−1 (still trained),
2. every position 0..L (the first scaled length, L+1), 3. 0..23 and 2L−1 (2L),
4. a chunk of 24 positions ending at 3L−1 (3L: the largest position, not the chunk's length),
5. positions 0..23 again, after the long calls (back to the trained frequencies).

Each call is read through one input, x = Σ e_a over the first dim a of every rotary plane (a, b):
f(x, p)_a = cos φ, f(x, p)_b = sin φ.  Its angles φ are compared at every position of the call
with p·θ_m(N) of the expected rule (:func:`.rope_scaled_frequency.scaled_theta`), allowing the
float32 rounding of p·θ (8·eps32·(p·θ_max + 4)); a mismatch is named by the rule it matches
instead: the trained frequencies on a long call (never updates), the call's length instead of
its largest position + 1 (chunk length), the largest position instead of it + 1 (off by one), or
the long call's frequencies on a short call after it (never resets).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..errors import PosencError
from .report import FAIL, NA, PASS, Property, fmt
from .rope import EPS32, GRID, RopeProbe
from .rope_scaled_frequency import scaled_theta
from ..encodings.rope_scaling import DEFAULTS

SMALL = np.arange(GRID)
#: the longest call made of every position (x of FULL rows); a longer trained length is probed
#: with 24 positions and its largest alone, which cannot tell "never updates" from "sized by the
#: chunk length" (both name then)
FULL = 1 << 16


def _calls(L: int) -> list[tuple[str, np.ndarray]]:
    """(what, positions) of the probe calls, in order (see the module docstring); past
    :data:`FULL` positions the call of every position 0..L is 0..23 and L instead."""
    first = ((f"positions 0..{L}", np.arange(L + 1)) if L < FULL else
             (f"positions 0..23 and {L}", np.append(SMALL, L)))
    return [("positions 0..23", SMALL),
            (f"positions 0..23 and {L - 1}", np.append(SMALL, L - 1)),
            first,
            (f"positions 0..23 and {2 * L - 1}", np.append(SMALL, 2 * L - 1)),
            (f"a chunk of positions {3 * L - GRID}..{3 * L - 1}", np.arange(3 * L - GRID, 3 * L)),
            (f"positions 0..23 after the call reaching {3 * L - 1}", SMALL)]


def _angles(probe: RopeProbe, planes, positions: np.ndarray) -> np.ndarray:
    """φ (S, planes) of f at ``positions`` in one call."""
    x = np.zeros((1, len(positions), probe.dim))
    a = np.array([p[0] for p in planes])
    b = np.array([p[1] for p in planes])
    x[0, :, a] = 1.0
    y = probe.apply(x, positions)[0]                                        # (S, D)
    return np.arctan2(y[:, b], y[:, a])


def _off(phi: np.ndarray, positions: np.ndarray, theta: np.ndarray) -> float:
    """max over positions of |φ − p·θ| (wrapped) over the float32 rounding allowance."""
    p = positions.astype(np.float64)[:, None]
    dev = np.abs((phi - p * theta[None] + math.pi) % (2 * math.pi) - math.pi)
    bound = 8 * EPS32 * (p * float(np.max(np.abs(theta))) + 4)
    return float(np.max(dev / bound)) if np.all(np.isfinite(dev)) else math.inf


def _sized_by_max_position(probe: RopeProbe, planes, L: int, theta) -> bool:
    """Does a call reaching position 2L−1 rotate with the frequencies of length 2L−1 (the largest
    position) rather than 2L?  Tells that off-by-one from "never updates", which agree on the
    call reaching position L."""
    pos = np.append(SMALL, 2 * L - 1)
    try:
        phi = _angles(probe, planes, pos)
    except PosencError:
        return False
    return _off(phi, pos, theta(2 * L - 1)) <= 1 and _off(phi, pos, theta(2 * L)) > 1


def check_dynamic(probe: RopeProbe, dim: int, summary: dict, expected: dict) -> Property:
    """The ``dynamic scaling`` property (see the module docstring)."""
    if not summary.get("scaled") or summary.get("offset"):
        return Property("dynamic scaling", NA, "needs the expected spec's frequencies at "
                        "positions 0..23 (see frequencies)")
    planes, pairing, r, base = (summary["planes"], summary["pairing"], summary["rotary_dims"],
                                summary["base"])

    L = int(expected.get("original", DEFAULTS["original"]))
    F = float(expected.get("factor", DEFAULTS["factor"]))
    m = np.array([a // 2 if pairing == "interleaved" else a for a, _ in planes])

    def theta(n: int) -> np.ndarray:
        return scaled_theta({**expected, "seq_len": max(int(n), L)}, base, r)[m]

    def base_at(n: int) -> str:
        n = max(n, L)
        return fmt(base * ((F * n / L) - (F - 1)) ** (r / (r - 2)))

    longest = L
    for k, (what, pos) in enumerate(_calls(L)):
        try:
            phi = _angles(probe, planes, pos)
        except PosencError as exc:
            return Property("dynamic scaling", FAIL, f"raised on a call of {what}: dynamic "
                            f"scaling is expected to work past original={L}", str(exc))
        n = int(pos.max()) + 1
        want = theta(n)
        if _off(phi, pos, want) <= 1:
            longest = max(longest, n)
            continue
        short = n <= L
        words = ""
        if short and longest > L and _off(phi, pos, theta(longest)) <= 1:
            words = (f"it does not reset after a long call: {what} rotate with the base "
                     f"{base_at(longest)} of the call of length {longest}, not the trained "
                     f"base {fmt(base)} (transformers' dynamic_rope_update resets to the "
                     f"original frequencies when a call's max position + 1 is below "
                     f"original={L})")
        elif short and k == 0 and 1 in m:
            seen = float(phi[1, int(np.flatnonzero(m == 1)[0])]) ** (-r / 2)
            words = (f"it does not reset after a long call: {what}, after the checker's earlier "
                     f"calls at large positions, rotate with a base of {fmt(seen)}, not the "
                     f"trained base {fmt(base)} (transformers' dynamic_rope_update resets to the "
                     f"original frequencies when a call's max position + 1 is below "
                     f"original={L})")
        elif short and n == L and _off(phi, pos, theta(L + 1)) <= 1:
            words = (f"the scaling starts one position early: a call reaching position {L - 1} "
                     f"(max position + 1 = {L}, not past original={L}) is already scaled; "
                     f"transformers scales when max position + 1 > original")
        elif not short and _off(phi, pos, theta(L)) <= 1 and len(pos) > L:
            if _sized_by_max_position(probe, planes, L, theta):
                words = (f"off by one: it sizes by the largest position, not the largest position "
                         f"+ 1: {what} (max position + 1 = {n} > original={L}) rotate with the "
                         f"trained base {fmt(base)}, and a call reaching {2 * L - 1} with the "
                         f"base {base_at(2 * L - 1)} of length {2 * L - 1}, not {base_at(2 * L)}")
            else:
                words = (f"dynamic NTK that never updates with length: {what} rotate with the "
                         f"trained base {fmt(base)}, not the dynamic base {base_at(n)} "
                         f"(factor {fmt(F)}, max position + 1 = {n} > original={L})")
        elif not short and L >= FULL and _off(phi, pos, theta(L)) <= 1:
            words = (f"dynamic NTK that never updates with length, or one sized by the chunk "
                     f"length: {what} rotate with the trained base {fmt(base)}, not "
                     f"{base_at(n)} (original={L} is past {FULL}, the longest call probed)")
        elif not short and _off(phi, pos, theta(len(pos))) <= 1:
            words = (f"sized by the chunk length, not the largest position: {what} "
                     f"({len(pos)} positions, the largest {n - 1}) rotate with the base "
                     f"{base_at(len(pos))} of length {max(len(pos), L)}; the dynamic rule "
                     f"uses max position + 1 = {n} (base {base_at(n)})")
        elif not short and _off(phi, pos, theta(n - 1)) <= 1:
            words = (f"off by one: {what} rotate with the base {base_at(n - 1)} of length "
                     f"{max(n - 1, L)} (the largest position), not {base_at(n)} of max position "
                     f"+ 1 = {n}")
        s = int(np.argmax(np.max(np.abs((phi - pos[:, None] * want[None] + math.pi)
                                        % (2 * math.pi) - math.pi), axis=1)))
        j = int(np.argmax(np.abs((phi[s] - pos[s] * want + math.pi) % (2 * math.pi) - math.pi)))
        summary["dynamic_failed_call"] = k
        return Property("dynamic scaling", FAIL, words or f"{what}: the angles are not the "
                        f"dynamic rule's (base {base_at(n)} for max position + 1 = {n}, factor "
                        f"{fmt(F)}, original={L})",
                        f"{what}: position {int(pos[s])}, plane m = {int(m[j])}: angle "
                        f"{fmt(float(phi[s, j]))}, the dynamic rule gives "
                        f"{fmt(float((pos[s] * want[j] + math.pi) % (2 * math.pi) - math.pi))}")
    return Property("dynamic scaling", PASS, f"base {fmt(base)} on calls up to max position "
                    f"{L - 1}, ((F·N/L) − (F − 1))^(r/(r−2)) times it past (N = max position + 1: "
                    f"{L + 1}, {2 * L}, and {3 * L} for a 24-position chunk), and back to "
                    f"{fmt(base)} on a short call after the long ones (F = {fmt(F)}, L = {L})")


def wants_dynamic(expected: Optional[dict]) -> bool:
    return bool(expected) and expected.get("scaling") == "dynamic"
