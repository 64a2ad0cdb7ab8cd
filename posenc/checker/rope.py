"""Conformance of a user's rotary function ``f(x, positions) -> x_rotated`` to RoPE (Su et al. 2021).

x has shape (..., seq, dim); positions (seq,) int64.  The checker first reads off the linear map
``M_p = f(·, p)`` for every probe position p by rotating the basis vectors (one batched call),
then checks on those matrices (float64 inputs):

* linear in x: f(x, p) = M_p x for random x;
* norm preservation: M_pᵀ M_p = I;
* shift invariance: ⟨f(q,i), f(k,j)⟩ = ⟨f(q,i+1), f(k,j+1)⟩, i.e. M_iᵀM_j = M_{i+1}ᵀM_{j+1};
* pairing: which dims rotate together -- interleaved (2m, 2m+1) or half (m, m + r/2), the
  catalogue's two conventions (posenc.encodings) -- and each plane block is a rotation
  (a, b) -> (a cos − b sin, a sin + b cos);
* frequencies: θ_m recovered from the plane angles (unwrapped over positions 1, 23, 1000), fitted
  to θ_m = base^(−2m/r); the catalogue RoPE with that pairing and base is then compared with f;
* float32 drift: f at positions 10^3..10^6 on float32 and float64 inputs against an mpmath
  reference rotation; a float32 implementation may be off by the rounding of the angle p·θ in
  float32, and no more.

Each failure names the smallest offending position and basis dims (e_a, e_b).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from ..errors import PosencError
from .loading import Caller
from .report import FAIL, PASS, Property, fmt
from .logit_blocks import Blocks, first_difference, logit_probes

GRID = 24                       # probe positions 0..23
LARGE = (10**3, 10**4, 10**5, 10**6)
EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)
# Tolerance for the exact-arithmetic properties on float64 inputs.  A conforming implementation
# that builds its cos/sin tables in float32 (torch's default) is exact to ~EPS32 (1.2e-7) per
# entry at positions <= 23 (angle error <= 23·θ·EPS32/2 <= 1.4e-6 rad); 1e-5 sits above that and
# far below any real convention error, which changes entries by O(θ) >= 1e-4 at these positions.
TOL = 1e-5


class RopeProbe:
    """Feeds (B, seq, dim) batches to the user's function at whatever rank it accepts."""

    def __init__(self, caller: Caller, dim: int) -> None:
        self.caller, self.dim = caller, dim
        self.rank: Optional[int] = None

    def _call(self, X: np.ndarray, positions: np.ndarray, rank: int) -> np.ndarray:
        B, S, D = X.shape
        if rank == 2:
            outs = [self.caller.call(X[b], positions) for b in range(B)]
            Y = np.stack(outs) if outs else np.empty_like(X)
            got = outs[0].shape if outs else X.shape[1:]
            want = X.shape[1:]
        elif rank == 3:
            Y = self.caller.call(X, positions)
            got, want = Y.shape, X.shape
        else:
            Y = self.caller.call(X[:, None], positions)
            got, want = Y.shape, (B, 1, S, D)
        if tuple(got) != tuple(want):
            raise PosencError(f"{self.caller.impl} returned shape {tuple(got)} for x of shape "
                              f"{tuple(want)}; a rotary function must keep the shape of x")
        return Y.reshape(B, S, D)

    def apply(self, X: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """f applied to X (B, seq, dim) at ``positions`` (seq,) -> (B, seq, dim) float64."""
        positions = np.asarray(positions, dtype=np.int64)
        return self.at_rank(lambda rank: self._call(X, positions, rank), (2, 3, 4))

    def at_rank(self, call: Callable[[int], Any], ranks: tuple[int, ...]) -> Any:
        """``call(rank)`` at the rank found before, else at the first of ``ranks`` that works."""
        if self.rank is not None:
            return call(self.rank)
        first: Optional[PosencError] = None
        for rank in ranks:
            try:
                out = call(rank)
            except PosencError as exc:
                # A wrong output shape at one rank may be the right one at another: a
                # Llama-style function that broadcasts against (b, heads, seq, dim) tables
                # only keeps the shape of a 4-axis x.  Report the first failure if none works.
                first = first or exc
                self.caller.mode = None
                continue
            self.rank = rank
            return out
        assert first is not None
        raise first

    def matrices(self, positions: np.ndarray) -> np.ndarray:
        """M_p for each position: M[s] @ x == f(x, positions[s]); shape (seq, dim, dim)."""
        D, S = self.dim, len(positions)
        basis = np.broadcast_to(np.eye(D)[:, None, :], (D, S, D)).copy()   # (D, S, D): e_b
        Y = self.apply(basis, positions)                                    # (D, S, D)
        return np.transpose(Y, (1, 2, 0))                                   # (S, D, D)


def _first(mask: np.ndarray, order_keys) -> Optional[tuple]:
    """The smallest index of ``mask`` under ``order_keys(idx) -> tuple of key columns``
    (``idx`` is the (k, ndim) array of ``np.argwhere``; the first key is the most significant)."""
    idx = np.argwhere(mask)
    if idx.size == 0:
        return None
    keys = order_keys(idx)
    return tuple(int(v) for v in idx[np.lexsort(tuple(reversed(keys)))[0]])


def check_linear(probe: RopeProbe, M: np.ndarray, positions: np.ndarray) -> Property:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, len(positions), probe.dim))                 # (3, S, D)
    Y = probe.apply(X, positions)
    pred = np.einsum("sdb,nsb->nsd", M, X)
    dev = np.linalg.norm(Y - pred, axis=-1) / np.linalg.norm(X, axis=-1)    # (3, S)
    bad = _first(~(dev <= TOL), lambda ix: (ix[:, 1], ix[:, 0]))   # NaN counts as a failure
    if bad is None:
        return Property("linear in x", PASS, f"max relative deviation {dev.max():.1e}")
    n, s = bad
    return Property("linear in x", FAIL, "f(x, p) is not Σ_a x_a f(e_a, p)",
                    f"position {positions[s]}: random x #{n}: ‖f(x,p) − Σ x_a f(e_a,p)‖/‖x‖ = "
                    f"{fmt(dev[n, s], 3)}")


