"""Spectral bounds for positional matrices, each with the assumptions under which it holds.

Gu et al. (arXiv 2505.13027) explain spectral contraction under multiplicative
coupling (Schur product theorem) and expansion under additive coupling (Weyl).
The bounds here are shown beside the exact values they bound:

``szego(T, grid=None) -> dict``
    Grenander-Szego for a Hermitian Toeplitz T_n: spec(T_n) in [min f_n, max f_n],
    f_n(w) = sum_{|k|<n} t_k e^{ikw}; also ||T_n||_2 <= max |f_n| for any Toeplitz.
    f_n is evaluated on a grid and widened by the rigorous correction
    min(h L1 / 2, h^2 L2 / 8) (first order only for a complex symbol),
    L1 = sum |k||t_k|, L2 = sum k^2 |t_k|, h the grid spacing.
    The interval bounds every m-section with m <= n (it does not depend on m);
    when sum |t_k| < inf it converges to the n-independent range of f.
``gershgorin(op) -> dict``
    Discs centred at the diagonal with radii the off-diagonal row sums (O(n) by
    prefix sums for Toeplitz); Hermitian: spec in [min(d - R), max(d + R)].
``schur_interval(lam_min_a, lam_max_a, kdiag_min, kdiag_max, general=False)``
    A >= 0, K >= 0: spec(A o K) in [lam_min(A) min K_ii, lam_max(A) max K_ii].
    ``general=True``: A only Hermitian, K >= 0 -- the interval
    [min(l*kmin, l*kmax), max(u*kmin, u*kmax)] (from (A - l I) o K >= 0).
``schur_norm(norm_a, kdiag_max)``: K >= 0, any A: ||A o K||_2 <= max K_ii ||A||_2.
``weyl_interval(lam_a, lam_b)`` / ``weyl_norm(norm_a, norm_b)``: A, B Hermitian:
    spec(A + B) in [lam_min A + lam_min B, lam_max A + lam_max B];
    | ||A|| - ||B|| | <= ||A + B|| <= ||A|| + ||B|| (any A, B).
``rotary_nonzero(kernel) -> dict``
    For K = w_0 J + sum_m w_m cos(theta_m (i-j)) (PSD, rank <= 2 planes + 1): each
    cosine plane has the two non-zero eigenvalues (n +- |s_m|)/2, s_m =
    sum_j e^{2 i theta_m j}, so max_m w_m lam(C_m) <= lam_max(K) <= sum_m w_m lam(C_m)
    (K dominates each PSD term; Weyl), and trace(K) = n.  Also, K being PSD,
    lam_max(K) >= ||K||_F^2 / trace(K) (sum lam^2 <= lam_max sum lam), O(n) for Toeplitz.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PosencError
from .operators import ToeplitzOperator


def szego_grid(n: int, hermitian: bool) -> int:
    """The default number of symbol points of :func:`szego` for an n-section: the power of two
    at or above 16 n (Hermitian), or 64 n otherwise (first-order correction only: a finer
    grid)."""
    return 1 << int(np.ceil(np.log2(max((16 if hermitian else 64) * n, 16))))


def szego(op: ToeplitzOperator, grid: int | None = None) -> dict[str, Any]:
    """Symbol range of the n-section, rigorously widened for the grid."""
    if not isinstance(op, ToeplitzOperator):
        raise PosencError("the Szego bound needs a Toeplitz operator")
    herm = op.hermitian
    if grid is None:
        grid = szego_grid(op.n, herm)
    f = op.symbol_values(int(grid))
    h = 2 * np.pi / f.size
    k = np.arange(op.n)
    mag = np.abs(op.column) + np.concatenate([[0.0], np.abs(op.row[1:])])
    l1, l2 = float(np.sum(k * mag)), float(np.sum(k * k * mag))
    # |f'| <= L1 everywhere: any point is within h/2 of the grid (first order).  At an interior
    # extremum of a real f, f' = 0 and |f''| <= L2 (second order).  |f| of a complex f is only
    # Lipschitz at its maximum, so the norm bound of a non-Hermitian T uses the first order.
    first, second = h * l1 / 2, h * h * l2 / 8
    corr = min(first, second) if herm else first
    sup = max(float(f.max()), -float(f.min())) if herm else float(np.abs(f).max())
    out: dict[str, Any] = {"grid": int(f.size), "correction": corr,
                           "first_order_correction": first,
                           "norm_upper": sup + corr, "hermitian": herm}
    if herm:
        out.update(grid_min=float(f.min()), grid_max=float(f.max()),
                   lower=float(f.min()) - corr, upper=float(f.max()) + corr)
    return out


def gershgorin(op: Any) -> dict[str, Any]:
    """Gershgorin discs: centres d_i, radii R_i; interval and norm bound for Hermitian ops."""
    if isinstance(op, ToeplitzOperator):
        radii, centres = op.gershgorin_radii(), op.diagonal()
        method = "O(n) prefix sums"
    else:
        m = op.dense() if hasattr(op, "dense") else np.asarray(op)
        centres = np.diag(m).copy()
        radii = np.abs(m).sum(axis=1) - np.abs(centres)
        method = "dense row sums"
    out = {"radius_max": float(radii.max()), "method": method,
           "norm_upper": float(np.max(np.abs(centres) + radii))}
    herm = bool(getattr(op, "hermitian", False)) if not isinstance(op, np.ndarray) else \
        bool(np.array_equal(op, np.conj(op).T))
    if herm:
        out.update(lower=float(np.min(centres.real - radii)), upper=float(np.max(centres.real + radii)))
    return out


def gershgorin_contains(eigenvalues: np.ndarray, centres: np.ndarray, radii: np.ndarray,
                        rtol: float = 0.0) -> bool:
    """Every eigenvalue lies in some disc |z - d_i| <= R_i (with slack rtol * scale)."""
    ev = np.asarray(eigenvalues)[:, None]
    slack = rtol * max(float(np.max(np.abs(centres) + radii)), 1.0)
    return bool(np.all(np.any(np.abs(ev - centres[None, :]) <= radii[None, :] + slack, axis=1)))


def schur_interval(lam_min_a: float, lam_max_a: float, kdiag_min: float, kdiag_max: float,
                   general: bool = False) -> tuple[float, float]:
    """Containment interval for spec(A o K), K PSD; A PSD unless ``general``."""
    if not general:
        return lam_min_a * kdiag_min, lam_max_a * kdiag_max
    lo = min(lam_min_a * kdiag_min, lam_min_a * kdiag_max)
    hi = max(lam_max_a * kdiag_min, lam_max_a * kdiag_max)
    return lo, hi


def schur_norm(norm_a: float, kdiag_max: float) -> float:
    """||A o K||_2 <= max_i K_ii ||A||_2 for K PSD and any A."""
    return kdiag_max * norm_a


def weyl_interval(lam_a: tuple[float, float], lam_b: tuple[float, float]) -> tuple[float, float]:
    return lam_a[0] + lam_b[0], lam_a[1] + lam_b[1]


def weyl_norm(norm_a: float, norm_b: float) -> tuple[float, float]:
    return abs(norm_a - norm_b), norm_a + norm_b


def cosine_plane_eigenvalues(theta: float, n: int) -> tuple[float, float]:
    """The two non-zero eigenvalues of C = [cos(theta (i-j))]_{i,j<n}: (n +- |s|)/2."""
    # C = (1/2) V V^H with V = [u, conj(u)], u_j = e^{i theta j}: the non-zero eigenvalues are
    # those of (1/2) V^H V = (1/2) [[n, s], [conj(s), n]], s = sum_j e^{-2 i theta j}.
    s = abs(np.sum(np.exp(2j * theta * np.arange(n))))
    return (n + s) / 2, max((n - s) / 2, 0.0)


def rotary_nonzero(kern: Any) -> dict[str, Any]:
    """Bounds on the non-zero spectrum of a rotary average kernel from its planes."""
    if getattr(kern, "kind", None) != "rotary":
        raise PosencError("non-zero spectrum bounds are for rotary kernels")
    n = kern.n
    terms = [kern.constant_weight * n] if kern.constant_weight > 0 else []
    for th, w in zip(kern.frequencies, kern.plane_weights):
        terms.append(w * cosine_plane_eigenvalues(float(th), n)[0])
    fro = kern.operator.frobenius_sq()
    trace = float(n * kern.column[0].real)
    return {"lambda_max_lower": float(max(terms)), "lambda_max_upper": float(sum(terms)),
            "trace": trace, "rank_bound": kern.rank_bound, "frobenius_sq": fro,
            "lambda_max_lower_frobenius": fro / trace}
