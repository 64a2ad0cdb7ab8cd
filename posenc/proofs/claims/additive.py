"""The additive expansion L = A + B (Weyl) and the growth of ‖B‖₂ with n.

Gu et al. (arXiv 2505.13027) write an additive PE's logit as a content term A plus a Toeplitz
bias B.  posenc checks, with B taken from :func:`posenc.numerics.kernels.kernel`:

* ``additive-weyl``: for symmetric A and a symmetric bias B (symmetric ALiBi, custom even
  kernels, the sinusoidal position Gram), λ_k(A) + λ_min(B) ≤ λ_k(A+B) ≤ λ_k(A) + λ_max(B)
  for every k (Weyl).  Dropping the symmetry of B (causal ALiBi) breaks it: a counterexample
  is found.
* ``additive-growth``: a symmetric ALiBi head with slope s has ‖B_n‖₂ ≥ s(n²−1)/3, so the bias
  grows without bound in n; the multiplicative factor E_m keeps ‖A∘E_m‖₂ ≤ ‖A‖₂ for every n.
  Dropping the symmetry (causal ALiBi) breaks the lower bound at n = 3.  The report measures
  ‖B_n‖₂ for n up to 8192 with numerics' spectrum (Lanczos past 512) and fits the growth
  exponent per PE.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ...encodings import ALiBi, RelativeBias, RoPE, Sinusoidal
from ..claim import NOT_APPLICABLE, PROVED, Claim, SymbolicResult, Variant, require
from ..strategies import fmt, int_matrix

SYMMETRIC_BIASES = ("alibi:slopes=press", "alibi:slopes=exp", "custom:kernel=exp(-abs(k)/2)",
                    "custom:kernel=-log(1+abs(k))", "sinusoidal")
CAUSAL_BIASES = ("alibi:slopes=press,direction=causal", "alibi:slopes=exp,direction=causal")
N_HEADS = 4


def _bias(spec_text: str, n: int, head: int) -> np.ndarray:
    from ...numerics.kernels import kernel
    return kernel(spec_text, n, head=head, n_heads=N_HEADS, head_dim=4).dense().real


def _weyl_inputs(biases):
    return st.fixed_dictionaries({
        "n": st.integers(1, 6), "spec": st.sampled_from(biases), "head": st.integers(0, N_HEADS - 1),
        "A": int_matrix(6, 6)}).map(
            lambda ex: {**ex, "A": (lambda S: (S + S.T) / 2)(np.asarray(ex["A"], float)[:ex["n"], :ex["n"]])})


def _weyl_all(ex: dict) -> None:
    for spec in SYMMETRIC_BIASES:                     # every bias on every drawn A
        _weyl({**ex, "spec": spec})


def _weyl(ex: dict) -> None:
    A, B = ex["A"], _bias(ex["spec"], ex["n"], ex["head"])
    lam_a = np.sort(np.linalg.eigvalsh(A))
    lam_b = np.linalg.eigvals(B)
    lam = np.linalg.eigvals(A + B)
    # float64 eigenvalues of n <= 6 matrices with entries <= ~20: error ~1e-14 ‖M‖; 1e-9(1+‖M‖)
    # is far above it and far below the O(0.1) violations the variants produce.
    tol = 1e-9 * (1 + np.abs(A).sum() + np.abs(B).sum())
    require(np.all(np.abs(lam.imag) <= tol) and np.all(np.abs(lam_b.imag) <= tol),
            f"A+B or B has non-real eigenvalues: eig(A+B) = {fmt(np.round(lam, 6))}")
    lam, lam_b = np.sort(lam.real), np.sort(lam_b.real)
    lo, hi = lam_a + lam_b[0], lam_a + lam_b[-1]
    bad = np.flatnonzero((lam < lo - tol) | (lam > hi + tol))
    require(bad.size == 0, lambda:
            f"λ_{bad[0]}(A+B) = {lam[bad[0]]:.6g} ∉ [λ_{bad[0]}(A) + λmin(B), λ_{bad[0]}(A) + "
            f"λmax(B)] = [{lo[bad[0]]:.6g}, {hi[bad[0]]:.6g}]")


def _describe(ex: dict) -> str:
    return f"n={ex['n']}, B = {ex['spec']} (head {ex['head']} of {N_HEADS}), A={fmt(ex['A'])}"


WEYL = Claim(
    id="additive-weyl",
    title="Weyl bounds for the additive logit A + B",
    statement="For real symmetric A and a symmetric positional bias B (numerics kernel of a "
              "symmetric additive PE), every eigenvalue satisfies λ_k(A) + λ_min(B) ≤ λ_k(A+B) "
              "≤ λ_k(A) + λ_max(B).",
    latex=r"\lambda_k(A)+\lambda_{\min}(B)\le\lambda_k(A+B)\le\lambda_k(A)+\lambda_{\max}(B)",
    source="Gu et al., additive PE (Weyl's inequality)",
    assumptions=("A real symmetric", "B = Bᵀ (symmetric ALiBi, even custom kernel, sinusoidal "
                                     "position Gram)"),
    strategy=lambda: _weyl_inputs(SYMMETRIC_BIASES),
    check=_weyl_all,
    symbolic=lambda: SymbolicResult(NOT_APPLICABLE, "Weyl's inequality (Courant–Fischer); "
                                    "checked numerically on the numerics kernels"),
    variants=(Variant("B = Bᵀ", lambda: _weyl_inputs(CAUSAL_BIASES), check=_weyl,
                      note="causal ALiBi: B is nilpotent, eig(B) = {0}"),),
    describe=_describe,
    layers=("numerics",),
)


# --- growth ---------------------------------------------------------------------------------

def _growth_inputs(direction: str):
    return st.fixed_dictionaries({
        "n": st.integers(1, 200), "slopes": st.sampled_from(("press", "exp")),
        "n_heads": st.integers(1, 16), "head": st.integers(0, 15),
        "direction": st.just(direction), "A": int_matrix(3, 3)}).map(
            lambda ex: {**ex, "head": ex["head"] % ex["n_heads"]})


def _growth_all(ex: dict) -> None:
    for slopes in ("press", "exp"):                   # both schedules on every input
        _growth({**ex, "slopes": slopes})


def _growth(ex: dict) -> None:
    from ...numerics.conventions import alibi_slopes
    from ...numerics.kernels import kernel
    from ...numerics.spectra import spectrum

    n = ex["n"]
    spec = ALiBi(slopes=ex["slopes"], direction=ex["direction"])
    kern = kernel(spec, n, head=ex["head"], n_heads=ex["n_heads"])
    s = float(alibi_slopes(ex["n_heads"], ex["slopes"])[ex["head"]])
    norm = spectrum(kern.operator).sigma_max
    lower = s * (n * n - 1) / 3
    # the bound is attained only at n = 1, 2; float64 SVD error ~ n eps ‖B‖
    require(norm >= lower - 1e-9 * (1 + lower),
            f"‖B_n‖₂ = {norm:.6g} < s(n²−1)/3 = {lower:.6g} (slope s = {s:.6g})")
    # multiplicative side, same n: a content block A (tiled to n) times a RoPE plane kernel
    m = min(n, 3)
    A = np.asarray(ex["A"], float)[:m, :m]
    E = kernel(RoPE(), m, head_dim=8, n_heads=1).plane(1).dense()
    had, plain = np.linalg.norm(A * E, 2), np.linalg.norm(A, 2)
    require(had <= plain + 1e-9 * (1 + plain), f"‖A∘E_1‖₂ = {had:.6g} > ‖A‖₂ = {plain:.6g}")


def _growth_symbolic() -> SymbolicResult:
    import sympy as sp

    n, k = sp.symbols("n k", integer=True, positive=True)
    total = 2 * sp.summation(k * (n - k), (k, 1, n - 1))        # Σ_{i,j} |i − j|
    if sp.simplify(total - n * (n**2 - 1) / 3) != 0:
        return SymbolicResult("failed", f"Σ|i−j| = {total}, not n(n²−1)/3")
    return SymbolicResult(PROVED, "Σ_{i,j≤n} |i−j| = 2Σ_{k<n} k(n−k) = n(n²−1)/3 (sympy, symbolic "
                          "n), so ‖B_n‖₂ ≥ |1ᵀB_n1|/‖1‖² = s(n²−1)/3")


def _growth_report() -> dict:
    from ...numerics.kernels import kernel
    from ...numerics.spectra import spectrum

    sizes = (16, 128, 1024, 8192)
    specs = {"alibi (press, head 0 of 8)": ALiBi(), "t5 (seeded values, head 0)": RelativeBias(),
             "sinusoidal position Gram (width 512)": Sinusoidal()}
    out = {}
    for label, spec in specs.items():
        norms = []
        for n in sizes:
            kern = kernel(spec, n, n_heads=8, head_dim=64)
            norms.append(spectrum(kern.operator, psd=kern.psd, rank_bound=kern.rank_bound).sigma_max)
        slope = float(np.polyfit(np.log(sizes[1:]), np.log(norms[1:]), 1)[0])
        out[label] = ", ".join(f"n={n}: {v:.4g}" for n, v in zip(sizes, norms)) + \
            f" (growth exponent {slope:.2f})"
    out["rope plane kernel E_m"] = "Schur multiplier norm 1 for every n (PSD, unit diagonal)"
    return {"‖B_n‖₂ growth (numerics spectrum)": "; ".join(f"{k}: {v}" for k, v in out.items())}


def _growth_describe(ex: dict) -> str:
    return (f"n={ex['n']}, alibi slopes={ex['slopes']}, direction={ex['direction']}, "
            f"head {ex['head']} of {ex['n_heads']}, A={fmt(ex['A'])}")


GROWTH = Claim(
    id="additive-growth",
    title="Additive biases grow with n; the multiplicative bound does not",
    statement="A symmetric ALiBi head with slope s has ‖B_n‖₂ ≥ s(n²−1)/3, unbounded in n, "
              "while a RoPE plane kernel E_m satisfies ‖A∘E_m‖₂ ≤ ‖A‖₂ at every n.",
    latex=r"\|B_n\|_2\ge s\,\frac{n^2-1}{3},\qquad \|A\circ E_m\|_2\le\|A\|_2\ \ \forall n",
    source="Gu et al., additive vs multiplicative PE (precise version: new)",
    assumptions=("ALiBi direction symmetric: B_ij = −s|i−j|", "s = the catalogue slope of the head",
                 "E_m from the numerics kernel"),
    strategy=lambda: _growth_inputs("symmetric"),
    check=_growth_all,
    symbolic=_growth_symbolic,
    variants=(Variant("symmetric direction", lambda: _growth_inputs("causal"), check=_growth,
                      note="causal ALiBi keeps only the lower triangle"),),
    describe=_growth_describe,
    reports=_growth_report,
    layers=("numerics", "sympy"),
)

CLAIMS = (WEYL, GROWTH)