def check_norm(M: np.ndarray, positions: np.ndarray) -> Property:
    gram = np.einsum("sda,sdb->sab", M, M)                                  # (S, D, D)
    dev = np.abs(gram - np.eye(M.shape[1]))
    bad = _first(np.triu(~(dev <= TOL)), lambda ix: (ix[:, 0], ix[:, 1], ix[:, 2]))
    if bad is None:
        return Property("norm preservation", PASS,
                        f"‖f(x,p)‖ = ‖x‖ at positions 0..{positions[-1]} (max dev {dev.max():.1e})")
    s, a, b = bad
    p = positions[s]
    if a == b:
        cex = f"x = e_{a}, position {p}: ‖f(x,p)‖ = {fmt(math.sqrt(max(gram[s, a, a], 0)))} ≠ 1"
    else:
        sq = gram[s, a, a] + gram[s, b, b] + 2 * gram[s, a, b]
        cex = (f"x = e_{a} + e_{b}, position {p}: ‖f(x,p)‖² = {fmt(sq)} ≠ ‖x‖² = 2 "
               f"(⟨f(e_{a},p), f(e_{b},p)⟩ = {fmt(gram[s, a, b])})")
    return Property("norm preservation", FAIL, "f(·, p) is not orthogonal", cex)


def check_shift(M: np.ndarray, positions: np.ndarray, K: Optional[np.ndarray] = None) -> Property:
    """Q_iᵀK_j = Q_{i+1}ᵀK_{j+1}; the keys' maps ``K`` are the queries' ``M`` unless given (xPos).

    The blocks are compared through random content first, then entry by entry where that does
    not settle it (see :mod:`.logit_blocks`); the counterexample is the first failing entry in
    the order smallest i + j, then i."""
    K = M if K is None else K
    L = logit_probes(M, K)
    diff, worst, exact = first_difference(Blocks(M[:-1], K[:-1]), Blocks(M[1:], K[1:]),
                                          L[:-1, :-1], L[1:, 1:], TOL,
                                          order=lambda i, j: (i + j, i))
    if diff is not None:
        i, j, a, b = diff.i, diff.j, diff.a, diff.b
        cex = (f"q = e_{a}, k = e_{b}: ⟨f(q,{i}), f(k,{j})⟩ = {fmt(diff.got)} but "
               f"⟨f(q,{i + 1}), f(k,{j + 1})⟩ = {fmt(diff.want)}")
        return Property("shift invariance", FAIL, "the logit depends on absolute positions", cex)
    return Property("shift invariance", PASS,
                    f"⟨f(q,i), f(k,j)⟩ depends on i−j only, i,j ≤ {positions[-1]} "
                    f"(max dev {worst:.1e} {'entry by entry' if exact else 'over random content'})")


