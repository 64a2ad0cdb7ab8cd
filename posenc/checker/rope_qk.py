"""Conformance of a rotary function of both q and k, ``f(q, k, positions) -> (q_rot, k_rot)``
(transformers' ``apply_rotary_pos_emb(q, k, cos, sin)`` shape; ``--kind rope-qk``).

RoPE rotates the query at i and the key at j by the *same* rotation family, so that the logit
⟨R_i q, R_j k⟩ depends on j − i.  Two slips keep the logit shift invariant and so pass every
check of one rotary function, and show only here:

* *the KV-cache offset*: the query is rotated at past_len + p and the key at p (the new
  positions were given to q, the cache's to k, or the reverse): Q_p K_pᵀ is the same rotation
  R(c·θ) at every p, so every logit is read at distance j − i − c;
* *q and k with different conventions*: a half-split table on one side and an interleaved one
  on the other, or different bases.

Checks (the maps Q_p, K_p are read off the basis vectors as in :mod:`.xpos`): linear, uses
positions, norm preservation of each side, shift invariance of the logit, the same rotation for
q and k (with the two slips named), then pairing, frequencies and ``--expect`` on the common
rotation as for ``--kind rope``, a stated scaling (``--expect scaling=...``) included: a
constant scale of both sides is read as an attention factor (YaRN's, applied to cos and sin) and
checked against the expected one, and the frequencies against the scaled ones.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..errors import PosencError
from .loading import Caller
from .report import FAIL, NA, PASS, ConformanceReport, Property, fmt
from .rope import GRID, TOL, check_pairing, check_shift
from .rope_frequency import check_frequencies
from .xpos import open_pair_report
from .rope_scale import scale_value, norm_property
from .expect import expected_scaling, check_rope_expectation


def _conventions(M: np.ndarray, dim: int) -> dict:
    """Pairing and base of one side's rotations, read as for a rotary function."""
    summary: dict = {}
    positions = np.arange(len(M))
    if check_pairing(M, positions, M[-1:], summary).status == PASS:
        check_frequencies(M, M[-1:], len(M) - 1, dim, summary)
    return summary


def _same_rotation(Mq: np.ndarray, Mk: np.ndarray, dim: int, summary: dict) -> Property:
    dev = np.abs(Mq - Mk).max(axis=(1, 2))
    if not dev.max() > TOL:
        return Property("same rotation for q and k", PASS, f"Q_p = K_p at p ≤ {len(Mq) - 1}")
    s = int(np.argmax(dev > TOL))
    a, b = (int(v) for v in np.argwhere(np.abs(Mq[s] - Mk[s]) > TOL)[0])
    cex = (f"position {s}, x = e_{b}: f_q(x)_{a} = {fmt(Mq[s, a, b])}, f_k(x)_{a} = "
           f"{fmt(Mk[s, a, b])}")
    Dp = np.einsum("sab,scb->sac", Mq, Mk)                                  # Q_p K_pᵀ
    if not np.abs(Dp - Dp[0]).max() > TOL:
        # a constant rotation apart: read the offset on the side that is the identity at p = 0
        eye = np.eye(dim)
        base_side, sign = (Mk, 1) if not np.abs(Mk[0] - eye).max() > TOL else (Mq, -1)
        k = _conventions(base_side, dim)
        if k.get("theta"):
            planes, theta = k["planes"], np.array(k["theta"])
            slow = int(np.argmin(np.abs(theta)))
            a0, b0 = planes[slow]
            c = sign * round(math.atan2(Dp[0, b0, a0], Dp[0, a0, a0]) / theta[slow])
            summary["qk_offset"] = c
            who = (f"q is rotated at p + {c} and k at p" if c > 0 else
                   f"k is rotated at p + {-c} and q at p")
            return Property("same rotation for q and k", FAIL,
                            f"{who} (Q_p K_pᵀ is the same rotation at every p): the KV-cache "
                            f"offset -- the new queries' positions start at past_len = {abs(c)} "
                            f"and the keys' at 0 (or the reverse), so every logit is read "
                            f"{abs(c)} positions off", cex)
        return Property("same rotation for q and k", FAIL, "q and k are rotated a constant "
                        "rotation apart (Q_p K_pᵀ is the same at every p): positions offset "
                        "between q and k", cex)
    for side, A, other in (("q", Mq, Mk), ("k", Mk, Mq)):
        if not np.abs(A - np.einsum("sab,sbc->sac", other, other)).max() > TOL:
            return Property("same rotation for q and k", FAIL, f"RoPE applied twice to {side}: "
                            f"{side} is rotated by R_p R_p = R_2p (the angle doubled, 2p·θ_m) "
                            f"and {'k' if side == 'q' else 'q'} by R_p -- rotated once in the "
                            f"model and again here", cex)
    for side, A, other in (("k", Mk, Mq), ("q", Mq, Mk)):
        if not np.abs(A - np.swapaxes(other, 1, 2)).max() > TOL:      # R_p^T = R_(−p)
            return Property("same rotation for q and k", FAIL, f"{side} rotates the other way: "
                            f"{side} is rotated by R_(−p) = R_pᵀ and "
                            f"{'q' if side == 'k' else 'k'} by R_p -- the sign of sin (or of "
                            f"rotate_half) flipped on one side only", cex)
    q, k = _conventions(Mq, dim), _conventions(Mk, dim)
    words = []
    if q.get("pairing") and k.get("pairing") and q["pairing"] != k["pairing"]:
        words.append(f"q and k use different pairings: q {q['pairing']}, k {k['pairing']}")
    if q.get("base") and k.get("base") and abs(q["base"] / k["base"] - 1) > 1e-4:
        words.append(f"q and k use different bases: q {fmt(q['base'])}, k {fmt(k['base'])}")
    return Property("same rotation for q and k", FAIL,
                    "; ".join(words) if words else "q and k are rotated differently", cex)


