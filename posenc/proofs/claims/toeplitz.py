"""Which PEs put a Toeplitz matrix into the logits, and which do not.

Gu et al. (arXiv 2505.13027) describe every PE by the Toeplitz matrices it adds or multiplies
into the attention logits.  posenc states it per catalogue entry:

* the positional part of NoPE, ALiBi (both directions), T5 and per-offset biases, custom
  kernels and frequencies, RoPE (any pairing, p-RoPE) and MLA's RoPE path is Toeplitz;
* the sinusoidal position-position term p_iᵀ W_qᵀW_k p_j is Toeplitz when W_qᵀW_k commutes with
  the plane rotations (blocks [[a_m, −b_m], [b_m, a_m]]; W_qᵀW_k = I is the case a_m = 1, b_m = 0)
  and *not* for a generic W_qᵀW_k (variant: a counterexample is found);
* the learned absolute PE's P Pᵀ is not Toeplitz (variant).

Symbolic: the verdicts of :func:`posenc.theory.derive` (Toeplitz proved by the shift i→i+t,
j→j+t, or a witness).  Numeric: the :mod:`posenc.numerics` kernels, and for the additive terms
the theory form compiled by ``lambdify`` must equal the numerics matrix (same table values).
"""

from __future__ import annotations

import functools

import numpy as np
from hypothesis import strategies as st

from ...encodings import LearnedAbsolute, parse_spec
from ..claim import FAILED, PROVED, Claim, SymbolicResult, Variant, agree, require
from ..strategies import fmt, int_matrix

TOEPLITZ_SPECS = ("nope", "alibi", "alibi:direction=causal,slopes=exp", "relative_bias",
                  "relative_bias:mode=table,max_distance=3", "custom:kernel=exp(-abs(k)/2)",
                  "custom:kernel=max(-abs(k),-2)", "rope", "rope:pairing=half,base=100",
                  "rope:keep=0.5", "custom:frequencies=1;0.1", "mla")
SINUSOIDAL = "sinusoidal (W commutes with rotations)"
HEADS = (1, 3, 6, 8)      # bias head counts: powers of two and not (ALiBi's press rule)
D = 4                     # model width of the sinusoidal cases: planes ω_0 = 1, ω_1 = base^(-1/2)


def _commuting(ab) -> np.ndarray:
    """blockdiag([[a_m, −b_m], [b_m, a_m]]) from integer pairs (a_m, b_m)."""
    W = np.zeros((D, D))
    for m, (a, b) in enumerate(ab):
        W[2 * m:2 * m + 2, 2 * m:2 * m + 2] = [[a, -b], [b, a]]
    return W


