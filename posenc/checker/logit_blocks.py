"""Comparing the logit blocks G_ij = M_iᵀK_j of two families of maps, entry by entry, without
forming every block: shift invariance (G_ij against G_{i+1,j+1}, :func:`.rope.check_shift`) and
the logits of an expected RoPE (the user's against the reference's, :mod:`.expect`).

All S² blocks of D×D maps are S²·D³ flops (10 GFLOP at D = 256, S = 24).  The difference
Δ_ij = G_ij − G'_ij is first read through random content: qᵀΔk for PROBES² pairs of fixed-seed
Gaussian q, k, whose mean square is ‖Δ‖_F² ≥ max_ab Δ_ab²; all PROBES² of them stay below a
quarter of ``tol`` only if Δ is nearly orthogonal to every probe pair, an event of negligible
probability for Gaussian probes.  The pairs (i, j) whose probes do not all stay below tol/4 are
then compared entry by entry, and the first entry off by more than ``tol``, in the order the
counterexample is reported, is the counterexample.  A float32 implementation gets every pair
compared entry by entry (its Δ is ~D·1e-7 in Frobenius norm): those blocks are formed from
sparse maps when the maps are sparse (a rotary map has two nonzero entries per column: a block
costs O(D) instead of D³, and a row of blocks is one product), so the exact comparison stays
cheap at large D.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np

#: query and key directions of the random content: PROBES² logits per (i, j) instead of D²
PROBES = 16
#: maps with at most this fraction of nonzero entries form their blocks as sparse products
SPARSE_DENSITY = 0.1


def logit_probes(M: np.ndarray, K: np.ndarray) -> np.ndarray:
    """(S, S, R, R) logits q_rᵀ M_iᵀ K_j k_s for fixed random unit-variance q_r, k_s."""
    rng = np.random.default_rng(7)
    D = M.shape[1]
    Q, Kv = rng.standard_normal((2, D, PROBES))
    MQ, KK = M @ Q, K @ Kv                                                  # (S, D, R)
    return np.einsum("idr,jds->ijrs", MQ, KK, optimize=True)


class Blocks:
    """G_ij = M_iᵀ K_j on demand, a row of them (one i, several j) at a time: from sparse
    products when M and K are finite and sparse (one product per row), else dense ones (one
    per block asked for)."""

    def __init__(self, M: np.ndarray, K: np.ndarray) -> None:
        self.M, self.K = M, K
        self.sparse = None
        if np.isfinite(M).all() and np.isfinite(K).all() and \
                np.count_nonzero(M) + np.count_nonzero(K) <= SPARSE_DENSITY * (M.size + K.size):
            from scipy import sparse
            self.sparse = ([sparse.csr_matrix(m.T) for m in M],
                           sparse.hstack([sparse.csc_matrix(k) for k in K], format="csc"))

    def __call__(self, i: int, j: int) -> np.ndarray:
        return self.row(i, [j])[0]

    def row(self, i: int, js: list[int]) -> list[np.ndarray]:
        """[G_ij for j in js]."""
        if self.sparse is None:
            return [self.M[i].T @ self.K[j] for j in js]
        Ms, K_all = self.sparse
        D = self.K.shape[2]
        G = (Ms[i] @ K_all).toarray().reshape(Ms[i].shape[0], len(self.K), D)   # (D, S, D)
        return [G[:, j, :] for j in js]


class Difference(NamedTuple):
    """The first entry off by more than tol: block (i, j), entry (a, b), and the two values."""
    i: int
    j: int
    a: int
    b: int
    got: float
    want: float


def first_difference(G: Blocks, G2: Blocks, L: np.ndarray, L2: np.ndarray, tol: float,
                     order: Callable[[int, int], tuple]) -> tuple[Optional[Difference], float, bool]:
    """The first entry where the blocks G(i, j) and G2(i, j) differ by more than ``tol`` (pairs
    in ``order``, entries row-major), given their probe logits L, L2 (S, S, R, R) made with the
    same probes; with the largest deviation seen and whether it was read entry by entry (else
    over the random content).  Every flagged pair is compared (a row of blocks is one sparse
    product), and the first failing one in ``order`` is reported."""
    pdev = np.abs(L - L2).max(axis=(2, 3))
    flagged = np.argwhere(~(pdev <= tol / 4))
    worst, found = 0.0, []
    for i in sorted({int(i) for i in flagged[:, 0]}):          # a row of blocks at a time
        js = sorted(int(j) for j in flagged[flagged[:, 0] == i, 1])
        for j, Gij, G2ij in zip(js, G.row(i, js), G2.row(i, js)):
            dev = np.abs(Gij - G2ij)
            worst = max(worst, float(np.nanmax(dev)) if np.isfinite(dev).any() else 0.0)
            bad = np.argwhere(~(dev <= tol))
            if bad.size:
                a, b = (int(v) for v in bad[0])
                found.append(Difference(i, j, a, b, float(Gij[a, b]), float(G2ij[a, b])))
    if found:
        return min(found, key=lambda d: order(d.i, d.j)), worst, True
    if flagged.size:
        return None, worst, True
    return None, float(pdev.max()) if pdev.size else 0.0, False