def _same_factor(scales: dict) -> Property:
    """q and k scaled by the same constant (an attention factor s multiplies cos and sin of both:
    the logit gets s²); one side scaled, or two different scales, change the logit's scale."""
    s = {side: scale_value(v) for side, v in scales.items()}
    if set(s) == {"q", "k"} and np.abs(scales["q"] - scales["k"]).max() <= TOL * max(1.0, s["q"]):
        return Property("same factor for q and k", PASS, f"both scaled by {fmt(s['q'])}")
    words = (f"only {next(iter(s))} is scaled (by {fmt(next(iter(s.values())))}): the logit "
             f"gets s, not the s² of an attention factor on both") if len(s) == 1 else \
        f"q is scaled by {fmt(s['q'])}, k by {fmt(s['k'])}"
    return Property("same factor for q and k", FAIL, words)


def check_rope_qk(caller: Caller, impl: str, dim: int,
                  expected: Optional[dict] = None) -> ConformanceReport:
    report, probe, positions, Mq, Mk, ok = open_pair_report(caller, impl, dim, "rope-qk")
    if not ok:
        return report
    props, summary = report.properties, report.summary

    Mq_user, scaled = Mq, expected_scaling(expected, summary)
    scales = {}
    for side, M in (("q", Mq), ("k", Mk)):
        p, scale = norm_property(M, positions, summary, scaled)
        if scale is not None:  # s R_p (YaRN's attention factor on cos and sin): the rotation is f / s
            summary[f"attention_factor_{side}"] = scale_value(scale)
            scales[side] = scale
        props.append(Property(f"norm preservation ({side})", p.status, p.detail, p.counterexample))
    if scales:
        props.append(_same_factor(scales))

    def rotation(M: np.ndarray, side: str) -> np.ndarray:
        return M / scales[side][None, :, None] if side in scales else M
    Mq, Mk = rotation(Mq, "q"), rotation(Mk, "k")
    shift = check_shift(Mq, positions, Mk)
    props.append(Property("shift invariance (logit)", shift.status, shift.detail,
                          shift.counterexample))
    props.append(_same_rotation(Mq, Mk, dim, summary))
    if props[-1].status == FAIL or props[2].status == FAIL:
        for name in ("pairing", "frequencies"):
            props.append(Property(name, NA, "q and k differ, or the positions are ignored"))
        return report
    big = 1000
    try:
        Mbig = rotation(probe.matrices(np.array([big]))[0], "q")
    except PosencError:                 # a position table shorter than 1000: read θ up to 23
        Mbig, big = Mq[-1:], GRID - 1
    props.append(check_pairing(Mq, positions, Mbig, summary))
    props.append(check_frequencies(Mq, Mbig, big, dim, summary, expected))
    if expected:
        props.append(check_rope_expectation(Mq_user, positions, expected, dim, summary, TOL))
    return report
