"""Matrix-free operators for the positional matrices of attention logits.

A PE puts Toeplitz matrices into the logits (Gu et al., arXiv 2505.13027):
additive PEs add a bias ``B`` with ``B_ij = t_{i-j}``; RoPE multiplies the
content Gram element-wise by a Toeplitz kernel ``K``.  These operators let the
spectra of such matrices be computed for n up to 10^5 and beyond without ever
forming an n x n array (past :data:`DENSE_LIMIT`, on explicit request only).

API (every class is a :class:`scipy.sparse.linalg.LinearOperator`, so it can be
handed to ``eigsh``/``svds``/``cg`` directly, and has ``.dense()``):

``ToeplitzOperator(column, row=None, *, backend="embedded")``
    ``T_ij = column[i-j]`` for ``i >= j`` and ``row[j-i]`` for ``j > i``; ``row``
    defaults to ``conj(column)`` (Hermitian when ``column[0]`` is real);
    ``row[0]`` is ignored.  O(n) memory.  Matvec by FFT of a circulant
    embedding of size >= 2n-1 whose FFT is computed once (``backend="embedded"``)
    or by :func:`scipy.linalg.matmul_toeplitz` on 1-D inputs (``"scipy"``; it
    recomputes the embedding's FFT each call and measured 11x-22x slower here).
    ``.symbol(grid)``, ``.gershgorin_radii()`` (O(n) prefix sums),
    ``.frobenius_sq()`` (O(n)), ``.section(m)`` (leading m x m block),
    ``.hermitian``, ``.real``.
``HadamardOperator(X, Y, T)``
    The matrix ``(X @ Y.T) * T`` (element-wise), X, Y of shape (n, R), applied
    as ``sum_k x_k * T(y_k * v)``: R Toeplitz matvecs, O(nR) memory.
``LowRankOperator(X, Y=None)``
    ``X @ Y.T`` (``Y = X`` by default, a PSD Gram), applied as ``X (Y^T v)``.
``DenseOperator(M)`` / ``SumOperator(*ops)``
    An explicit small matrix; a sum of operators (``.dense()`` sums parts).
"""

from __future__ import annotations

import numpy as np
import scipy.fft as sfft
import scipy.linalg as sla
from scipy.sparse.linalg import LinearOperator

from ..errors import PosencError
from ..limits import DENSE_LIMIT  # noqa: F401 (the largest n for which an n x n array is formed)


def check_dense_size(n: int, what: str = "a dense matrix") -> None:
    """Raise a one-line :class:`PosencError` when an n x n array would be too large."""
    if n > DENSE_LIMIT:
        gib = n * n * 8 / 2**30
        raise PosencError(f"n={n} is too large for {what}: an n x n float64 array needs "
                          f"{gib:.0f} GiB (limit n <= {DENSE_LIMIT}); use the matrix-free path")


def _vector(v: np.ndarray, n: int) -> np.ndarray:
    v = np.asarray(v)
    if v.size != n:
        raise ValueError(f"vector of size {v.size} for an operator of size {n}")
    return v.reshape(n)


