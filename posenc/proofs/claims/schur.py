"""Schur containment and the Schur multiplier norm.

Gu et al. (arXiv 2505.13027, Sec. 3, the multiplicative case) bound the spectrum of a RoPE logit
matrix through the Hadamard product A∘K of a content Gram matrix A with a positional kernel K
that is PSD with unit diagonal.  posenc states the two facts precisely:

* containment: A real symmetric, K ⪰ 0 with K_ii = 1  ⇒  spec(A∘K) ⊂ [λ_min(A), λ_max(A)];
* multiplier norm (Schur's theorem on Hadamard multipliers): K ⪰ 0  ⇒
  ‖A∘K‖₂ ≤ (max_i K_ii) ‖A‖₂ for every real square A -- symmetric or not, and a rectangular
  m×n A padded with zeros to a square (the padding changes neither norm).  K_ii = 1 gives
  ‖A∘K‖₂ ≤ ‖A‖₂.

The paper's wording assumes A ⪰ 0; that assumption is *not needed* (proof below), and posenc
checks so: for containment dropping it is a variant on which no counterexample is expected, and
the multiplier norm's strategy draws non-symmetric and zero-padded rectangular A.  The assumption
that matters is K ⪰ 0 (and, for containment, the unit diagonal): dropping it gives a
counterexample; so does dropping the factor max_i K_ii when the diagonal is not 1.

Proof (both): write K = Σ_r v_r v_rᵀ and D_r = diag(v_r).  Then A∘K = Σ_r D_r A D_r, so
xᵀ(A∘K)x = Σ_r (D_r x)ᵀ A (D_r x) ∈ [λ_min, λ_max] · Σ_r ‖D_r x‖² and Σ_r ‖D_r x‖² = Σ_i K_ii x_i²
= ‖x‖² (containment: A symmetric).  For the norm, A any real square matrix:
|yᵀ(A∘K)x| = |Σ_r (D_r y)ᵀA(D_r x)| ≤ ‖A‖₂ Σ_r ‖D_r y‖‖D_r x‖
≤ ‖A‖₂ (Σ_r ‖D_r y‖²)^½ (Σ_r ‖D_r x‖²)^½ = ‖A‖₂ (Σ_i K_ii y_i²)^½ (Σ_i K_ii x_i²)^½
≤ (max_i K_ii) ‖A‖₂ ‖y‖‖x‖ by Cauchy–Schwarz (twice); no symmetry of A is used.  The symbolic
parts verify the identities the chain rests on for symbolic entries: A∘(vvᵀ) = D_v A D_v with A
symmetric (containment) and, with A a general (non-symmetric) matrix and K = v vᵀ + w wᵀ,
A∘K = D_v A D_v + D_w A D_w, the bilinear form yᵀ(A∘K)x = Σ_r (D_r y)ᵀA(D_r x) and
Σ_r ‖D_r x‖² = Σ_i K_ii x_i².
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..claim import PROVED, Claim, SymbolicResult, Variant, require
from ..strategies import (as_array, fmt, int_matrix, psd_from_factor, sized, symmetric_from,
                          unit_diagonal_psd)

N_MAX = 4


def _tol(*mats: np.ndarray) -> float:
    # float64 eigenvalues of n <= 4 matrices with entries <= ~40: LAPACK's backward error is
    # O(n eps ‖M‖) ~ 1e-14 ‖M‖; 1e-9 (1 + ‖M‖) leaves five orders of margin and still sees
    # every violation Hypothesis can build from integer entries (they are O(1)).
    return 1e-9 * (1.0 + max(float(np.abs(m).sum()) for m in mats))


def _symbolic_identity() -> SymbolicResult:
    import sympy as sp

    n = 3
    A = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"a{min(i, j)}{max(i, j)}", real=True))
    v = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"v{i}", real=True))
    x = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"x{i}", real=True))
    K = v * v.T
    hadamard = A.multiply_elementwise(K)
    D = sp.diag(*v)
    ok = sp.simplify(hadamard - D * A * D) == sp.zeros(n, n)
    # Quadratic form identity and the diagonal sum, for the same symbols.
    ok &= sp.expand((x.T * hadamard * x)[0] - ((D * x).T * A * (D * x))[0]) == 0
    ok &= sp.expand(((D * x).T * (D * x))[0] - sum(K[i, i] * x[i] ** 2 for i in range(n))) == 0
    if not ok:
        return SymbolicResult("failed", "A∘(vvᵀ) ≠ D_v A D_v for symbolic entries")
    return SymbolicResult(PROVED, "A∘(vvᵀ) = D_v A D_v verified symbolically on a 3×3 block "
                          "(every entry of the n×n identity, a_ij v_i v_j, is one of its diagonal "
                          "or off-diagonal entries); with K = Σ_r v_r v_rᵀ the bound follows by "
                          "the Rayleigh quotient and Σ_r ‖D_r x‖² = Σ_i K_ii x_i² = ‖x‖²")


def _symbolic_general() -> SymbolicResult:
    import sympy as sp

    n = 3
    A = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"a{i}{j}", real=True))   # no symmetry
    vs = [sp.Matrix(n, 1, lambda i, _, r=r: sp.Symbol(f"{r}{i}", real=True)) for r in "vw"]
    x = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"x{i}", real=True))
    y = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"y{i}", real=True))
    K = sum((v * v.T for v in vs), sp.zeros(n, n))
    Ds = [sp.diag(*v) for v in vs]
    hadamard = A.multiply_elementwise(K)
    ok = sp.expand(hadamard - sum((D * A * D for D in Ds), sp.zeros(n, n))) == sp.zeros(n, n)
    ok &= sp.expand((y.T * hadamard * x)[0]
                    - sum(((D * y).T * A * (D * x))[0] for D in Ds)) == 0
    ok &= sp.expand(sum(((D * x).T * (D * x))[0] for D in Ds)
                    - sum(K[i, i] * x[i] ** 2 for i in range(n))) == 0
    if not ok:
        return SymbolicResult("failed", "A∘(Σ_r v_r v_rᵀ) ≠ Σ_r D_r A D_r for a general symbolic A")
    return SymbolicResult(PROVED, "for a general (non-symmetric) symbolic 3×3 A and a rank-2 "
                          "K = vvᵀ + wwᵀ, sympy verifies A∘K = Σ_r D_r A D_r, "
                          "yᵀ(A∘K)x = Σ_r (D_r y)ᵀA(D_r x) and Σ_r ‖D_r x‖² = Σ_i K_ii x_i²; "
                          "Cauchy–Schwarz then gives ‖A∘K‖₂ ≤ max_i K_ii ‖A‖₂ (no symmetry of "
                          "A used)")


# --- containment -----------------------------------------------------------------------------

def _pairs(a_builder, k_builder):
    def build(n):
        return st.fixed_dictionaries({"A": int_matrix(n, n), "K": int_matrix(n, n)}).map(
            lambda d: {"A": a_builder(d["A"]), "K": k_builder(d["K"])})
    return sized(build, 1, N_MAX)


def _unit_diag_symmetric(rows) -> np.ndarray:
    K = symmetric_from(rows)
    np.fill_diagonal(K, 1.0)
    return K


def _containment(ex: dict) -> None:
    A, K = ex["A"], ex["K"]
    lam_a = np.linalg.eigvalsh(A)
    lam = np.linalg.eigvalsh(A * K)
    tol = _tol(A, K)
    require(lam[0] >= lam_a[0] - tol and lam[-1] <= lam_a[-1] + tol,
            f"spec(A∘K) = [{lam[0]:.6g}, {lam[-1]:.6g}] ⊄ [λmin(A), λmax(A)] = "
            f"[{lam_a[0]:.6g}, {lam_a[-1]:.6g}]")


def _describe(ex: dict) -> str:
    return ", ".join(f"{k} = {fmt(v)}" for k, v in ex.items())


CONTAINMENT = Claim(
    id="schur-containment",
    title="Schur containment of spec(A∘K)",
    statement="If A is real symmetric and K is PSD with unit diagonal, every eigenvalue of the "
              "Hadamard product A∘K lies in [λ_min(A), λ_max(A)].",
    latex=r"A=A^\top,\ K\succeq 0,\ K_{ii}=1 \;\Rightarrow\; "
          r"\operatorname{spec}(A\circ K)\subset[\lambda_{\min}(A),\lambda_{\max}(A)]",
    source="Gu et al., multiplicative PE (for A ⪰ 0)",
    assumptions=("A ⪰ 0 (the paper's; not needed, see the variant)", "K ⪰ 0", "K_ii = 1"),
    strategy=lambda: _pairs(psd_from_factor, unit_diagonal_psd),
    check=_containment,
    symbolic=_symbolic_identity,
    describe=_describe,
    variants=(
        Variant("A ⪰ 0", lambda: _pairs(symmetric_from, unit_diagonal_psd),
                expect_counterexample=False,
                note="containment holds for every real symmetric A"),
        Variant("K ⪰ 0", lambda: _pairs(psd_from_factor, _unit_diag_symmetric)),
        Variant("K_ii = 1", lambda: _pairs(psd_from_factor, psd_from_factor)),
    ),
    layers=("numpy",),
)


# --- multiplier norm -------------------------------------------------------------------------

def general_matrix(n: int):
    """Strategy: any real n×n integer matrix (non-symmetric in general), or an n×m one (m < n)
    padded with zero columns to a square -- a rectangular A as a square one."""
    def pad(rows, m):
        A = as_array(rows)
        A[:, m:] = 0.0
        return A
    return st.tuples(int_matrix(n, n), st.integers(1, n)).map(lambda t: pad(*t))


def _general_pairs(k_builder):
    def build(n):
        return st.fixed_dictionaries({"A": general_matrix(n), "K": int_matrix(n, n)}).map(
            lambda d: {"A": d["A"], "K": k_builder(d["K"])})
    return sized(build, 1, N_MAX)


def _any_psd():
    """Strategy of K builders: a correlation matrix (unit diagonal) or a general PSD L Lᵀ."""
    return _general_pairs(unit_diagonal_psd) | _general_pairs(psd_from_factor)


def multiplier_norm(ex: dict, scaled: bool = True) -> None:
    """‖A∘K‖₂ ≤ (max_i K_ii) ‖A‖₂ (``scaled=False``: ≤ ‖A‖₂, true only for K_ii ≤ 1)."""
    A, K = ex["A"], ex["K"]
    lhs = np.linalg.norm(A * K, 2)
    kmax = max(float(np.diag(K).max()), 0.0) if scaled else 1.0
    rhs = kmax * np.linalg.norm(A, 2)
    require(lhs <= rhs + _tol(A, K),
            f"‖A∘K‖₂ = {lhs:.6g} > {'max K_ii · ' if scaled else ''}‖A‖₂ = {rhs:.6g}")


MULTIPLIER = Claim(
    id="schur-multiplier-norm",
    title="Schur multiplier norm of a PSD kernel",
    statement="If K is PSD then ‖A∘K‖₂ ≤ (max_i K_ii) ‖A‖₂ for every real square A, "
              "symmetric or not (a rectangular A: pad it with zeros); for a correlation kernel "
              "(K_ii = 1, e.g. RoPE's) ‖A∘K‖₂ ≤ ‖A‖₂.",
    latex=r"K\succeq 0 \;\Rightarrow\; \|A\circ K\|_2\le\max_i K_{ii}\,\|A\|_2"
          r"\quad\forall A\in\mathbb R^{n\times n}",
    source="Gu et al., multiplicative PE (Schur's theorem on Hadamard multipliers)",
    assumptions=("A any real n×n (non-symmetric, or rectangular padded with zeros)", "K ⪰ 0"),
    strategy=_any_psd,
    check=multiplier_norm,
    symbolic=_symbolic_general,
    describe=_describe,
    variants=(
        Variant("K ⪰ 0", lambda: _general_pairs(_unit_diag_symmetric)),
        Variant("‖A∘K‖₂ ≤ ‖A‖₂ without K_ii = 1", lambda: _general_pairs(psd_from_factor),
                check=lambda ex: multiplier_norm(ex, scaled=False), kind="stronger conclusion"),
    ),
    layers=("numpy",),
)

CLAIMS = (CONTAINMENT, MULTIPLIER)
