"""MLA = a position-free content path + a RoPE path on the decoupled dims.

Multi-head latent attention (DeepSeek-V2, 2024) as analysed by Gu et al. (arXiv 2505.13027):
queries and keys are a content part from the latents, q^C = W_uq W_dq x, k^C = W_uk W_dkv x,
concatenated with a decoupled RoPE part q^R = R_i W_qr W_dq x, k^R = R_j W_kr x.  So

    L_ij = (W_uq W_dq x_i)ᵀ(W_uk W_dkv x_j) + Re Σ_m q̃^R_m conj(k̃^R_m) e^{iθ_m(i−j)}:

the first term carries no position at all (permuting the tokens permutes it), the second is
RoPE's Hadamard–Toeplitz form on rope_dim dims.  Symbolic: ``theory.derive("mla")`` splits the
logit into exactly these terms, proves their sum equals the model computation, and proves the
first position-free and the second Toeplitz.  Numeric: the theory form compiled by ``lambdify``
equals the content path (numpy matmuls) plus Re Σ G_m ∘ E_m with E_m and θ_m from
:mod:`posenc.numerics` (``kernel(mla).plane(m)``), on drawn integer weights.
"""

from __future__ import annotations

import functools

import numpy as np
from hypothesis import strategies as st

from ...encodings import MLA
from ..claim import FAILED, PROVED, Claim, SymbolicResult, agree, require
from ..strategies import fmt, int_matrix
from ._rope import complexify
from ...numerics.kernels import kernel

D = 4            # head dim = model dim = latent widths; rope_dim 2 (one plane), per the catalogue


@functools.lru_cache(maxsize=4)
def _form(n_heads: int = 1):
    from ...theory.derive import derive
    return derive(MLA(), head_dim=D, model_dim=D, n_heads=n_heads, prove=False)


@functools.lru_cache(maxsize=4)
def _compiled(terms: tuple | None):
    return _form().to_numpy_function(terms=list(terms) if terms else None)


def _shapes() -> dict:
    return _form().inputs()


def _inputs():
    def build(_):
        shapes = {k: v for k, v in _shapes().items() if k != "x"}
        mats = {k: int_matrix(int(np.prod(v[:-1])), v[-1], bound=2) for k, v in shapes.items()}
        return st.fixed_dictionaries({"n": st.integers(1, 6), "x": int_matrix(6, D, bound=2), **mats})
    return st.just(None).flatmap(build).map(_arrays)


def _arrays(ex: dict) -> dict:
    out = {"n": ex["n"]}
    for k, shape in _shapes().items():
        arr = np.asarray(ex[k], float)
        out[k] = arr[:ex["n"]] if k == "x" else arr.reshape(shape)
    return out


def _numeric_paths(ex: dict) -> tuple[np.ndarray, np.ndarray]:
    """(content path, RoPE path) logits (n, n) from numpy matmuls and numerics' planes E_m."""
    x = ex["x"]                                                            # (n, D)
    qc = x @ ex["W_dq"].T @ ex["W_uq"][0].T                                # (n, d)
    kc = x @ ex["W_dkv"].T @ ex["W_uk"][0].T
    qr = x @ ex["W_dq"].T @ ex["W_qr"][0].T                                # (n, r)
    kr = x @ (ex["W_kr"] if ex["W_kr"].ndim == 2 else ex["W_kr"][0]).T
    r = qr.shape[1]
    kern = kernel(MLA(), ex["n"], head_dim=D, n_heads=1)
    require(2 * len(kern.frequencies) == r,
            f"numerics' MLA RoPE path has {2 * len(kern.frequencies)} dims, theory's {r}")
    Qc, Kc = complexify(qr, "interleaved", r), complexify(kr, "interleaved", r)
    rope = sum(np.real(np.outer(Qc[:, m], np.conj(Kc[:, m])) * kern.plane(m).dense())
               for m in range(r // 2))
    return qc @ kc.T, rope


def _decomposition(ex: dict) -> None:
    values = {k: v for k, v in ex.items() if k != "n"}
    form = _form()
    names = [t.name for t in form.terms]
    content_name = next(t for t in names if "content path" in t)
    total = _compiled(None)(values, scale=1.0)[0]
    content_thy = _compiled((content_name,))(values, scale=1.0)[0]
    content, rope = _numeric_paths(ex)
    # integer weights <= 2, D = 4: entries <= ~1e4; float64 error ~1e-12 relative
    tol = 1e-9 * (1 + np.abs(total).max())
    agree(np.allclose(content_thy, content, atol=tol, rtol=0),
          lambda: f"content path: theory {fmt(content_thy)} vs numerics {fmt(content)}")
    require(np.allclose(total, content + rope, atol=tol, rtol=0),
            lambda: f"L = {fmt(total)} but content + RoPE path = {fmt(content + rope)}")
    # position-free: reversing the token order reverses the content path's matrix exactly
    rev = {**values, "x": values["x"][::-1].copy()}
    content_rev = _compiled((content_name,))(rev, scale=1.0)[0]
    require(np.allclose(content_rev, content_thy[::-1, ::-1], atol=tol, rtol=0),
            "the content path changes when the tokens move: it carries position")


def _symbolic() -> SymbolicResult:
    from ...theory.derive import derive

    form = derive(MLA())
    verdicts = {t.name: t.toeplitz.status for t in form.terms}
    content = [v for k, v in verdicts.items() if "content path" in k]
    rotary = [v for k, v in verdicts.items() if "rotary path" in k]
    ok = (content == ["position-free"] and rotary == ["toeplitz"]
          and all(form.analysis.decomposition_proved))
    if not ok:
        return SymbolicResult(FAILED, f"theory verdicts {verdicts}, decomposition "
                              f"{form.analysis.decomposition_proved}")
    return SymbolicResult(PROVED, "theory.derive(mla): sum of the content-path and rotary-path "
                          "terms = model computation (proved for every head); content path "
                          "position-free, rotary path Toeplitz (proved)")


CLAIMS = (
    Claim(
        id="mla-decomposition",
        title="MLA = position-free content path + decoupled RoPE path",
        statement="The MLA logit is (W_uq W_dq x_i)ᵀ(W_uk W_dkv x_j) + Re Σ_m q̃ᴿ_m conj(k̃ᴿ_m) "
                  "e^{iθ_m(i−j)}: a content path without position plus RoPE on the decoupled "
                  "rope_dim dims.",
        latex=r"L_{ij}=(W_{uq}W_{dq}x_i)^\top(W_{uk}W_{dkv}x_j)+\operatorname{Re}\sum_m"
              r"\tilde q^R_m\overline{\tilde k^R_m}e^{i\theta_m(i-j)}",
        source="DeepSeek-V2 (2024); Gu et al., MLA mitigation",
        assumptions=("catalogue MLA (no absolute embedding), head dim 4, rope_dim 2",
                     "weights and content any real (drawn as small integers)"),
        strategy=_inputs,
        check=_decomposition,
        symbolic=_symbolic,
        describe=lambda ex: ", ".join(f"{k}={fmt(v)}" for k, v in ex.items()),
        layers=("theory", "numerics"),
    ),
)
