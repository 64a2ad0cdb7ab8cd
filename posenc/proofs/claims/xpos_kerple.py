"""Claims for the two PEs added through the catalogue's parts: xPos and KERPLE-log.

**xPos** (Sun et al. 2022).  Its positional matrix (the head average, as for RoPE) is
K_ij = Σ_m w_m λ_m^{i−j} cos(θ_m (i−j)), w_m = 2/d, λ_m = ζ_m^{1/scale_base} < 1: Toeplitz with unit
diagonal, but *not* Hermitian (λ^{i−j} ≠ λ^{j−i}), so it is not PSD and Schur's theorem (claims
``schur-*``: A ⪰ 0, K ⪰ 0 with unit diagonal ⇒ ‖A∘K‖₂ ≤ ‖A‖₂) does not apply.  What does hold for
every A is Schur's factorisation bound: K = X Yᵀ with rows x_i = (√w_m λ_m^i (cos θ_m i, sin θ_m i))_m
and y_j = (√w_m λ_m^{−j} (cos θ_m j, sin θ_m j))_m, so ‖A∘K‖₂ ≤ ‖A‖₂ max_i‖x_i‖ max_j‖y_j‖
= ‖A‖₂ (Σ_m w_m λ_m^{−2(n−1)})^{1/2}, a bound that grows with n (exponentially, at rate
ζ_min^{−1/scale_base}).  The PSD conclusion ‖A∘K‖₂ ≤ max K_ii ‖A‖₂ is false even for PSD A.

**KERPLE-log** (Chi et al. 2022).  B_ij = −r₁ log(1 + r₂|i−j|), r₁, r₂ > 0: B is *conditionally*
positive definite -- cᵀBc ≥ 0 for every c with Σ c = 0 -- because |x| is conditionally negative
definite and log(1 + r₂ t) is a Bernstein function, so log(1 + r₂|x|) is CND and its negative CPD.
It is not PSD (c = (1, 1): cᵀBc = 2 B_01 < 0).

λ, θ come from :mod:`posenc.theory` (exact), the kernels from :mod:`posenc.numerics`; each check
first holds the two against each other.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ...encodings import KerpleLog, XPos
from ...numerics.kernels import kernel
from ...theory.conventions import xpos_planes
from ..claim import NOT_APPLICABLE, Claim, SymbolicResult, Variant, agree, require
from ..strategies import fmt, int_matrix


def xpos_inputs(psd: bool = False, gammas: tuple[float, ...] = (0.4, 0.1, 2.0),
                scale_bases: tuple[float, ...] = (512.0, 8.0, 1.0), nonzero: bool = False):
    """xPos settings and a real A (``psd``: M Mᵀ); ``nonzero``: A ≠ 0 (A = 0 meets every norm
    bound with equality: an example that cannot refute anything)."""
    xpos = {"d": st.sampled_from((2, 4)), "gamma": st.sampled_from(gammas),
            "scale_base": st.sampled_from(scale_bases)}
    if not nonzero:
        return st.fixed_dictionaries({"n": st.integers(2, 6), **xpos, "A": int_matrix(6, 6)}).map(
            lambda ex: _slice(ex, psd))
    # n first and an n x n matrix of its own (not the top-left block of a 6 x 6 one), so that the
    # filter leaves the shrinker a way down to n = 2
    return st.integers(2, 6).flatmap(lambda n: st.fixed_dictionaries(
        {"n": st.just(n), **xpos, "A": int_matrix(n, n)})).map(lambda ex: _slice(ex, psd)).filter(
            lambda ex: bool(ex["A"].any()))


#: where the PSD-Schur conclusion fails for xPos: lambda = zeta^(1/scale_base) far from 1.  With
#: A the all-ones matrix, ||A o K||_2 / ||A||_2 - 1 is < 0 for every n <= 6 at scale_base 512 and 8
#: (K is then nearly Hermitian) and reaches +0.17..+7.9e3 at scale_base 1 with gamma 0.4 or 0.1
#: (measured 2026-12-05).  Searching the whole grid (a 6 x 6 matrix's top-left block, often
#: zero), 40 thorough examples missed it in 11 of 800 searches (the CI's bounded test failed
#: once).  The variant searches this corner with A ≠ 0, where 379 of 400 drawn examples refute
#: the conclusion and 200 bounded thorough searches had no miss, so a correct xPos kernel is
#: refuted and a Hermitian one never.
XPOS_NON_HERMITIAN = {"gammas": (0.4, 0.1), "scale_bases": (1.0,), "nonzero": True}


def _slice(ex: dict, psd: bool) -> dict:
    M = np.asarray(ex["A"], float)[:ex["n"], :ex["n"]]
    return {**ex, "A": M @ M.T if psd else M}


def _xpos(ex: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K from numerics, and the factors X, Y from theory's exact λ, θ (held against each other)."""
    n, d = ex["n"], ex["d"]
    spec = XPos(gamma=ex["gamma"], scale_base=ex["scale_base"])
    K = kernel(spec, n, n_heads=1, head_dim=d).dense()
    planes = xpos_planes(spec, d)
    lam = np.array([float(p[3]) for p in planes])
    theta = np.array([float(p[2]) for p in planes])
    i = np.arange(n)[:, None]
    sw = np.sqrt(2.0 / d)
    X = np.concatenate([sw * lam ** i * np.cos(theta * i), sw * lam ** i * np.sin(theta * i)], 1)
    Y = np.concatenate([sw * lam ** -i * np.cos(theta * i), sw * lam ** -i * np.sin(theta * i)], 1)
    agree(np.allclose(K, X @ Y.T, rtol=1e-10, atol=1e-12),
          lambda: f"numerics xPos kernel != theory's factor X Yᵀ: {fmt(K)} vs {fmt(X @ Y.T)}")
    return K, X, Y


