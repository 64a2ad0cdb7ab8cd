"""What does *not* hold for RoPE's logit norm, and what does.

Gu et al. (arXiv 2505.13027) compare the multiplicative logit L_RoPE = Re Σ_m G_m ∘ E_m with the
content-only logit L_NoPE = Q Kᵀ = Re Σ_m G_m (G_m = Q̃_m K̃_m^*, the content Gram of plane m).
One might expect the rotation to only *spread* the content interaction, ‖L_RoPE‖₂ ≤ ‖L_NoPE‖₂;
that is false: planes whose content terms cancel in Q Kᵀ stop cancelling once they rotate at
different frequencies (posenc finds and shrinks a counterexample).  The true statement bounds
each plane separately: ‖L_RoPE‖₂ ≤ Σ_m ‖G_m ∘ E_m‖₂ ≤ Σ_m ‖G_m‖₂, since E_m is PSD with unit
diagonal (the Schur multiplier bound, claim ``schur-multiplier-norm``) and ‖Re M‖₂ ≤ ‖M‖₂.
E_m comes from :mod:`posenc.numerics`.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..claim import NOT_APPLICABLE, Claim, SymbolicResult, Variant, require
from ..strategies import fmt, int_matrix
from ._rope import hadamard_toeplitz_logits

BASES = (10000.0, 100.0, 10.0)


def inputs(min_n: int = 1):
    # Full-size integer matrices, then sliced to (n, d): Hypothesis can shrink n and d without
    # redrawing the entries, so the counterexample it reports is small in size as well as value.
    # The variant draws n >= 2 (at n = 1 the two logits are equal: no counterexample there).
    return st.fixed_dictionaries({
        "n": st.integers(min_n, 5), "d": st.sampled_from((2, 4, 6)),
        "base": st.sampled_from(BASES), "pairing": st.sampled_from(("interleaved", "half")),
        "Q": int_matrix(5, 6), "K": int_matrix(5, 6)}).map(_slice)


def _slice(ex: dict) -> dict:
    n, d = ex["n"], ex["d"]
    return {**ex, "Q": np.asarray(ex["Q"], float)[:n, :d], "K": np.asarray(ex["K"], float)[:n, :d]}


def _norms(ex: dict) -> tuple[float, float, float]:
    Q, K = np.asarray(ex["Q"], float), np.asarray(ex["K"], float)
    L, G, _ = hadamard_toeplitz_logits(Q, K, ex["base"], ex["pairing"])
    rope = float(np.linalg.norm(L, 2))
    nope = float(np.linalg.norm(Q @ K.T, 2))
    planes = float(sum(np.linalg.norm(g, 2) for g in G))
    return rope, nope, planes


def _tol(ex: dict) -> float:
    # Entries are integers <= 3 in magnitude, n, d <= 6: norms <= 6*6*9 ~ 300; float64 SVD is
    # backward stable to ~n eps ‖M‖ ~ 1e-13; 1e-9 (1 + scale) is far below any real violation
    # (integer inputs make violations O(1e-2) or larger).
    return 1e-9 * (1 + float(np.abs(ex["Q"]).sum() * np.abs(ex["K"]).sum()))


def plane_bound(ex: dict) -> None:
    for pairing in ("interleaved", "half"):          # both, on every input
        rope, _, planes = _norms({**ex, "pairing": pairing})
        require(rope <= planes + _tol(ex),
                f"{pairing}: ‖L_RoPE‖₂ = {rope:.6g} > Σ_m ‖G_m‖₂ = {planes:.6g}")


def nope_bound(ex: dict) -> None:
    rope, nope, _ = _norms(ex)
    require(rope <= nope + _tol(ex), f"‖L_RoPE‖₂ = {rope:.6g} > ‖L_NoPE‖₂ = ‖QKᵀ‖₂ = {nope:.6g}")


def describe(ex: dict) -> str:
    return (f"n={ex['n']}, d={ex['d']}, base={fmt(ex['base'])}, pairing={ex['pairing']}, "
            f"Q={fmt(ex['Q'])}, K={fmt(ex['K'])}")


CLAIMS = (
    Claim(
        id="rope-norm-plane-bound",
        title="RoPE logit norm: bounded per plane, not by the NoPE logit",
        statement="For any content Q, K (n×d) and any RoPE base and pairing, "
                  "‖L_RoPE‖₂ ≤ Σ_m ‖G_m‖₂ with G_m = Q̃_m K̃_m^*; the stronger "
                  "‖L_RoPE‖₂ ≤ ‖L_NoPE‖₂ = ‖QKᵀ‖₂ is false.",
        latex=r"\|L_{\mathrm{RoPE}}\|_2\le\sum_m\|G_m\|_2,\qquad "
              r"\|L_{\mathrm{RoPE}}\|_2\le\|QK^\top\|_2\ \text{is false}",
        source="Gu et al., multiplicative PE (precise version: new)",
        assumptions=("Q, K real n×d, d even", "E_m = [e^{iθ_m(i−j)}] from the numerics kernel"),
        strategy=inputs,
        check=plane_bound,
        symbolic=lambda: SymbolicResult(
            NOT_APPLICABLE, "follows from the Schur multiplier bound (claim schur-multiplier-norm, "
            "proved) and the triangle inequality; no separate symbolic proof"),
        variants=(Variant("‖L_RoPE‖₂ ≤ ‖L_NoPE‖₂", lambda: inputs(min_n=2), check=nope_bound,
                          kind="stronger conclusion"),),
        describe=describe,
        layers=("numerics",),
    ),
)
