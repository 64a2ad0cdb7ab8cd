"""Reading the entries of a user's bias ``(heads, n, n)``: equality up to float32 rounding with
masks (:func:`same`), and what an upper triangle does wrong (:func:`one_sided`).

Shared by the ALiBi checks (:mod:`.bias`) and the KERPLE-log ones (:mod:`.kerple`), which read a
bias the same way.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Optional

import numpy as np

from .report import fmt

# Bias entries are O(slope · n) ≤ 16; float32 storage rounds them to ~1e-6 absolute; a wrong
# slope or offset changes them by ≥ 1e-3.
ATOL, RTOL = 1e-5, 1e-5
#: unit roundoff of the storage dtypes ``--expect dtype=`` names (float32: the default tolerance)
UNIT_ROUNDOFF = {"float32": None, "bfloat16": 2.0 ** -8, "float16": 2.0 ** -11}
# The unit roundoff u of a reduced-precision bias (None: float32 or better), for this check.
_ROUNDOFF: ContextVar[Optional[float]] = ContextVar("bias_roundoff", default=None)


@contextmanager
def stored_as(dtype: Optional[str]) -> Iterator[None]:
    """Read biases as stored in ``dtype`` (``--expect dtype=bfloat16``: Falcon computes its ALiBi
    as bfloat16(slope)·j in bfloat16) for the checks run inside the block."""
    token = _ROUNDOFF.set(UNIT_ROUNDOFF.get(dtype or "float32"))
    try:
        yield
    finally:
        _ROUNDOFF.reset(token)


def roundoff() -> Optional[float]:
    return _ROUNDOFF.get()


def slope_rtol() -> float:
    """Relative tolerance of a slope read off the bias: RTOL, or 8u for a reduced-precision one
    (the slope itself rounded, u, and read by least squares from entries off by ≤ 4u·max)."""
    u = roundoff()
    return RTOL if u is None else 8 * u


def same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise equality allowing ±inf (masks) and float32 rounding.

    Under :func:`stored_as` a reduced-precision dtype with unit roundoff u: each entry of a
    bias such as bf16(bf16(s)·j) is off by ≤ 2u·|s·j|, and a row normalised by its diagonal
    entry (see bias.py) by ≤ u·(|B_ij| + |B_ii|) more, so entries of head h agree when they
    differ by ≤ 4u·max_h (max_h: the largest finite |entry| of that head in a or b), plus
    4u relative."""
    both_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    u = roundoff()
    with np.errstate(invalid="ignore"):
        if u is None:
            close = np.abs(a - b) <= ATOL + RTOL * np.abs(b)
        else:
            fin = lambda v: np.where(np.isfinite(v), np.abs(v), 0.0)  # noqa: E731
            axes = tuple(range(1, max(np.ndim(a), np.ndim(b))))
            scale = np.maximum(fin(np.broadcast_to(a, np.broadcast_shapes(np.shape(a), np.shape(b)))),
                               fin(np.broadcast_to(b, np.broadcast_shapes(np.shape(a), np.shape(b)))))
            head = scale.max(axis=axes, keepdims=True) if axes else scale
            close = np.abs(a - b) <= ATOL + 4 * u * head + 4 * u * np.abs(b)
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