def _tol(scale: float) -> float:
    # n <= 6, integer entries <= 3: float64 SVD is accurate to ~n eps ‖M‖; 1e-9 (1 + scale) is far
    # below the O(1e-2) violations integer inputs produce.
    return 1e-9 * (1 + scale)


def xpos_factor_bound(ex: dict) -> None:
    K, X, Y = _xpos(ex)
    A = ex["A"]
    lhs = float(np.linalg.norm(A * K, 2))
    bound = float(np.linalg.norm(A, 2) * np.linalg.norm(X, axis=1).max()
                  * np.linalg.norm(Y, axis=1).max())
    require(np.allclose(np.diag(K), 1.0), f"K_ii != 1: {fmt(np.diag(K))}")
    require(not np.allclose(K, K.T), "K is symmetric (expected not Hermitian for n >= 2)")
    require(lhs <= bound + _tol(bound), f"‖A∘K‖₂ = {lhs:.6g} > ‖A‖₂ max‖x_i‖ max‖y_j‖ = {bound:.6g}")


def xpos_psd_schur(ex: dict) -> None:
    K, _, _ = _xpos(ex)
    A = ex["A"]
    lhs, rhs = float(np.linalg.norm(A * K, 2)), float(np.abs(np.diag(K)).max() * np.linalg.norm(A, 2))
    require(lhs <= rhs + _tol(rhs), f"‖A∘K‖₂ = {lhs:.6g} > max K_ii ‖A‖₂ = {rhs:.6g}")


def describe_xpos(ex: dict) -> str:
    return (f"n={ex['n']}, d={ex['d']}, gamma={fmt(ex['gamma'])}, "
            f"scale_base={fmt(ex['scale_base'])}, A={fmt(ex['A'])}")


def kerple_inputs(r1_sign: float = 1.0, zero_sum: bool = True):
    pos = st.floats(0.01, 100.0, allow_nan=False)
    return st.fixed_dictionaries({
        "n": st.integers(2, 12), "r1": pos.map(lambda v: r1_sign * v), "r2": pos,
        "c": st.lists(st.integers(-3, 3), min_size=12, max_size=12)}).map(
        lambda ex: {**ex, "c": _vector(ex["c"][:ex["n"]], zero_sum)})


def _vector(c: list[int], zero_sum: bool) -> np.ndarray:
    v = np.asarray(c, float)
    if not zero_sum:
        # The variant draws where dropping Σc = 0 bites: one sign and two entries at least (any c
        # drawn here found the counterexample at 40 examples in all but 2 of 500 runs).
        v = np.abs(v)
        if np.count_nonzero(v) < 2:
            v[0] = v[-1] = 1.0
        return v
    if not v.any():
        v[0] = 1.0
    return v - v.mean()


