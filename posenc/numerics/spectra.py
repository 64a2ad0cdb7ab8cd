"""Extreme eigenvalues and singular values of positional operators, dense or by Lanczos.

``spectrum(op, *, method="auto", full=False, psd=None, rank_bound=None, seed=0) -> Spectrum``

``op`` is any operator from :mod:`posenc.numerics.operators` (or an ndarray).
``method="auto"`` uses dense LAPACK (``numpy.linalg.eigvalsh`` for Hermitian,
``svd`` otherwise) for n <= :data:`AUTO_DENSE` and Lanczos above it
(``scipy.sparse.linalg.eigsh`` on the matvec for Hermitian operators, ``svds``
otherwise), so a Toeplitz operator costs O(n log n) per step and no n x n
array is formed; ``"dense"`` / ``"lanczos"`` force one.  The method used and
the wall time are part of the result.

Hints: ``psd=True`` with ``rank_bound < n`` makes lambda_min = 0 structural
(reported as such, not computed -- Lanczos on a huge null space converges
slowly to a meaningless ~1e-13).  For an indefinite Hermitian operator at large
n the smallest singular value is an interior eigenvalue; it is not computed by
Lanczos (``sigma_min = None``) and the condition number is then ``None``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh, lobpcg, svds

from ..errors import PosencError
from .operators import DenseOperator, ToeplitzOperator, check_dense_size

#: n at or below which ``method="auto"`` uses dense LAPACK.
AUTO_DENSE = 512

DENSE_EIG = "dense LAPACK eigvalsh"
DENSE_SVD = "dense LAPACK svd"
LANCZOS_EIG = "Lanczos eigsh (matvec)"
LANCZOS_SVD = "Lanczos svds (matvec)"


@dataclass
class Spectrum:
    """Extreme spectral data of one n x n operator."""

    n: int
    hermitian: bool
    method: str
    seconds: float
    lambda_min: float | None = None
    lambda_max: float | None = None
    sigma_max: float = float("nan")
    sigma_min: float | None = None
    eigenvalues: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def norm(self) -> float:
        return self.sigma_max

    @property
    def cond(self) -> float | None:
        """sigma_max / sigma_min; inf when sigma_min <= n eps sigma_max (not resolvable in float64)."""
        if self.sigma_min is None:
            return None
        if self.sigma_min <= self.n * np.finfo(float).eps * self.sigma_max:
            return float("inf")
        return self.sigma_max / self.sigma_min

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "hermitian": self.hermitian, "method": self.method,
                "seconds": self.seconds, "lambda_min": self.lambda_min,
                "lambda_max": self.lambda_max, "sigma_max": self.sigma_max,
                "sigma_min": self.sigma_min, "cond": self.cond, "notes": list(self.notes)}


def _hermitian(op: Any) -> bool:
    h = getattr(op, "hermitian", None)
    if h is None:
        raise PosencError("operator does not say whether it is Hermitian")
    return bool(h)


def _v0(n: int, seed: int, dtype: Any) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(n)
    return v.astype(dtype) if np.issubdtype(dtype, np.complexfloating) else v


def _circulant_eigs(op: ToeplitzOperator) -> np.ndarray:
    """Eigenvalues of T. Chan's optimal circulant approximation of a Hermitian Toeplitz op."""
    n, k = op.n, np.arange(op.n)
    wrapped = np.concatenate([[0], op.row[1:][::-1]])            # t_{k-n} = row[n-k]
    return np.fft.fft(((n - k) * op.column + k * wrapped) / n).real