def _inputs():
    # Every case is checked on every drawn input (a derandomised draw of the case would leave
    # some cases unchecked in the ci profile); n, head count, table values and W are drawn.
    return st.fixed_dictionaries({
        "n": st.integers(1, 10), "n_heads": st.sampled_from(HEADS),
        "values": st.lists(st.integers(-3, 3), min_size=32, max_size=32),
        "W": st.tuples(*[st.tuples(st.integers(-3, 3), st.integers(-3, 3))] * (D // 2))}
    ).map(lambda ex: {**ex, "W": _commuting(ex["W"])})


def _generic_inputs():
    return st.fixed_dictionaries({"case": st.just("sinusoidal (generic W)"),
                                  "n": st.integers(1, 10), "W": int_matrix(D, D)}).map(
        lambda ex: {**ex, "W": np.asarray(ex["W"], float)})


def _learned_inputs():
    return st.fixed_dictionaries({"case": st.just("learned_absolute"), "n": st.integers(1, 10),
                                  "P": int_matrix(10, 2)})


@functools.lru_cache(maxsize=64)
def _theory_fn(text: str, heads: int, dim: int):
    from ...theory.derive import derive
    return derive(text, head_dim=dim, model_dim=dim, n_heads=heads, prove=False).to_numpy_function()


def _theory_position_term(text: str, n: int, Wq: np.ndarray, Wk: np.ndarray, P=None) -> np.ndarray:
    """The theory logit with content x = 0: only position terms remain; (n, n)."""
    values = {"x": np.zeros((n, D)), "W_q": Wq[None], "W_k": Wk[None]}
    if P is not None:
        values["P"] = P
    return _theory_fn(text, 1, D)(values, scale=1.0)[0]


def _positional_matrix(ex: dict) -> np.ndarray:
    """The numerics matrix of the case, checked against the theory form where it is additive."""
    from ...numerics.conventions import sinusoidal_table
    from ...numerics.kernels import kernel

    n, case = ex["n"], ex["case"]
    if case.startswith("sinusoidal"):
        P = sinusoidal_table(n, D, 10000.0)                                 # (n, D)
        T = P @ ex["W"] @ P.T
        thy = _theory_position_term("sinusoidal", n, np.eye(D), ex["W"])
    elif case == "learned_absolute":
        P = np.asarray(ex["P"], float)[:n]                                  # (n, 2)
        T = kernel(LearnedAbsolute(max_len=10), n, values=P, n_heads=1).dense()
        Pd = np.zeros((10, D))
        Pd[:, :2] = np.asarray(ex["P"], float)
        thy = _theory_position_term("learned_absolute:max_len=10", n, np.eye(D), np.eye(D), Pd)
    else:
        spec = parse_spec(case)
        H = ex.get("n_heads", 1)
        mode = getattr(spec, "mode", None)
        size = (spec.num_buckets if mode == "t5" else 2 * spec.max_distance + 1 if mode == "table"
                else 0)
        # one table row per head: the drawn values shifted by the head index
        table = (np.asarray(ex["values"][:size], float)[None, :] + np.arange(H)[:, None]
                 if size else None)                                         # (H, size)
        kerns = [kernel(spec, n, head=h, n_heads=H, head_dim=8, values=table) for h in range(H)]
        require(all(k.toeplitz for k in kerns), f"numerics does not return a Toeplitz operator "
                                                f"for {case}")
        T = np.stack([k.dense().real for k in kerns])                      # (H, n, n)
        if kerns[0].kind != "bias":
            return T
        vals = {"x": np.zeros((n, D)), "W_q": np.zeros((H, D, D)), "W_k": np.zeros((H, D, D))}
        if table is not None:
            vals["bias"] = table
        thy = _theory_fn(case, H, D)(vals, scale=1.0)                       # (H, n, n)
    # float64 evaluations of the same closed forms in two orders: ~1e-13 on entries <= ~50
    agree(np.allclose(thy, T, rtol=1e-9, atol=1e-9),
          lambda: f"theory form and numerics differ for {case}: max |Δ| = "
                  f"{np.abs(thy - T).max():.3g}")
    return T


def _one_case(ex: dict) -> None:
    T = _positional_matrix(ex)
    T = T if T.ndim == 3 else T[None]                                       # (H, n, n)
    bad = np.argwhere(~np.isclose(T[:, 1:, 1:], T[:, :-1, :-1], rtol=1e-9, atol=1e-9))
    require(bad.size == 0, lambda: (
        f"{ex['case']}: head {bad[0][0]}: T[{bad[0][1] + 1},{bad[0][2] + 1}] = "
        f"{T[bad[0][0], bad[0][1] + 1, bad[0][2] + 1]:.6g} ≠ T[{bad[0][1]},{bad[0][2]}] = "
        f"{T[bad[0][0], bad[0][1], bad[0][2]]:.6g}"))


def _toeplitz(ex: dict) -> None:
    for case in TOEPLITZ_SPECS + (SINUSOIDAL,):
        _one_case({**ex, "case": case})


def _variant(ex: dict) -> None:
    _one_case(ex)


def _symbolic() -> SymbolicResult:
    from ...theory.derive import derive

    problems, proved = [], 0
    for text in TOEPLITZ_SPECS:
        form = derive(text)
        for t in form.terms:
            if t.toeplitz is None or not t.toeplitz.is_toeplitz:
                problems.append(f"{text}: term {t.name} is {t.toeplitz and t.toeplitz.status}")
            else:
                proved += 1
    sin = derive("sinusoidal")
    cases = {c.assumption: c for c in sin.analysis.special_cases}
    if not cases or not all(c.proved and c.toeplitz.is_toeplitz for c in cases.values()):
        problems.append("sinusoidal: special cases (W = I, commuting W) not proved Toeplitz")
    generic = [t for t in sin.terms if t.kind == "position-position"]
    if not generic or any(t.toeplitz.status != "not-toeplitz" for t in generic):
        problems.append("sinusoidal: generic position-position term not shown non-Toeplitz")
    learned = [t for t in derive("learned_absolute").terms if t.kind == "position-position"]
    if not learned or any(t.toeplitz.status != "not-toeplitz" for t in learned):
        problems.append("learned_absolute: position-position term not shown non-Toeplitz")
    if problems:
        return SymbolicResult(FAILED, "; ".join(problems))
    return SymbolicResult(PROVED, f"theory.derive proves {proved} terms of {len(TOEPLITZ_SPECS)} "
                          "relative PEs Toeplitz (f(i+t, j+t) ≡ f(i, j)); for sinusoidal the "
                          "W = I and commuting-W cases are proved Toeplitz and the generic "
                          "position-position term has a non-Toeplitz witness, as has learned "
                          "absolute's")


def _describe(ex: dict) -> str:
    parts = [ex.get("case", "every case"), f"n={ex['n']}"]
    if "n_heads" in ex:
        parts.append(f"n_heads={ex['n_heads']}")
    if ex.get("W") is not None:
        parts.append(f"W_qᵀW_k={fmt(ex['W'])}")
    if ex.get("P") is not None:
        parts.append(f"P={fmt(np.asarray(ex['P'])[:ex['n']])}")
    if "values" in ex:
        parts.append(f"table values={fmt(ex['values'])}")
    return ", ".join(parts)


CLAIMS = (
    Claim(
        id="toeplitz-structure",
        title="Toeplitz positional matrices, and where they stop being Toeplitz",
        statement="The positional matrix of every relative PE of the catalogue (NoPE, ALiBi, T5 "
                  "and table biases, custom kernels/frequencies, RoPE, MLA's RoPE path) is "
                  "Toeplitz, and so is the sinusoidal term P W Pᵀ when W = W_qᵀW_k commutes with "
                  "the plane rotations; for a generic W, and for a learned absolute table, it is "
                  "not.",
        latex=r"T_{i+t,\,j+t}=T_{ij}\ \ \forall t;\qquad P\,W\,P^\top\ \text{Toeplitz if }"
              r"W=\operatorname{blockdiag}\begin{psmallmatrix}a_m&-b_m\\b_m&a_m\end{psmallmatrix}",
        source="Gu et al., unified Toeplitz view of PEs",
        assumptions=("the PE is relative, or sinusoidal with W_qᵀW_k commuting with the "
                     "rotations (W = I included)", "learned values: any (T5 / table)"),
        strategy=_inputs,
        check=_toeplitz,
        symbolic=_symbolic,
        variants=(Variant("W_qᵀW_k commutes with the rotations", _generic_inputs, check=_variant,
                          note="sinusoidal with a generic W"),
                  Variant("the PE is relative", _learned_inputs, check=_variant,
                          note="learned absolute table P, matrix P Pᵀ")),
        describe=_describe,
        layers=("theory", "numerics"),
    ),
)
