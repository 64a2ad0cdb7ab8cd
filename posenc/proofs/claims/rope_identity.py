"""RoPE's relative identity and the Hadamard–Toeplitz logit form.

RoPE (Su et al. 2021) as analysed by Gu et al. (arXiv 2505.13027):

1. ``rope-relative-identity``: ⟨R_i q, R_j k⟩ = Re Σ_m q̃_m conj(k̃_m) e^{iθ_m(i−j)} for both
   pairings.  Symbolic: :func:`posenc.theory.rotary.plane_identity_difference` reduces to 0 with
   symbolic angles, positions and coordinates.  Numeric: three independent computations agree on
   drawn inputs -- the torch rotation of :mod:`posenc.empirical` (rotate, then dot), the
   :mod:`posenc.numerics` planes E_m (Re Σ G_m ∘ E_m), and the :mod:`posenc.theory` form compiled
   by ``lambdify``.  Without torch (the light install, no ``posenc[train]``) the rotation is
   the theory form's and the claim says so in its report: the empirical layer is not checked.
   Variant: complexifying with the *other* pairing breaks it (d ≥ 4).
2. ``rope-hadamard-toeplitz``: L = Re Σ_m (Q̃_m K̃_m^*) ∘ E_m with every E_m Hermitian, Toeplitz,
   rank one, PSD, unit diagonal.  Variant: rotating keys with a different frequency than
   queries (the mismatched-columns bug) loses all of that.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
from hypothesis import strategies as st

from ...encodings import RoPE
from ..claim import FAILED, PROVED, Claim, SymbolicResult, Variant, agree, require
from ..strategies import fmt, int_matrix
from ._rope import hadamard_toeplitz_logits, rope_kernel

BASES = (10000.0, 100.0, 10.0)
PAIRINGS = ("interleaved", "half")
OTHER = {"interleaved": "half", "half": "interleaved"}


def _inputs(d_choices=(2, 4, 6)):
    def slice_(ex):
        n, d = ex["n"], ex["d"]
        return {**ex, "Q": np.asarray(ex["Q"], float)[:n, :d], "K": np.asarray(ex["K"], float)[:n, :d]}
    return st.fixed_dictionaries({
        "n": st.integers(1, 5), "d": st.sampled_from(d_choices), "base": st.sampled_from(BASES),
        "pairing": st.sampled_from(PAIRINGS), "Q": int_matrix(5, 6), "K": int_matrix(5, 6)}
    ).map(slice_)


def _describe(ex: dict) -> str:
    return (f"n={ex['n']}, d={ex['d']}, base={ex['base']:g}, pairing={ex['pairing']}, "
            f"Q={fmt(ex['Q'])}, K={fmt(ex['K'])}")


@functools.lru_cache(maxsize=1)
def _has_torch() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except ImportError:
        return False


def _rotated_logits(Q: np.ndarray, K: np.ndarray, base: float, pairing: str) -> np.ndarray:
    """⟨R_i q_i, R_j k_j⟩ by the empirical layer's torch RoPE (rotate, then dot), float64; without
    torch, by the theory form."""
    if not _has_torch():
        return theory_logits(Q, K, base, pairing)
    import torch

    from ...empirical.model.pe.rotary import rope_rotary
    rot = rope_rotary(RoPE(base=base, pairing=pairing), Q.shape[1], 1)
    rq = rot(torch.from_numpy(Q)[None, None])[0, 0]                         # (n, d)
    rk = rot(torch.from_numpy(K)[None, None])[0, 0]
    return (rq @ rk.T).numpy()


@functools.lru_cache(maxsize=64)
def _theory_function(base: float, pairing: str, d: int):
    from ...theory.derive import derive
    return derive(RoPE(base=base, pairing=pairing), head_dim=d, model_dim=2 * d, n_heads=1,
                  prove=False).to_numpy_function()


def theory_logits(Q: np.ndarray, K: np.ndarray, base: float, pairing: str) -> np.ndarray:
    """The theory form, lambdified, with x = [Q | K], W_q = [I | 0], W_k = [0 | I]."""
    n, d = Q.shape
    eye, zero = np.eye(d), np.zeros((d, d))
    values = {"x": np.concatenate([Q, K], axis=1), "W_q": np.concatenate([eye, zero], 1)[None],
              "W_k": np.concatenate([zero, eye], 1)[None]}
    return _theory_function(base, pairing, d)(values, scale=1.0)[0]         # (n, n)


def _tol(ex: dict) -> float:
    # entries |q|,|k| <= 3, d <= 6: logits <= 54; float64 rounding in three different
    # evaluation orders stays below 1e-13; 1e-9 leaves room and is far below any real mismatch
    return 1e-9 * (1 + float(np.abs(ex["Q"]).sum() * np.abs(ex["K"]).sum()))


def _first_diff(A: np.ndarray, B: np.ndarray, tol: float) -> tuple[int, int] | None:
    bad = np.argwhere(~(np.abs(A - B) <= tol))
    return None if bad.size == 0 else tuple(int(v) for v in bad[0])


def _identity_all(ex: dict) -> None:
    # both pairings on every input: a derandomised draw of the pairing could skip one
    for pairing in PAIRINGS:
        _identity({**ex, "pairing": pairing})


def _identity(ex: dict, complex_pairing: str | None = None) -> None:
    Q, K, base, pairing = ex["Q"], ex["K"], ex["base"], ex["pairing"]
    lhs = _rotated_logits(Q, K, base, pairing)
    rhs, _, _ = hadamard_toeplitz_logits(Q, K, base, complex_pairing or pairing)
    tol = _tol(ex)
    at = _first_diff(lhs, rhs, tol)
    require(at is None, lambda:
            f"(i, j) = {at}: ⟨R_i q, R_j k⟩ = {lhs[at]:.6g} "
            f"({'empirical rotation' if _has_torch() else 'theory form'}) but "
            f"Re Σ_m q̃_m conj(k̃_m) e^(iθ_m(i−j)) = {rhs[at]:.6g} (numerics E_m"
            f"{', q̃ with the ' + complex_pairing + ' pairing' if complex_pairing else ''})")
    if complex_pairing is None:
        thy = theory_logits(Q, K, base, pairing)
        at = _first_diff(thy, rhs, tol)
        agree(at is None, lambda:
                f"(i, j) = {at}: theory form gives {thy[at]:.6g}, numerics {rhs[at]:.6g}")


def _identity_symbolic() -> SymbolicResult:
    import sympy as sp

    from ...theory.rotary import plane_identity_difference
    for pairing in PAIRINGS:
        diff = plane_identity_difference(pairing, 4)
        if sp.simplify(diff) != 0:
            return SymbolicResult(FAILED, f"{pairing}: difference reduces to {diff}")
    return SymbolicResult(PROVED, "theory.rotary.plane_identity_difference reduces to 0 for both "
                          "pairings (head dim 4, two planes with independent symbolic θ_m, "
                          "symbolic q, k, i, j); the identity is a sum of identical per-plane terms")


def _rotation_report() -> dict:
    if _has_torch():
        return {"rotation checked": "posenc.empirical's torch RoPE (rotate, then dot)"}
    return {"rotation checked": "the theory form's (torch is not installed: the empirical layer's RoPE is "
                        "not checked; pip install \"posenc[train]\" adds it)"}


IDENTITY = Claim(
    id="rope-relative-identity",
    title="RoPE relative identity (both pairings)",
    statement="For RoPE with either pairing, ⟨R_i q, R_j k⟩ = Re Σ_m q̃_m conj(k̃_m) e^{iθ_m(i−j)}, "
              "q̃_m = q_a + i q_b over the plane (a, b) of the pairing.",
    latex=r"\langle R_i q, R_j k\rangle=\operatorname{Re}\sum_m \tilde q_m\,\overline{\tilde k_m}\,"
          r"e^{i\theta_m(i-j)}",
    source="Su et al. 2021; Gu et al., multiplicative PE",
    assumptions=("q̃_m, k̃_m formed with the pairing the rotation uses",
                 "θ_m = base^(−2m/d) (catalogue)"),
    strategy=_inputs,
    check=_identity_all,
    symbolic=_identity_symbolic,
    variants=(Variant("q̃_m, k̃_m formed with the rotation's pairing", lambda: _inputs((4, 6)),
                      check=lambda ex: _identity(ex, complex_pairing=OTHER[ex["pairing"]]),
                      note="complexify with the other pairing"),),
    describe=_describe,
    reports=_rotation_report,
    layers=("theory", "numerics", "empirical"),
)


# --- claim 2 ----------------------------------------------------------------------------------

def _plane_inputs():
    return st.fixed_dictionaries({
        "n": st.integers(1, 40), "d": st.sampled_from((2, 4, 8, 16)), "m": st.integers(0, 7),
        "base": st.sampled_from(BASES), "pairing": st.sampled_from(PAIRINGS)}).map(
            lambda ex: {**ex, "m": ex["m"] % (ex["d"] // 2)})


def _plane_kernel(ex: dict, mismatched: bool = False) -> np.ndarray:
    kern = rope_kernel(ex["base"], ex["pairing"], ex["n"], ex["d"])
    if not mismatched:
        return kern.plane(ex["m"]).dense()
    # keys rotated with the next plane's frequency: E'_ij = e^{i(θ_m i − θ_{m'} j)}
    m2 = (ex["m"] + 1) % (ex["d"] // 2)
    return np.outer(kern.plane(ex["m"]).column, np.conj(kern.plane(m2).column))


def _plane_properties(E: np.ndarray) -> None:
    n = E.shape[0]
    # unit-modulus float64 entries e^{iθk}, k < 40: each within ~1e-14; eigen/singular values
    # of n <= 40 such matrices within ~n·1e-15·n; 1e-9·n is far from any structural violation.
    tol = 1e-9 * n
    at = _first_diff(E, E.conj().T, tol)
    require(at is None, lambda: f"not Hermitian: E{at} = {fmt(E[at])}, conj(E{at[::-1]}) = "
                                f"{fmt(np.conj(E[at[::-1]]))}")
    at = _first_diff(E[1:, 1:], E[:-1, :-1], tol)
    require(at is None, lambda: f"not Toeplitz: E[{at[0] + 1},{at[1] + 1}] = "
                                f"{fmt(E[at[0] + 1, at[1] + 1])} ≠ E{at} = {fmt(E[at])}")
    require(np.all(np.abs(np.diag(E) - 1) <= tol),
            lambda: f"diagonal {fmt(np.round(np.diag(E), 6))} ≠ 1")
    lam = np.linalg.eigvalsh(E)
    require(lam[0] >= -tol, lambda: f"not PSD: λ_min = {lam[0]:.3g}")
    require(n == 1 or lam[-2] <= tol, lambda: f"rank > 1: second eigenvalue {lam[-2]:.3g}")


def _hadamard(ex: dict) -> None:
    _plane_properties(_plane_kernel(ex))


def _hadamard_symbolic() -> SymbolicResult:
    import sympy as sp

    from ...theory.derive import derive
    theta = sp.Symbol("theta", real=True)
    i, j = sp.symbols("i j", integer=True)
    u = lambda p: sp.exp(sp.I * theta * p)  # noqa: E731
    if sp.simplify(sp.expand_complex(u(i) * sp.conjugate(u(j)) - u(i - j))) != 0:
        return SymbolicResult(FAILED, "e^{iθi} conj(e^{iθj}) ≠ e^{iθ(i−j)}")
    form = derive(RoPE())
    verdicts = [t.toeplitz.status for t in form.terms if t.toeplitz is not None]
    if not verdicts or not all(v in ("toeplitz", "position-free") for v in verdicts):
        return SymbolicResult(FAILED, f"theory's Toeplitz verdicts for rope: {verdicts}")
    return SymbolicResult(PROVED, "E_m = u uᴴ with u_i = e^{iθ_m i} (sympy: e^{iθi}·conj(e^{iθj}) − "
                          "e^{iθ(i−j)} = 0 for real θ), so E_m is Hermitian, rank one, PSD, with "
                          "unit diagonal; theory.derive proves rope's rotary term Toeplitz "
                          "(f(i+t, j+t) ≡ f(i, j))")


HADAMARD = Claim(
    id="rope-hadamard-toeplitz",
    title="Hadamard–Toeplitz form of the RoPE logit matrix",
    statement="The RoPE logit matrix is L = Re Σ_m (Q̃_m K̃_m^*) ∘ E_m with E_m = [e^{iθ_m(i−j)}] "
              "Hermitian, Toeplitz, rank one, PSD, with unit diagonal.",
    latex=r"L=\operatorname{Re}\sum_m(\tilde Q_m\tilde K_m^{*})\circ E_m,\ "
          r"E_m=\bigl[e^{i\theta_m(i-j)}\bigr]=u_mu_m^{*}\succeq0,\ (E_m)_{ii}=1",
    source="Gu et al., multiplicative PE",
    assumptions=("queries and keys rotated with the same θ_m", "E_m from the numerics kernel"),
    strategy=_plane_inputs,
    check=_hadamard,
    symbolic=_hadamard_symbolic,
    variants=(Variant("queries and keys rotated with the same θ_m", _plane_inputs,
                      check=lambda ex: _plane_properties(_plane_kernel(ex, mismatched=True)),
                      note="keys use the next plane's frequency"),),
    describe=lambda ex: (f"n={ex['n']}, d={ex['d']}, plane m={ex['m']}, base={ex['base']:g}, "
                         f"pairing={ex['pairing']}"),
    layers=("theory", "numerics"),
)

CLAIMS = (IDENTITY, HADAMARD)
