"""Layer-wise amplification of the head margin, Gu et al. Thm. 6.1.

The paper (arXiv 2505.13027): under Jacobian-stability assumptions the margin between the
dominant head and the runner-up grows geometrically from deep to shallow layers,
Margin_l ≥ Margin_L ∏_{k=l}^{L−1} γ_k with γ_k > 1.  Its assumptions are not public; posenc
states this version.

**Model.** Layers 1 (shallowest) .. L (deepest), H heads each.  s_l ∈ R^H is the per-head signal
of layer l (e.g. the positional gradient signal of :mod:`posenc.empirical.analysis.dynamics`); it reaches
layer k from layer k+1 through the head-to-head transfer matrix M_k (the backward Jacobian
restricted to the heads' directions): s_k = M_k s_{k+1}.  Margin(s) = s_(1) − s_(2), the top
value minus the runner-up.  Heads are numbered so that M_k's "own-head" part is diagonal (a
matching of heads across layers is a relabelling).

**Assumptions (Jacobian stability, made precise).** For every k:
(A1) M_k = γ_k I + N_k with N_k ≥ 0 entrywise and s_L ≥ 0 (signals keep their sign);
(A2) top-row dominance: the row of N_k of the head t leading s_L dominates every other row
     entrywise (the leading head receives at least as much from every upstream head);
(A3) γ_k > 1.

**Theorem.** Then t leads every layer and Margin_l ≥ Margin_L ∏_{k=l}^{L−1} γ_k; with
Margin_L > 0 the margin grows strictly towards the shallow layers.
Proof: (M s)_t − (M s)_h = γ (s_t − s_h) + Σ_j (N_tj − N_hj) s_j ≥ γ (s_t − s_h) ≥ γ Margin(s)
for h ≠ t, by (A1)-(A2); M s ≥ 0 again, so induct from L down to l.

What the assumptions do (the paper's own ones for Thm. 6.1 are not in its public summaries, as
we read them): γ_k > 1 alone does not give the bound -- without (A2) the
runner-up can be fed more than the leader and overtake it, and without (A1) a negative upstream
signal can eat the margin (counterexamples below); without (A3) the bound holds but the margin
can shrink (posenc checks that the bound itself still holds there: it is not a counterexample).
The trained-model counterpart, γ̂_k = Margin_k / Margin_{k+1}, is measured by
``posenc dynamics``.  Arithmetic is exact (fractions), so no tolerance is involved.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import strategies as st

from ..claim import PROVED, Claim, SymbolicResult, Variant, require


def margin(s: list) -> Fraction:
    v = sorted(s, reverse=True)
    return v[0] - v[1]


def propagate(ex: dict) -> list[list[Fraction]]:
    """Signals of layers L, L−1, ..., 1 (deepest first)."""
    out = [list(ex["s"])]
    for gamma, N in zip(ex["gammas"], ex["N"]):   # k = L−1 down to 1
        s = out[-1]
        H = len(s)
        out.append([gamma * s[h] + sum(N[h][j] * s[j] for j in range(H)) for h in range(H)])
    return out


def amplification(ex: dict, strict: bool = True) -> None:
    """The product bound on every layer; with ``strict`` also strict growth Margin_1 > Margin_L."""
    layers = propagate(ex)
    m_deep = margin(layers[0])
    bound = m_deep
    for depth, (s, gamma) in enumerate(zip(layers[1:], ex["gammas"]), start=1):
        bound *= gamma
        require(margin(s) >= bound, f"Margin at {depth} layer(s) above the deepest = "
                                    f"{float(margin(s)):.6g} < Margin_L ∏γ = {float(bound):.6g}")
    if strict and m_deep > 0:
        require(margin(layers[-1]) > m_deep, f"Margin_1 = {float(margin(layers[-1])):.6g} ≤ "
                                             f"Margin_L = {float(m_deep):.6g}: no amplification")


# --- inputs ------------------------------------------------------------------------------------

def _fed_most(N: list[list[int]], head: int, extra: list[int]) -> list[list[int]]:
    """Row ``head`` := entrywise max over the rows + extra (>= 0): that head is fed most."""
    H = len(N)
    out = [list(r) for r in N]
    out[head] = [max(N[h][j] for h in range(H)) + extra[j] for j in range(H)]
    return out


def inputs(gamma_above_one: bool = True, dominant: bool = True, signs: bool = False):
    """The theorem's inputs; each flag drops one assumption where dropping it bites.

    ``dominant=False``: random rows of N_k (no dominance), the leader's signal s_t ≥ 1 and the
    runner-up fed 1 more from the leader's column in every layer; ``signs=True``: the last
    lowest head made negative, the leader fed at least 1 more from it than any other head.  Each
    is a region of the inputs that break (A2) resp. (A1); drawn anywhere in those, the search
    missed the counterexample at 40 examples (CI's bound) in a few runs of 200 (once in CI).
    """
    def build(dims):
        L, H = dims
        lo = -5 if signs else 0
        row = st.tuples(*[st.integers(0, 3)] * H)
        N = st.tuples(*[st.tuples(*[row] * H)] * (L - 1))
        extra = st.tuples(*[row] * (L - 1))
        return st.fixed_dictionaries({
            "s": st.tuples(*[st.integers(lo, 5)] * H),
            "g": st.tuples(*[st.integers(1, 4)] * (L - 1)),
            "N": N,
            "extra": extra}).map(
                lambda d: _assemble(d, gamma_above_one, dominant, signs))
    return st.tuples(st.integers(2, 4), st.integers(2, 4)).flatmap(build)


def _leader(s: list) -> int:
    return max(range(len(s)), key=lambda h: (s[h], -h))


def _assemble(d: dict, gamma_above_one: bool, dominant: bool, signs: bool = False) -> dict:
    s = [Fraction(x) for x in d["s"]]
    extra = [list(e) for e in d["extra"]]                         # per layer: H entries
    if signs:                       # a negative head, ties broken to the last (never the leader)
        j = min(range(len(s)), key=lambda h: (s[h], -h))
        s[j] = min(s[j], -1 - s[j])
        for e in extra:
            e[j] += 1
    t = _leader(s)
    if not dominant:                # random rows; the runner-up gets 1 more from the leader
        s[t] = max(s[t], Fraction(1))
        r = max((h for h in range(len(s)) if h != t), key=lambda h: (s[h], -h))
        N = [[list(row) for row in n] for n in d["N"]]
        for n in N:
            n[r][t] += 1
    else:
        N = [_fed_most(n, t, e) for n, e in zip(d["N"], extra)]
    gammas = [1 + Fraction(g, 4) if gamma_above_one else Fraction(g, 4) for g in d["g"]]
    return {"s": s, "gammas": gammas, "N": [[[Fraction(x) for x in r] for r in n] for n in N]}


def describe(ex: dict) -> str:
    f = lambda x: str(x) if x.denominator != 1 else str(x.numerator)  # noqa: E731
    mats = "; ".join("[" + ", ".join("[" + ", ".join(f(x) for x in r) + "]" for r in n) + "]"
                     for n in ex["N"])
    return (f"s_L = [{', '.join(f(x) for x in ex['s'])}], γ (deep → shallow) = "
            f"[{', '.join(f(g) for g in ex['gammas'])}], N = {mats}")


def _symbolic() -> SymbolicResult:
    import sympy as sp

    H = 3
    g = sp.Symbol("gamma", positive=True)
    s = sp.symbols("s0:3", nonnegative=True)
    Nh = sp.symbols("n0:3", nonnegative=True)        # row of a non-leading head h
    D = sp.symbols("d0:3", nonnegative=True)         # row t = row h + D (dominance)
    Nt = [Nh[j] + D[j] for j in range(H)]
    lead = g * s[0] + sum(Nt[j] * s[j] for j in range(H))   # t = 0
    other = g * s[1] + sum(Nh[j] * s[j] for j in range(H))  # h = 1
    excess = sp.expand(lead - other - g * (s[0] - s[1]))
    ok = excess == sp.expand(sum(D[j] * s[j] for j in range(H))) and excess.is_nonnegative
    if not ok:
        return SymbolicResult("failed", "(Ms)_t − (Ms)_h − γ(s_t − s_h) is not Σ_j Δ_j s_j ≥ 0")
    return SymbolicResult(PROVED, "sympy: (Ms)_t − (Ms)_h − γ(s_t − s_h) = Σ_j Δ_j s_j with "
                          "Δ = N_t − N_h ≥ 0 and s ≥ 0, hence ≥ 0 (H = 3 symbolic; every pair "
                          "(t, h) is this case); the product bound follows by induction over k")


CLAIMS = (
    Claim(
        id="margin-amplification",
        title="Head margin grows geometrically towards shallow layers",
        statement="If s_k = M_k s_{k+1} with M_k = γ_k I + N_k, N_k ≥ 0, s_L ≥ 0, the leading "
                  "head's row of N_k dominating every other row, and γ_k > 1, then "
                  "Margin_l ≥ Margin_L ∏_{k=l}^{L−1} γ_k and the margin grows strictly from "
                  "deep to shallow; for 0 < γ_k ≤ 1 the bound still holds (without growth).  "
                  "This is posenc's precise version: it needs dominance and non-negative "
                  "signals besides γ_k > 1 (each dropped assumption has a counterexample "
                  "below).  The paper's own assumptions for Thm. 6.1 are not in its public "
                  "summaries, so this does not say that the paper's theorem is false.",
        latex=r"M_k=\gamma_kI+N_k,\ N_k\ge0,\ (N_k)_{t\cdot}\ge(N_k)_{h\cdot},\ \gamma_k>1"
              r"\ \Rightarrow\ \mathrm{Margin}_l\ge\mathrm{Margin}_L\prod_{k=l}^{L-1}\gamma_k",
        source="Gu et al., Thm. 6.1 (precise version: new)",
        assumptions=("M_k = γ_k I + N_k, N_k ≥ 0 and s_L ≥ 0",
                     "top-row dominance of N_k for the leading head", "γ_k > 1"),
        strategy=inputs,
        check=amplification,
        symbolic=_symbolic,
        describe=describe,
        variants=(
            Variant("γ_k > 1", lambda: inputs(gamma_above_one=False),
                    check=lambda ex: amplification(ex, strict=False), expect_counterexample=False,
                    note="for 0 < γ_k ≤ 1 the product bound still holds (the margin may then "
                         "shrink): the bound needs only γ_k ≥ 0, strict growth needs "
                         "γ_k > 1"),
            Variant("top-row dominance", lambda: inputs(dominant=False)),
            Variant("s_L ≥ 0 (signed signals)", lambda: inputs(signs=True)),
        ),
        layers=("sympy",),
    ),
)
