"""Conformance of a user's xPos function ``f(q, k, positions) -> (q_rotated, k_rotated)`` (Sun et
al. 2022; the catalogue's ``xpos``).

q and k have shape (..., seq, dim); positions (seq,) int64; the result is the pair (a tuple, or
an array of shape (2, ..., seq, dim)).  xPos is RoPE with a per-plane decay: plane m of the query
at position i is rotated by i·θ_m and scaled by λ_m^i, the key at j rotated by j·θ_m and scaled
by λ_m^(−j), λ_m = ζ_m^(1/scale_base), ζ_m = (2m/d + γ)/(1 + γ), θ_m = base^(−2m/d), so that the
logit's plane m carries λ_m^(i−j)·e^{iθ_m(i−j)}.  The checker reads the linear maps
Q_p = f_q(·, p) and K_p = f_k(·, p) from the basis vectors (one batched call) and checks:

* linear in q and k;
* planes: dims move in 2-D planes, the same for q and k -- interleaved (2m, 2m+1) or half
  (m, m + r/2) -- and each plane block of Q_p and of K_p is a scaled rotation by the same angle;
* shift invariance of the logit: ⟨f_q(q,i), f_k(k,j)⟩ depends on i − j only (Q_iᵀK_j =
  Q_{i+1}ᵀK_{j+1});
* decay: q and k are *not* norm-preserving, but only by the decay's definition: in each plane
  the query's scale is geometric in the position, λ_m^p, and the key's is its inverse,
  λ_m^(−p) (so the scales cancel at i = j).  A key scaled like the query (λ^(+j)) or a decay
  that is not geometric breaks this and the logit's shift invariance; q and k scaled by
  constants that do not cancel break it alone;
* xPos reference: the logits ⟨f_q(x_i, i), f_k(y_j, j)⟩ of random content equal those of the
  numeric layer (:func:`posenc.numerics.logits.logits` of ``xpos:base=..,gamma=..,
  scale_base=..``; the catalogue's defaults unless ``--expect`` says otherwise), with the
  recovered θ_m and λ_m named when they differ.

Each failure names the smallest offending position, plane and dims.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import PosencError
from .loading import Caller
from .report import FAIL, PASS, ConformanceReport, Property, fmt
from .rope import GRID, TOL, RopeProbe, check_shift, classify_pairing, find_planes
from ..encodings import XPos


class XposProbe(RopeProbe):
    """Feeds (B, seq, dim) batches of q and k to the user's function at the rank it accepts."""

    def _call_qk(self, Q: np.ndarray, K: np.ndarray, positions: np.ndarray,
                 rank: int) -> tuple[np.ndarray, np.ndarray]:
        B, S, D = Q.shape
        shape = {2: (S, D), 3: (B, S, D), 4: (B, 1, S, D)}[rank]
        if rank == 2:
            outs = [self.caller.call(Q[b], K[b], positions) for b in range(B)]
            Y = np.stack(outs, axis=1) if outs else np.empty((2, B, S, D))
            got = (outs[0].shape[0], *outs[0].shape[1:]) if outs else (2, *shape)
        else:
            Y = self.caller.call(Q.reshape((B,) + shape[1:]), K.reshape((B,) + shape[1:]),
                                 positions)
            got = Y.shape
        if tuple(got) != (2, *shape):
            raise PosencError(f"{self.caller.impl} returned shape {tuple(got)} for q and k of "
                              f"shape {shape}; an xpos function returns the pair (q, k), each "
                              f"of the shape it was given")
        return Y[0].reshape(B, S, D), Y[1].reshape(B, S, D)

    def apply(self, Q: np.ndarray, K: np.ndarray,  # type: ignore[override]
              positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        positions = np.asarray(positions, dtype=np.int64)
        return self.at_rank(lambda rank: self._call_qk(Q, K, positions, rank), (3, 4, 2))

    def matrices(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Q_p, K_p) for each position, each (seq, dim, dim): Q[s] @ x == f_q(x, positions[s])."""
        D, S = self.dim, len(positions)
        basis = np.broadcast_to(np.eye(D)[:, None, :], (D, S, D)).copy()
        Yq, Yk = self.apply(basis, basis, positions)
        return np.transpose(Yq, (1, 2, 0)), np.transpose(Yk, (1, 2, 0))


def check_linear(probe: XposProbe, Mq: np.ndarray, Mk: np.ndarray,
                 positions: np.ndarray) -> Property:
    rng = np.random.default_rng(0)
    Q, K = rng.standard_normal((2, 3, len(positions), probe.dim))
    Yq, Yk = probe.apply(Q, K, positions)
    for name, Y, M, X in (("q", Yq, Mq, Q), ("k", Yk, Mk, K)):
        dev = np.linalg.norm(Y - np.einsum("sdb,nsb->nsd", M, X), axis=-1) / \
            np.linalg.norm(X, axis=-1)
        bad = np.argwhere(~(dev <= TOL))
        if bad.size:
            n, s = (int(v) for v in min(map(tuple, bad), key=lambda t: (t[1], t[0])))
            return Property("linear in q and k", FAIL, f"f's {name} is not Σ_a {name}_a f(e_a, p)",
                            f"position {positions[s]}: random {name} #{n}: relative deviation "
                            f"{fmt(dev[n, s], 3)}")
    return Property("linear in q and k", PASS, "f(q, k, p) = (Q_p q, K_p k)")


def check_uses_positions(probe: XposProbe, Mq: np.ndarray, Mk: np.ndarray,
                         positions: np.ndarray) -> Property:
    """f(·, p) must follow p: not the same map at every p, and not 0..seq−1 whatever the
    positions given (read by calling f with the positions reversed)."""
    last = positions[-1]
    if not max(np.abs(Mq - Mq[0]).max(), np.abs(Mk - Mk[0]).max()) > TOL:
        return Property("uses positions", FAIL, f"the positions are ignored: f(q, k, p) is the "
                        f"same for every p in 0..{last}",
                        f"q = k = e_0: f at positions 0 and {last} are equal")
    Rq, Rk = probe.matrices(positions[::-1].copy())
    if not max(np.abs(Rq - Mq).max(), np.abs(Rk - Mk).max()) > TOL:
        return Property("uses positions", FAIL, f"the positions are ignored: f gives the same "
                        f"result for positions 0..{last} and {last}..0 -- it seems to rotate "
                        f"by 0..seq−1 (an arange) instead of the positions it is given",
                        f"q = e_0, positions reversed: f_q(q, {last}) at index 0 equals "
                        f"f_q(q, 0)")
    moved = np.maximum(np.abs(Rq[::-1] - Mq).max(axis=(1, 2)), np.abs(Rk[::-1] - Mk).max(axis=(1, 2)))
    if np.any(moved > TOL):
        s = int(np.argmax(moved > TOL))
        return Property("uses positions", FAIL, "f(q, k, p) depends on where p sits in the "
                        "positions array, not on p alone",
                        f"position {positions[s]}: f differs by {fmt(moved[s], 3)} when the "
                        f"positions are given reversed")
    return Property("uses positions", PASS, f"f follows p (positions 0..{last} given forward "
                    f"and reversed agree)")


def _blocks(M: np.ndarray, planes: list[tuple[int, int]]) -> np.ndarray:
    """(S, planes, 2, 2) plane blocks of M (S, D, D)."""
    a = np.array([p[0] for p in planes])
    b = np.array([p[1] for p in planes])
    return np.stack([np.stack([M[:, a, a], M[:, a, b]], -1), np.stack([M[:, b, a], M[:, b, b]], -1)],
                    -2)


def check_planes(Mq: np.ndarray, Mk: np.ndarray, positions: np.ndarray,
                 summary: dict) -> Property:
    planes, why = find_planes(np.concatenate([Mq[1:], Mk[1:]]))
    if planes is None:
        return Property("planes", FAIL, "dims do not move in pairs", why)
    if not planes:
        return Property("planes", FAIL, "no dims rotate", f"positions ≤ {positions[-1]}")
    pairing, r = classify_pairing(planes)
    if pairing is None:
        return Property("planes", FAIL, "planes are neither (2m, 2m+1) nor (m, m + r/2)",
                        ", ".join(f"({a},{b})" for a, b in planes[:4]))
    summary.update(planes=planes, pairing=pairing, rotary_dims=r)
    for name, M in (("query", Mq), ("key", Mk)):
        blk = _blocks(M, planes)
        bad = np.argwhere(~((np.abs(blk[..., 0, 0] - blk[..., 1, 1]) <= TOL)
                            & (np.abs(blk[..., 0, 1] + blk[..., 1, 0]) <= TOL)))
        if bad.size:
            s, m = (int(v) for v in bad[0])
            a, b = planes[m]
            return Property("planes", FAIL, f"{pairing} planes, but the {name}'s block is not a "
                            f"scaled rotation", f"position {positions[s]}, dims ({a}, {b}): "
                            f"block {np.round(blk[s, m], 6).tolist()}")
    ang = [np.arctan2(_blocks(M, planes)[..., 1, 0], _blocks(M, planes)[..., 0, 0]) for M in (Mq, Mk)]
    diff = np.abs(np.angle(np.exp(1j * (ang[0] - ang[1]))))
    bad = np.argwhere(diff > TOL)
    if bad.size:
        s, m = (int(v) for v in bad[0])
        return Property("planes", FAIL, "the query and the key are rotated by different angles",
                        f"position {positions[s]}, plane {m} {planes[m]}: query angle "
                        f"{fmt(ang[0][s, m])}, key angle {fmt(ang[1][s, m])}")
    return Property("planes", PASS, f"{pairing}: q and k rotate the same {len(planes)} planes "
                    f"by the same angle, r = {r} dims")


def scales(M: np.ndarray, planes: list[tuple[int, int]]) -> np.ndarray:
    """(S, planes) scale of each plane block (the length of its first column)."""
    blk = _blocks(M, planes)
    return np.hypot(blk[..., 0, 0], blk[..., 1, 0])


def check_decay(Mq: np.ndarray, Mk: np.ndarray, positions: np.ndarray, summary: dict) -> Property:
    planes = summary["planes"]
    sq, sk = scales(Mq, planes), scales(Mk, planes)                 # (S, P)
    lam = sq[1] / sq[0]
    summary["decay"] = [float(v) for v in lam]
    p = positions[:, None] - positions[0]
    for name, got, want in (("query", sq, sq[0] * lam ** p), ("key", sk, sk[0] * lam ** -p),
                            ("query·key", sq * sk, np.ones_like(sq))):
        bad = np.argwhere(~(np.abs(got - want) <= TOL * np.maximum(1.0, np.abs(want))))
        if bad.size:
            s, m = (int(v) for v in min(map(tuple, bad), key=lambda t: (t[0], t[1])))
            hint = ""
            if name != "query" and np.allclose(sk, sk[0] * lam ** p, rtol=TOL, atol=TOL):
                hint = (": the key is scaled by λ^(+j) like the query, so the logit carries "
                        "λ^(i+j), not λ^(i−j)")
            what = {"query": f"λ_m^p (λ_m = {fmt(lam[m])} read at p = 1)",
                    "key": f"the inverse of the query's, λ_m^(−p) (λ_m = {fmt(lam[m])})",
                    "query·key": "1 (the query's and the key's scales cancel at i = j)"}[name]
            return Property("decay", FAIL, f"the {name} scale in each plane is not {what}{hint}",
                            f"position {positions[s]}, plane {m} {tuple(planes[m])}: "
                            f"{fmt(got[s, m])}, expected {fmt(want[s, m])}")
    return Property("decay", PASS, f"q scaled by λ_m^p, k by λ_m^(−p) in each plane (λ_m from "
                    f"{fmt(lam.min())} to {fmt(lam.max())}); nothing else depends on the position")


def check_reference(probe: XposProbe, Mq: np.ndarray, Mk: np.ndarray, positions: np.ndarray,
                    expected: Optional[dict], summary: dict) -> Property:
    from ..numerics.kernels import xpos_decays
    from ..numerics.logits import logits

    conv = {k: v for k, v in (expected or {}).items() if k in ("base", "gamma", "scale_base")}
    spec = XPos(**conv)
    summary["expected_spec"] = spec.to_string()
    D, S = probe.dim, len(positions)
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((2, S, D))
    user = np.einsum("iab,ib,jac,jc->ij", Mq, X, Mk, Y)
    eye, zero = np.eye(D), np.zeros((D, D))
    ref = logits(spec, np.hstack([X, Y]), np.vstack([eye, zero]), np.vstack([zero, eye]))
    dev = np.abs(user - ref) / np.maximum(1.0, np.abs(ref))
    if not (dev.max() > TOL):
        return Property("xPos reference", PASS, f"the logits equal those of {spec.to_string()} "
                        f"at positions 0..{positions[-1]} (max deviation {dev.max():.1e})")
    i, j = (int(v) for v in min(map(tuple, np.argwhere(dev > TOL)), key=lambda t: (sum(t), t)))
    words = []
    planes = summary.get("planes")
    if planes and summary.get("pairing") != "interleaved":
        words.append(f"pairing is {summary.get('pairing')}, xpos rotates (2m, 2m+1)")
    lam, want = summary.get("decay"), xpos_decays(spec, D)
    if lam is not None and len(lam) == len(want) and not np.allclose(lam, want, rtol=TOL):
        m = int(np.argmax(np.abs(np.array(lam) - want)))
        words.append(f"plane {m} decays by {fmt(lam[m])} per position, the reference by "
                     f"{fmt(want[m])}")
    if planes:
        ang = np.arctan2(_blocks(Mq, planes)[1, :, 1, 0], _blocks(Mq, planes)[1, :, 0, 0])
        theta = spec.base ** (-2.0 * np.arange(len(planes)) / D)
        if len(planes) == D // 2 and not np.allclose(ang, theta, atol=TOL):
            m = int(np.argmax(np.abs(ang - theta)))
            words.append(f"plane {m} rotates by {fmt(ang[m])} per position, the reference by "
                         f"{fmt(theta[m])}")
    return Property("xPos reference", FAIL, f"not {spec.to_string()}: "
                    + ("; ".join(words) if words else "the logits differ"),
                    f"random content: logit[{i},{j}] = {fmt(user[i, j])}, the reference gives "
                    f"{fmt(ref[i, j])}")


def open_pair_report(caller: Caller, impl: str, dim: int, kind: str) -> tuple:
    """The checks every ``f(q, k, positions) -> (q, k)`` kind (xpos, rope-qk) starts with:
    ``(report, probe, positions, Mq, Mk, ok)`` -- shape, finiteness, linearity and use of the
    positions in ``report``; ``ok`` False when the output is not finite (nothing else to check)."""
    probe = XposProbe(caller, dim)
    positions = np.arange(GRID)
    Mq, Mk = probe.matrices(positions)
    report = ConformanceReport(impl, kind, caller.mode or "numpy")
    props = report.properties
    props.append(Property("shape", PASS, f"(q, k) of (..., seq, {dim}) -> the pair, same shapes "
                          f"(given with {probe.rank} axes)"))
    if not (np.all(np.isfinite(Mq)) and np.all(np.isfinite(Mk))):
        props.append(Property("finite", FAIL, "returned NaN or infinity"))
        return report, probe, positions, Mq, Mk, False
    props.append(check_linear(probe, Mq, Mk, positions))
    props.append(check_uses_positions(probe, Mq, Mk, positions))
    return report, probe, positions, Mq, Mk, True


def check_xpos(caller: Caller, impl: str, dim: int,
               expected: Optional[dict] = None) -> ConformanceReport:
    report, probe, positions, Mq, Mk, ok = open_pair_report(caller, impl, dim, "xpos")
    if not ok:
        return report
    props, summary = report.properties, report.summary
    props.append(check_planes(Mq, Mk, positions, summary))
    shift = check_shift(Mq, positions, Mk)
    props.append(Property("shift invariance (logit)", shift.status, shift.detail,
                          shift.counterexample))
    if props[-2].status == PASS:
        props.append(check_decay(Mq, Mk, positions, summary))
    props.append(check_reference(probe, Mq, Mk, positions, expected, summary))
    return report
