"""How far a square matrix is from Toeplitz, and the position Gram of a learned table.

The Toeplitz projection T(G) of an n x n matrix G replaces each diagonal by its mean:
T(G)_ij = (1 / (n - |k|)) sum_{j' - i' = k} G_i'j' with k = j - i.  The Toeplitz matrices
form a linear subspace, and the matrices E_k (ones on diagonal k, zero elsewhere) an orthogonal
basis of it in the Frobenius inner product, so T(G) = sum_k <G, E_k> / <E_k, E_k> E_k is the
orthogonal projection: the Frobenius-nearest Toeplitz matrix to G.  The distance from Toeplitz
is the relative Frobenius distance

    d(G) = ||G - T(G)||_F / ||G||_F   (0 for the zero matrix, which is Toeplitz),

0 exactly when G is Toeplitz, at most 1 (G - T(G) is orthogonal to T(G)).

:func:`position_gram` is the learned absolute PE's position-position term: G = P P^T of the
first n rows of a table P (n positions x width), its eigenvalues by dense LAPACK
(:func:`~.spectra.spectrum` of the :class:`~.operators.LowRankOperator`) and d(G).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PosencError
from .operators import LowRankOperator, check_dense_size
from .spectra import spectrum


def _square(matrix: Any) -> np.ndarray:
    g = np.asarray(matrix)
    if g.ndim != 2 or g.shape[0] != g.shape[1] or g.shape[0] < 1:
        raise PosencError(f"expected a square matrix; got shape {g.shape}")
    if not np.all(np.isfinite(g)):
        raise PosencError("matrix contains NaN or infinity")
    return g


def diagonal_means(matrix: Any) -> np.ndarray:
    """The mean of each diagonal of an n x n matrix, indexed k + n - 1 for k = j - i in
    -(n-1) .. n-1 (length 2n - 1)."""
    g = _square(matrix)
    n = g.shape[0]
    i, j = np.indices((n, n))
    index = (j - i + n - 1).ravel()
    counts = n - np.abs(np.arange(2 * n - 1) - (n - 1))
    if np.iscomplexobj(g):
        sums = (np.bincount(index, g.real.ravel(), 2 * n - 1)
                + 1j * np.bincount(index, g.imag.ravel(), 2 * n - 1))
    else:
        sums = np.bincount(index, g.ravel().astype(np.float64), 2 * n - 1)
    return sums / counts


def toeplitz_projection(matrix: Any) -> np.ndarray:
    """T(G): each diagonal of G replaced by its mean (the Frobenius-nearest Toeplitz matrix)."""
    g = _square(matrix)
    n = g.shape[0]
    i, j = np.indices((n, n))
    return diagonal_means(g)[j - i + n - 1]


def toeplitz_distance(matrix: Any) -> float:
    """d(G) = ||G - T(G)||_F / ||G||_F (0 for the zero matrix)."""
    g = _square(matrix)
    norm = float(np.linalg.norm(g))
    if norm == 0.0:
        return 0.0
    return float(np.linalg.norm(g - toeplitz_projection(g)) / norm)


def position_gram(table: Any, n: int) -> dict:
    """The Gram G = P P^T of the first ``n`` rows of ``table`` (positions x width): its
    eigenvalues (ascending, dense LAPACK), lambda_max, lambda_min, its numerical rank (eigenvalues
    above n eps lambda_max), ||G||_F and the distance from Toeplitz d(G)."""
    p = np.asarray(table, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] < 1 or p.shape[1] < 1:
        raise PosencError(f"a position table is (positions, width); got shape {p.shape}")
    if not 1 <= n <= p.shape[0]:
        raise PosencError(f"the table has {p.shape[0]} positions; n={n}")
    check_dense_size(n, "the position Gram")
    p = p[:n]
    op = LowRankOperator(p)
    s = spectrum(op, method="dense", full=True)
    ev = np.asarray(s.eigenvalues, dtype=np.float64)
    g = op.dense()
    top = float(ev[-1])
    return {"n": n, "width": int(p.shape[1]), "eigenvalues": ev, "lambda_max": top,
            "lambda_min": float(ev[0]),
            "rank": int(np.count_nonzero(ev > n * np.finfo(float).eps * max(top, 0.0))),
            "frobenius": float(np.linalg.norm(g)), "toeplitz_distance": toeplitz_distance(g),
            "method": s.method, "seconds": s.seconds}
