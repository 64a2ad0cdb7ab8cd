"""Claim 4 of the design: Schur containment and the Schur multiplier norm.

Gu et al. (arXiv 2505.13027, Sec. 3, the multiplicative case) bound the spectrum of a RoPE logit
matrix through the Hadamard product A∘K of a content Gram matrix A with a positional kernel K
that is PSD with unit diagonal.  posenc states the two facts precisely:

* containment: A real symmetric, K ⪰ 0 with K_ii = 1  ⇒  spec(A∘K) ⊂ [λ_min(A), λ_max(A)];
* multiplier norm: K ⪰ 0 with K_ii = 1  ⇒  ‖A∘K‖₂ ≤ ‖A‖₂ for every real A.

The paper's wording assumes A ⪰ 0; that assumption is *not needed* (proof below), and posenc
checks so: dropping it is a variant on which no counterexample is expected.  The assumptions that
matter are K ⪰ 0 and the unit diagonal: dropping either gives a counterexample.

Proof (both): write K = Σ_r v_r v_rᵀ and D_r = diag(v_r).  Then A∘K = Σ_r D_r A D_r, so
xᵀ(A∘K)x = Σ_r (D_r x)ᵀ A (D_r x) ∈ [λ_min, λ_max] · Σ_r ‖D_r x‖² and Σ_r ‖D_r x‖² = Σ_i K_ii x_i²
= ‖x‖².  For the norm, |yᵀ(A∘K)x| = |Σ_r (D_r y)ᵀA(D_r x)| ≤ ‖A‖₂ Σ_r ‖D_r y‖‖D_r x‖ ≤ ‖A‖₂‖y‖‖x‖
by Cauchy–Schwarz.  The symbolic part verifies the identity A∘(vvᵀ) = D_v A D_v entrywise
for symbolic entries (the step every other line rests on).
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
    design_number="4",
    layers=("numpy",),
)


# --- multiplier norm -------------------------------------------------------------------------

def _multiplier_norm(ex: dict) -> None:
    A, K = ex["A"], ex["K"]
    lhs = np.linalg.norm(A * K, 2)
    rhs = np.linalg.norm(A, 2)
    require(lhs <= rhs + _tol(A, K), f"‖A∘K‖₂ = {lhs:.6g} > ‖A‖₂ = {rhs:.6g}")


MULTIPLIER = Claim(
    id="schur-multiplier-norm",
    title="Schur multiplier norm of a correlation kernel",
    statement="If K is PSD with unit diagonal then ‖A∘K‖₂ ≤ ‖A‖₂ for every real square A.",
    latex=r"K\succeq 0,\ K_{ii}=1 \;\Rightarrow\; \|A\circ K\|_2\le\|A\|_2\quad\forall A",
    source="Gu et al., multiplicative PE",
    assumptions=("A any real n×n", "K ⪰ 0", "K_ii = 1"),
    strategy=lambda: _pairs(as_array, unit_diagonal_psd),
    check=_multiplier_norm,
    symbolic=_symbolic_identity,
    describe=_describe,
    variants=(
        Variant("K ⪰ 0", lambda: _pairs(as_array, _unit_diag_symmetric)),
        Variant("K_ii = 1", lambda: _pairs(as_array, psd_from_factor)),
    ),
    design_number="4",
    layers=("numpy",),
)

CLAIMS = (CONTAINMENT, MULTIPLIER)
