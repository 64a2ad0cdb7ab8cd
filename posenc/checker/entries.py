"""Reading the entries of a user's bias ``(heads, n, n)``: equality up to float32 rounding with
masks (:func:`same`), and what an upper triangle does wrong (:func:`one_sided`).

Shared by the ALiBi checks (:mod:`.bias`) and the KERPLE-log ones (:mod:`.kerple`), which read a
bias the same way.
"""

from __future__ import annotations

import numpy as np

from .report import fmt

# Bias entries are O(slope · n) ≤ 16; float32 storage rounds them to ~1e-6 absolute; a wrong
# slope or offset changes them by ≥ 1e-3.
ATOL, RTOL = 1e-5, 1e-5


def same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise equality allowing ±inf (masks) and float32 rounding."""
    both_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    with np.errstate(invalid="ignore"):
        close = np.abs(a - b) <= ATOL + RTOL * np.abs(b)
    return both_inf | (np.isfinite(a) & np.isfinite(b) & close)


def one_sided(B: np.ndarray) -> str:
    """What the upper triangle of a bias that is right below the diagonal (ALiBi, KERPLE-log)
    does wrong, in words ("" when nothing grows with distance above it)."""
    iu = np.triu_indices(B.shape[1], 1)
    diag = np.diagonal(B, axis1=1, axis2=2)[:, iu[0]]
    grows = np.argwhere(B[:, iu[0], iu[1]] > diag + ATOL)
    if grows.size:
        h, t = (int(v) for v in grows[0])
        i, j = int(iu[0][t]), int(iu[1][t])
        anti = np.all(same(B, -np.swapaxes(B, 1, 2)))
        return (f"above the diagonal the bias grows with distance (head {h}: B[{i},{j}] = "
                f"{fmt(B[h, i, j])} > B[{i},{i}] = {fmt(B[h, i, i])})"
                + (": B = −s·(i−j) on both sides -- |i−j| (abs) forgotten, or the causal mask"
                   if anti else ""))
    return ""