def _kerple(ex: dict) -> np.ndarray:
    n, r1, r2 = ex["n"], ex["r1"], ex["r2"]
    k = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    B = -r1 * np.log1p(r2 * k)
    if r1 > 0:      # the catalogue takes r1 > 0 only; a negated r1 is the variant's own matrix
        Bn = kernel(KerpleLog(r1=r1, r2=r2), n, n_heads=1).dense()
        agree(np.allclose(Bn, B, rtol=1e-12, atol=1e-12),
              lambda: f"numerics KERPLE-log kernel differs from -r1 log(1 + r2|i-j|): {fmt(Bn)}")
    return B


def kerple_cpd(ex: dict) -> None:
    B = _kerple(ex)
    c = ex["c"]
    q = float(c @ B @ c)
    scale = float(np.abs(B).sum() * (c ** 2).sum())
    require(q >= -_tol(scale), f"cᵀBc = {q:.6g} < 0 for c = {fmt(c)} (Σc = {c.sum():.3g})")


def describe_kerple(ex: dict) -> str:
    return f"n={ex['n']}, r1={fmt(ex['r1'])}, r2={fmt(ex['r2'])}, c={fmt(ex['c'])}"


CLAIMS = (
    Claim(
        id="xpos-schur",
        title="xPos: not Hermitian, so Schur's PSD bound does not apply; the factor bound does",
        statement="For xPos (any γ > 0, scale_base > 0, even d) the positional matrix K is Toeplitz "
                  "with unit diagonal and not Hermitian (n ≥ 2), and for every real A: "
                  "‖A∘K‖₂ ≤ ‖A‖₂ max_i‖x_i‖ max_j‖y_j‖ = ‖A‖₂ (Σ_m w_m λ_m^{−2(n−1)})^{1/2} (K = XYᵀ); "
                  "the PSD-Schur conclusion ‖A∘K‖₂ ≤ max K_ii ‖A‖₂ is false, even for A ⪰ 0.",
        latex=r"\|A\circ K\|_2\le\|A\|_2\max_i\|x_i\|\max_j\|y_j\|,\quad "
              r"\|A\circ K\|_2\le\max_i K_{ii}\|A\|_2\ \text{is false}",
        source="new (xPos: Sun et al. 2022)",
        assumptions=("K = xPos head-average kernel from the numerics layer",
                     "λ_m, θ_m exact from the theory layer", "A real n×n"),
        strategy=xpos_inputs,
        check=xpos_factor_bound,
        symbolic=lambda: SymbolicResult(
            NOT_APPLICABLE, "Toeplitz structure and the plane decomposition are proved by derive "
            "('posenc derive xpos'); the norm bound is Schur's factorisation inequality, checked "
            "numerically"),
        variants=(Variant("‖A∘K‖₂ ≤ max K_ii ‖A‖₂ for A ⪰ 0 (Schur's PSD conclusion)",
                          lambda: xpos_inputs(psd=True, **XPOS_NON_HERMITIAN),
                          check=xpos_psd_schur,
                          kind="stronger conclusion"),),
        describe=describe_xpos,
        layers=("theory", "numerics"),
    ),
    Claim(
        id="kerple-log-cpd",
        title="KERPLE-log's bias is conditionally positive definite (not PSD)",
        statement="For r₁, r₂ > 0 and any n, B_ij = −r₁ log(1 + r₂|i−j|) satisfies cᵀBc ≥ 0 for "
                  "every c with Σ_i c_i = 0; without Σc = 0 (B PSD) or with r₁ < 0 it fails.",
        latex=r"\sum_i c_i = 0 \Rightarrow c^\top B c \ge 0,\quad B_{ij} = -r_1\log(1 + r_2|i-j|)",
        source="new (KERPLE: Chi et al. 2022)",
        assumptions=("r₁ > 0", "r₂ > 0", "Σ_i c_i = 0"),
        strategy=kerple_inputs,
        check=kerple_cpd,
        symbolic=lambda: SymbolicResult(
            NOT_APPLICABLE, "|x| is conditionally negative definite and log(1 + r₂t) a Bernstein "
            "function, so log(1 + r₂|x|) is CND (Schoenberg); checked numerically"),
        variants=(Variant("Σ_i c_i = 0 (i.e. B PSD)", lambda: kerple_inputs(zero_sum=False)),
                  Variant("r₁ > 0", lambda: kerple_inputs(r1_sign=-1.0))),
        describe=describe_kerple,
        layers=("numerics",),
    ),
)