def _lobpcg_end(op: LinearOperator, which: str, seed: int, notes: list[str]) -> float:
    """Fallback for clustered spectral ends: preconditioned LOBPCG, an honest one-sided value."""
    n = op.shape[0]
    sign = 1.0 if which == "SA" else -1.0
    a = LinearOperator(op.shape, matvec=lambda v: sign * op.matvec(v), dtype=op.dtype)
    m = None
    if isinstance(op, ToeplitzOperator):
        e = sign * _circulant_eigs(op)
        shift = e.min() - 1e-3 * max(e.max() - e.min(), 1e-300)
        m = LinearOperator(op.shape, dtype=op.dtype,
                           matvec=lambda v: np.fft.ifft(np.fft.fft(np.ravel(v)) / (e - shift)).real)
    x = np.random.default_rng(seed).standard_normal((n, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lam, vec = lobpcg(a, x, M=m, tol=1e-12, maxiter=300, largest=False)
    v = vec[:, 0] / np.linalg.norm(vec[:, 0])
    theta = float(np.real(np.vdot(v, op.matvec(v))))
    resid = float(np.linalg.norm(op.matvec(v) - theta * v))
    bound = "an upper bound on lambda_min" if which == "SA" else "a lower bound on lambda_max"
    notes.append(f"Lanczos did not converge at the clustered {'lower' if which == 'SA' else 'upper'} "
                 f"end; LOBPCG Rayleigh quotient {theta:.10g} is {bound} (residual {resid:.2g})")
    return theta


def _eigsh_end(op: LinearOperator, which: str, seed: int, notes: list[str]) -> float:
    n = op.shape[0]
    try:
        val = eigsh(op, k=1, which=which, tol=0, ncv=min(n, 32), maxiter=40,
                    v0=_v0(n, seed, op.dtype), return_eigenvectors=False)
    except ArpackNoConvergence:
        return _lobpcg_end(op, which, seed, notes)
    except ArpackError as exc:  # e.g. an operator whose range misses the start vector
        notes.append(f"ARPACK failed ({str(exc).splitlines()[0]}); LOBPCG used")
        return _lobpcg_end(op, which, seed, notes)
    return float(np.real(val[0]))


def spectrum(op: Any, *, method: str = "auto", full: bool = False, psd: bool | None = None,
             rank_bound: int | None = None, seed: int = 0) -> Spectrum:
    """Extreme eigenvalues (Hermitian), extreme singular values, norm and condition number."""
    if isinstance(op, np.ndarray):
        op = DenseOperator(op)
    n = op.shape[0]
    if method not in ("auto", "dense", "lanczos"):
        raise PosencError(f"method must be auto, dense or lanczos; got {method!r}")
    herm = _hermitian(op)
    structural_zero = bool(psd) and rank_bound is not None and rank_bound < n
    use_dense = method == "dense" or (method == "auto" and n <= AUTO_DENSE) or n < 3 or full
    if method == "lanczos" and n < 3:
        use_dense = True
    if use_dense:
        check_dense_size(n, "a dense spectrum")
    t0 = time.perf_counter()
    notes: list[str] = []
    if isinstance(op, ToeplitzOperator) and not np.any(op.column) and not np.any(op.row):
        return Spectrum(n, True, "structure (zero matrix)", time.perf_counter() - t0, 0.0, 0.0,
                        0.0, 0.0, np.zeros(n) if full else None, ["the zero matrix"])
    if use_dense:
        m = op.dense()
        if herm:
            ev = np.linalg.eigvalsh(m)
            s = Spectrum(n, True, DENSE_EIG, 0.0, float(ev[0]), float(ev[-1]),
                         float(np.max(np.abs(ev))), float(np.min(np.abs(ev))),
                         ev if full else None, notes)
        else:
            sv = np.linalg.svd(m, compute_uv=False)
            s = Spectrum(n, False, DENSE_SVD, 0.0, sigma_max=float(sv[0]), sigma_min=float(sv[-1]),
                         eigenvalues=np.linalg.eigvals(m) if full else None, notes=notes)
        if structural_zero:
            s.notes.append(f"rank <= {rank_bound} < n: lambda_min = 0 exactly; "
                           f"dense value {s.lambda_min:.3g} is rounding")
            s.lambda_min, s.sigma_min = 0.0, 0.0
    elif herm:
        hi = _eigsh_end(op, "LA", seed, notes)
        if structural_zero:
            lo = 0.0
            notes.append(f"lambda_min = 0 exactly: PSD with rank <= {rank_bound} < n")
        else:
            lo = _eigsh_end(op, "SA", seed + 1, notes)
        if lo > hi:  # rounding in a zero-width spectrum
            lo = hi
        sig_min: float | None
        if lo >= 0 or hi <= 0:
            sig_min = min(abs(lo), abs(hi))
        else:
            sig_min = None
            notes.append("indefinite: sigma_min is an interior eigenvalue, not computed by Lanczos")
        s = Spectrum(n, True, LANCZOS_EIG, 0.0, lo, hi, max(abs(lo), abs(hi)), sig_min, None, notes)
    else:
        sv = svds(op, k=1, which="LM", tol=0, v0=_v0(n, seed, op.dtype), return_singular_vectors=False)
        notes.append("non-Hermitian: sigma_min not computed by Lanczos")
        s = Spectrum(n, False, LANCZOS_SVD, 0.0, sigma_max=float(sv[0]), notes=notes)
    s.seconds = time.perf_counter() - t0
    return s