class ToeplitzOperator(LinearOperator):
    """A Toeplitz matrix held as its first column and first row."""

    def __init__(self, column: np.ndarray, row: np.ndarray | None = None, *,
                 backend: str = "embedded") -> None:
        c = np.array(column, copy=True)
        if c.ndim != 1 or c.size < 1:
            raise PosencError(f"a Toeplitz column must be a non-empty 1-D array; got shape {c.shape}")
        r = np.conj(c) if row is None else np.array(row, copy=True)
        if r.shape != c.shape:
            raise PosencError(f"Toeplitz row and column differ in length: {r.size} vs {c.size}")
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(r))):
            raise PosencError("Toeplitz column/row contains NaN or infinity")
        if backend not in ("embedded", "scipy"):
            raise PosencError(f"backend must be 'embedded' or 'scipy'; got {backend!r}")
        dtype = np.result_type(c.dtype, r.dtype, np.float64)
        self.column = c.astype(dtype)                            # (n,)  t_k, k = i - j >= 0
        self.row = r.astype(dtype)                               # (n,)  t_{-k}
        self.row[0] = self.column[0]
        self.backend = backend
        self._fft: np.ndarray | None = None
        self._size = sfft.next_fast_len(max(2 * c.size - 1, 1), real=not np.iscomplexobj(self.column))
        super().__init__(dtype=dtype, shape=(c.size, c.size))

    # -- structure ---------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def real(self) -> bool:
        return not np.iscomplexobj(self.column)

    @property
    def hermitian(self) -> bool:
        return bool(np.imag(self.column[0]) == 0 and np.array_equal(self.row, np.conj(self.column)))

    def diagonal(self) -> np.ndarray:
        return np.full(self.n, self.column[0])

    def section(self, m: int) -> "ToeplitzOperator":
        """The leading m x m block (itself Toeplitz)."""
        return ToeplitzOperator(self.column[:m], self.row[:m], backend=self.backend)

    def dense(self) -> np.ndarray:
        check_dense_size(self.n)
        return sla.toeplitz(self.column, self.row)               # (n, n)

    def frobenius_sq(self) -> float:
        """||T||_F^2 = n |t_0|^2 + sum_{k>=1} (n-k)(|t_k|^2 + |t_-k|^2), in O(n)."""
        n = self.n
        w = n - np.arange(1, n)
        return float(n * abs(self.column[0]) ** 2
                     + np.sum(w * (np.abs(self.column[1:]) ** 2 + np.abs(self.row[1:]) ** 2)))

    def gershgorin_radii(self) -> np.ndarray:
        """Off-diagonal absolute row sums, R_i = sum_{k=1..i}|t_k| + sum_{k=1..n-1-i}|t_-k|, O(n)."""
        pc = np.concatenate([[0.0], np.cumsum(np.abs(self.column[1:]))])   # pc[m] = sum_{k<=m}
        pr = np.concatenate([[0.0], np.cumsum(np.abs(self.row[1:]))])
        i = np.arange(self.n)
        return pc[i] + pr[self.n - 1 - i]                        # (n,)

    def symbol(self, grid: int | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The n-section symbol f_n(w) = sum_{|k|<n} t_k e^{ikw} on a grid.

        ``grid`` is a number M of uniform points w_j = 2 pi j / M (default: the
        power of two >= 16 n; evaluated by one FFT, folding coefficients when
        M < 2n - 1) or an explicit array of frequencies (direct sum, chunked).
        Returns ``(w, f)``; f is real when the operator is Hermitian.
        """
        n = self.n
        if grid is None:
            grid = 1 << int(np.ceil(np.log2(max(16 * n, 16))))
        if np.ndim(grid) == 0:
            values = self.symbol_values(int(grid))
            omega = 2 * np.pi * np.arange(values.size) / values.size
            return omega, values
        else:
            omega = np.asarray(grid, dtype=float).ravel()
            values = np.empty(omega.size, dtype=complex)
            k = np.arange(1, n)
            for s in range(0, omega.size, 256):
                w = omega[s:s + 256, None]                       # (chunk, 1)
                e = np.exp(1j * w * k)                           # (chunk, n-1)
                values[s:s + 256] = self.column[0] + e @ self.column[1:] + np.conj(e) @ self.row[1:]
        return omega, (values.real if self.hermitian else values)

    def symbol_values(self, m: int) -> np.ndarray:
        """f_n(2 pi j / M), j = 0 .. M-1, by one FFT (no frequency array): real when Hermitian.

        A Hermitian T with M >= 2n - 1 takes one real inverse FFT of the n coefficients
        (memory ~ 16 M bytes), the general case one complex FFT, in place (~ 16 M bytes).
        """
        n = self.n
        if m < 1:
            raise PosencError(f"symbol grid must have at least one point; got {m}")
        if self.hermitian and m >= 2 * n - 1:
            c = np.zeros(m // 2 + 1, dtype=complex)
            c[:n] = self.column                              # t_{-k} = conj(t_k) is implied
            values = sfft.irfft(c, m, overwrite_x=True)
            del c
            values *= m                                      # sum_k t_k e^{+2 pi i j k / M}
            return values
        a = np.zeros(m, dtype=complex)
        if m >= 2 * n - 1:
            a[:n] = self.column
            a[m - n + 1:] += self.row[1:][::-1]
        else:
            np.add.at(a, np.arange(n) % m, self.column)
            np.add.at(a, (-np.arange(1, n)) % m, self.row[1:])
        values = sfft.ifft(a, overwrite_x=True)
        values *= m
        return values.real.copy() if self.hermitian else values

    # -- products ----------------------------------------------------------------------------
    def _embedding_fft(self) -> np.ndarray:
        if self._fft is None:
            n, size = self.n, self._size
            emb = np.zeros(size, dtype=self.dtype)
            emb[:n] = self.column
            if n > 1:
                emb[size - n + 1:] = self.row[1:][::-1]
            self._fft = sfft.rfft(emb) if self.real else sfft.fft(emb)
        return self._fft

    def _apply(self, x: np.ndarray) -> np.ndarray:
        """T @ x for x of shape (n,) or (n, K)."""
        n = self.n
        if self.real and np.iscomplexobj(x):
            return self._apply(x.real) + 1j * self._apply(x.imag)
        if self.backend == "scipy":
            if x.ndim == 1:
                return sla.matmul_toeplitz((self.column, self.row), x, check_finite=False)
            return np.stack([sla.matmul_toeplitz((self.column, self.row), x[:, j], check_finite=False)
                             for j in range(x.shape[1])], axis=1)
        f = self._embedding_fft()
        size = self._size
        if self.real:
            y = sfft.irfft(sfft.rfft(x, size, axis=0) * (f if x.ndim == 1 else f[:, None]), size, axis=0)
        else:
            y = sfft.ifft(sfft.fft(x, size, axis=0) * (f if x.ndim == 1 else f[:, None]), size, axis=0)
        return y[:n]

    def _matvec(self, v: np.ndarray) -> np.ndarray:
        return self._apply(_vector(v, self.n))

    def _matmat(self, x: np.ndarray) -> np.ndarray:
        return self._apply(np.asarray(x))

    def _adjoint(self) -> "ToeplitzOperator":
        return ToeplitzOperator(np.conj(self.row), np.conj(self.column), backend=self.backend)

    def _rmatvec(self, v: np.ndarray) -> np.ndarray:
        return self._adjoint()._matvec(v)


class LowRankOperator(LinearOperator):
    """``X @ Y.T`` for X, Y of shape (n, R); ``Y = X`` gives a PSD Gram."""

    def __init__(self, x: np.ndarray, y: np.ndarray | None = None) -> None:
        self.x = np.asarray(x)                                   # (n, R)
        self.y = self.x if y is None else np.asarray(y)          # (n, R)
        if self.x.ndim != 2 or self.x.shape != self.y.shape:
            raise PosencError(f"low-rank factors must be two (n, R) arrays; got {self.x.shape}, "
                              f"{self.y.shape}")
        n = self.x.shape[0]
        super().__init__(dtype=np.result_type(self.x, self.y, np.float64), shape=(n, n))

    @property
    def rank_bound(self) -> int:
        return self.x.shape[1]

    @property
    def hermitian(self) -> bool:
        return bool(np.array_equal(self.y, np.conj(self.x)))

    def diagonal(self) -> np.ndarray:
        return np.einsum("ir,ir->i", self.x, self.y)

    def norm(self) -> float:
        """||X Y^T||_2 from two thin QRs: O(n R^2)."""
        qx, rx = np.linalg.qr(self.x)
        qy, ry = np.linalg.qr(self.y)
        return float(np.linalg.norm(rx @ ry.T, 2))

    def dense(self) -> np.ndarray:
        check_dense_size(self.shape[0])
        return self.x @ self.y.T

    def _matvec(self, v: np.ndarray) -> np.ndarray:
        return self.x @ (self.y.T @ _vector(v, self.shape[0]))

    def _matmat(self, v: np.ndarray) -> np.ndarray:
        return self.x @ (self.y.T @ v)

    def _rmatvec(self, v: np.ndarray) -> np.ndarray:
        return np.conj(self.y) @ (np.conj(self.x).T @ _vector(v, self.shape[0]))


class HadamardOperator(LinearOperator):
    """``(X @ Y.T) * T`` applied as ``sum_k x_k * T(y_k * v)`` (Schur product with a Toeplitz T)."""

    def __init__(self, x: np.ndarray, y: np.ndarray | None, toeplitz: ToeplitzOperator) -> None:
        self.factors = LowRankOperator(x, y)
        self.toeplitz = toeplitz
        n = toeplitz.n
        if self.factors.shape[0] != n:
            raise PosencError(f"factor rows {self.factors.shape[0]} != Toeplitz size {n}")
        super().__init__(dtype=np.result_type(self.factors.dtype, toeplitz.dtype), shape=(n, n))

    @property
    def hermitian(self) -> bool:
        return self.factors.hermitian and self.toeplitz.hermitian

    def diagonal(self) -> np.ndarray:
        return self.factors.diagonal() * self.toeplitz.column[0]

    def dense(self) -> np.ndarray:
        check_dense_size(self.shape[0])
        return self.factors.dense() * self.toeplitz.dense()

    def _matvec(self, v: np.ndarray) -> np.ndarray:
        v = _vector(v, self.shape[0])
        x, y = self.factors.x, self.factors.y
        return np.einsum("ir,ir->i", x, self.toeplitz.matmat(y * v[:, None]))   # (n,)

    def _rmatvec(self, v: np.ndarray) -> np.ndarray:
        v = _vector(v, self.shape[0])
        x, y = self.factors.x, self.factors.y
        th = self.toeplitz.H
        return np.einsum("ir,ir->i", np.conj(y), th.matmat(np.conj(x) * v[:, None]))


class DenseOperator(LinearOperator):
    """An explicit (n, n) matrix (small n), with the same interface as the others."""

    def __init__(self, matrix: np.ndarray) -> None:
        m = np.asarray(matrix)
        if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 1:
            raise PosencError(f"expected a square matrix; got shape {m.shape}")
        check_dense_size(m.shape[0])
        if not np.all(np.isfinite(m)):
            raise PosencError("matrix contains NaN or infinity")
        self.matrix = m if np.iscomplexobj(m) else m.astype(np.float64)
        super().__init__(dtype=self.matrix.dtype, shape=m.shape)

    @property
    def hermitian(self) -> bool:
        return bool(np.array_equal(self.matrix, np.conj(self.matrix).T))

    def diagonal(self) -> np.ndarray:
        return np.diag(self.matrix).copy()

    def dense(self) -> np.ndarray:
        return self.matrix

    def _matvec(self, v: np.ndarray) -> np.ndarray:
        return self.matrix @ _vector(v, self.shape[0])

    def _matmat(self, v: np.ndarray) -> np.ndarray:
        return self.matrix @ v

    def _rmatvec(self, v: np.ndarray) -> np.ndarray:
        return np.conj(self.matrix).T @ _vector(v, self.shape[0])


class SumOperator(LinearOperator):
    """A sum of operators of one size (e.g. content A plus additive bias B)."""

    def __init__(self, *ops: LinearOperator) -> None:
        if not ops or len({op.shape for op in ops}) != 1:
            raise PosencError("SumOperator needs one or more operators of one shape")
        self.ops = ops
        super().__init__(dtype=np.result_type(*[op.dtype for op in ops]), shape=ops[0].shape)

    @property
    def hermitian(self) -> bool:
        return all(getattr(op, "hermitian", False) for op in self.ops)

    def diagonal(self) -> np.ndarray:
        return sum(op.diagonal() for op in self.ops)

    def dense(self) -> np.ndarray:
        check_dense_size(self.shape[0])
        return sum(op.dense() for op in self.ops)

    def _matvec(self, v: np.ndarray) -> np.ndarray:
        return sum(op.matvec(v).reshape(-1) for op in self.ops)

    def _matmat(self, v: np.ndarray) -> np.ndarray:
        return sum(op.matmat(v) for op in self.ops)

    def _rmatvec(self, v: np.ndarray) -> np.ndarray:
        return sum(op.rmatvec(v).reshape(-1) for op in self.ops)