def find_planes(Ms: np.ndarray) -> tuple[Optional[list[tuple[int, int]]], str]:
    """Pairs of dims that rotate together, from matrices at a few positions (P, D, D)."""
    D = Ms.shape[1]
    off = np.abs(Ms - np.eye(D)).sum(axis=0)
    off = off + off.T
    np.fill_diagonal(off, 0.0)
    planes, seen = [], set()
    for a in range(D):
        partners = np.flatnonzero(off[a] > TOL)
        if len(partners) > 1:
            return None, f"dim {a} is coupled to dims {partners.tolist()[:4]}: not 2-D planes"
        if len(partners) == 1 and a not in seen:
            b = int(partners[0])
            planes.append((a, b))
            seen.update((a, b))
    return planes, ""


def classify_pairing(planes: list[tuple[int, int]]) -> tuple[Optional[str], int]:
    """('interleaved'|'half'|None, rotary dims r) for a list of planes (a < b)."""
    if not planes:
        return None, 0
    if all(a % 2 == 0 and b == a + 1 for a, b in planes):
        return "interleaved", 2 * (max(a for a, _ in planes) // 2 + 1)
    gaps = {b - a for a, b in planes}
    if len(gaps) == 1:
        h = gaps.pop()
        if all(a < h for a, _ in planes):
            return "half", 2 * h
    return None, 0


def plane_angles(M: np.ndarray, plane: tuple[int, int]) -> np.ndarray:
    a, b = plane
    return np.arctan2(M[:, b, a], M[:, a, a])


def check_pairing(M: np.ndarray, positions: np.ndarray, Mbig: np.ndarray, summary: dict) -> Property:
    stack = np.concatenate([M[1:], Mbig])
    planes, why = find_planes(stack)
    if planes is None:
        return Property("pairing", FAIL, "dims do not rotate in pairs", why)
    if not planes:
        return Property("pairing", FAIL, "no dims rotate",
                        f"f(e_a, p) = e_a for every dim a and position p ≤ {positions[-1]}")
    pairing, r = classify_pairing(planes)
    summary.update(planes=planes, pairing=pairing, rotary_dims=r)
    if pairing is None:
        show = ", ".join(f"({a},{b})" for a, b in planes[:4])
        lo, D = min(a for a, _ in planes), M.shape[1]
        shifted, r_ = classify_pairing([(a - lo, b - lo) for a, b in planes])
        if shifted is not None and lo + r_ == D:
            return Property("pairing", FAIL, f"the wrong slice rotates: dims {lo}..{D - 1} (the "
                            f"last {r_}) rotate in {shifted} planes and dims 0..{lo - 1} are left "
                            f"as they are -- partial rotary applies to x[..., :r], not "
                            f"x[..., -r:]", f"planes {show}{', ...' if len(planes) > 4 else ''}")
        return Property("pairing", FAIL, "planes are neither (2m, 2m+1) nor (m, m + r/2)",
                        f"planes {show}{', ...' if len(planes) > 4 else ''}")
    # Each plane block must be [[cos, -sin], [sin, cos]] (the catalogue's sense of rotation up
    # to the sign of theta, which the frequency property reports).
    for s in range(len(positions)):
        for a, b in planes:
            blk = M[s][np.ix_((a, b), (a, b))]
            if not (abs(blk[0, 0] - blk[1, 1]) <= TOL and abs(blk[0, 1] + blk[1, 0]) <= TOL):
                return Property("pairing", FAIL, f"{pairing} planes, but not rotations",
                                f"position {positions[s]}, dims ({a}, {b}): block "
                                f"[[{fmt(blk[0, 0])}, {fmt(blk[0, 1])}], [{fmt(blk[1, 0])}, "
                                f"{fmt(blk[1, 1])}]] is not [[cos, −sin], [sin, cos]]")
    summary["rotations"] = True
    idle = M.shape[1] - 2 * len(planes)
    layout = "(2m, 2m+1)" if pairing == "interleaved" else f"(m, m+{r // 2})"
    return Property("pairing", PASS, f"{pairing}: planes {layout}, r = {r} rotary dims"
                    + (f", {idle} dims not rotated" if idle else ""))


def recover_frequencies(M: np.ndarray, Mbig: np.ndarray, big: int,
                        planes: list[tuple[int, int]]) -> np.ndarray:
    """θ per plane: the angle at p=1, refined by unwrapping at p=23 and p=``big``."""
    out = []
    for plane in planes:
        theta = plane_angles(M[1:2], plane)[0]
        for p, Mp in ((GRID - 1, M[GRID - 1:GRID]), (big, Mbig)):
            phi = plane_angles(Mp, plane)[0]
            theta = (phi + 2 * math.pi * round((p * theta - phi) / (2 * math.pi))) / p
        out.append(theta)
    return np.array(out)
