"""The full attention logit matrix of one head for given weights, and RoPE's plane form.

This is the numeric anchor for cross-layer checks (a trained model's logits vs
the theory form vs these): everything from the conventions in
:mod:`posenc.encodings`, no 1/sqrt(d) scaling, no softmax, no mask.

``logits(spec, x, wq, wk, *, head=0, n_heads=1, values=None, seed=0,
         wq_rope=None, wk_rope=None) -> (n, n)``
    x (n, D) content input; wq, wk (D, d) this head's projections.  Absolute
    PEs are added to x first (q_i = (x_i + p_i) W_q); RoPE rotates q_i and k_j by
    their positions; biases are added.  MLA: wq/wk give the position-free content
    path, wq_rope/wk_rope (D, rope_dim) the decoupled RoPE path (required).
``rotate(v, theta, pairing="interleaved") -> (n, d)``
    Rotate row p of v by angle p * theta_m in plane m (planes per ``pairing``).
``plane_decomposition(q, k, theta, pairing) -> (G, E)``
    G (planes, n, n) = q~_m conj(k~_m)^T per plane, E (planes, n, n) = [e^{i theta_m (i-j)}],
    so that the rotated logits equal Re sum_m G_m o E_m plus the non-rotary dims.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..encodings import Custom, LearnedAbsolute, MLA, PESpec, RoPE, XPos, as_spec
from ..errors import PosencError
from ..encodings.parts import not_toeplitz, structure, unknown_part
from . import conventions as cv
from .kernels import absolute_table, part_context, part_kernel, xpos_decays
from .operators import check_dense_size


def plane_indices(d_rot: int, pairing: str) -> tuple[np.ndarray, np.ndarray]:
    """Indices (a_m, b_m) of the two dims of plane m among the first d_rot dims."""
    m = np.arange(d_rot // 2)
    if pairing == "interleaved":
        return 2 * m, 2 * m + 1
    if pairing == "half":
        return m, m + d_rot // 2
    raise PosencError(f"pairing must be interleaved or half; got {pairing!r}")


def rotate(v: np.ndarray, theta: np.ndarray, pairing: str = "interleaved") -> np.ndarray:
    """(a, b) -> (a cos - b sin, a sin + b cos) at angle p * theta_m for row p."""
    v = np.asarray(v, dtype=float)                               # (n, d)
    a_idx, b_idx = plane_indices(2 * len(theta), pairing)
    ang = np.arange(v.shape[0])[:, None] * np.asarray(theta)[None, :]   # (n, planes)
    c, s = np.cos(ang), np.sin(ang)
    out = v.copy()
    a, b = v[:, a_idx], v[:, b_idx]
    out[:, a_idx] = a * c - b * s
    out[:, b_idx] = a * s + b * c
    return out


def plane_decomposition(q: np.ndarray, k: np.ndarray, theta: np.ndarray,
                        pairing: str = "interleaved") -> tuple[np.ndarray, np.ndarray]:
    """Per-plane content Grams G_m and kernels E_m of the un-rotated q, k (small n)."""
    n = q.shape[0]
    check_dense_size(n)
    a_idx, b_idx = plane_indices(2 * len(theta), pairing)
    qc = q[:, a_idx] + 1j * q[:, b_idx]                          # (n, planes)
    kc = k[:, a_idx] + 1j * k[:, b_idx]
    g = np.einsum("im,jm->mij", qc, np.conj(kc))                 # (planes, n, n)
    off = np.arange(n)[:, None] - np.arange(n)[None, :]          # i - j
    e = np.exp(1j * np.asarray(theta)[:, None, None] * off[None])
    return g, e


def _check(x: np.ndarray, w: np.ndarray, name: str) -> np.ndarray:
    w = np.asarray(w, dtype=float)
    if w.ndim != 2 or w.shape[0] != x.shape[1]:
        raise PosencError(f"{name} must have shape ({x.shape[1]}, d); got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise PosencError(f"{name} contains NaN or infinity")
    return w


def logits(spec: PESpec | str, x: np.ndarray, wq: np.ndarray, wk: np.ndarray, *, head: int = 0,
           n_heads: int = 1, values: Any = None, seed: int = 0, wq_rope: np.ndarray | None = None,
           wk_rope: np.ndarray | None = None) -> np.ndarray:
    """L_ij = <q_i, k_j> (+ b_ij) for one head; shape (n, n)."""
    spec = as_spec(spec)
    x = np.asarray(x, dtype=float)                               # (n, D)
    if x.ndim != 2 or not np.all(np.isfinite(x)):
        raise PosencError(f"x must be a finite (n, D) array; got shape {x.shape}")
    n, width = x.shape
    check_dense_size(n)
    wq, wk = _check(x, wq, "wq"), _check(x, wk, "wk")
    if wq.shape != wk.shape:
        raise PosencError(f"wq and wk differ in shape: {wq.shape} vs {wk.shape}")
    d = wq.shape[1]

    parts = structure(spec)
    absolute = parts.absolute
    if absolute is not None:
        if absolute.kind not in ("sinusoidal", "learned"):
            raise unknown_part("numerics.logits", absolute, spec)
        table_spec = absolute.spec if absolute.spec is not None else LearnedAbsolute(max_len=n)
        x = x + absolute_table(table_spec, n, width, values, seed)[0]
    q, k = x @ wq, x @ wk                                        # (n, d)
    rotary = parts.rotary
    if rotary is not None:
        rotate_qk = ROTARY_FORMULAS.get(rotary.kind)
        if rotate_qk is None:
            raise unknown_part("numerics.logits", rotary, spec)
        q, k = rotate_qk(rotary.spec, q, k, head, n_heads)
    out = q @ k.T                                                # (n, n)
    if parts.mla is not None:
        mla_path = MLA_FORMULAS.get(parts.mla.kind)
        if mla_path is None:
            raise unknown_part("numerics.logits", parts.mla, spec)
        out = out + mla_path(parts.mla.spec, x, wq_rope, wk_rope)
    if parts.bias is not None:
        ctx = part_context(head, n_heads, d, width, values, seed)
        out = out + part_kernel(parts.bias, spec, n, ctx).dense()
    return out


def _rope(rope: RoPE, q: np.ndarray, k: np.ndarray, head: int, n_heads: int
          ) -> tuple[np.ndarray, np.ndarray]:
    if rope.heads is None or head < min(rope.heads, n_heads):
        theta = cv.rope_frequencies(rope, q.shape[1])
        q, k = rotate(q, theta, rope.pairing), rotate(k, theta, rope.pairing)
        s, r = cv.rope_attention_factor(rope), 2 * theta.size   # scaled RoPE: q, k rotary dims * s
        q[:, :r], k[:, :r] = q[:, :r] * s, k[:, :r] * s
    return q, k


def _frequencies(spec: Custom, q: np.ndarray, k: np.ndarray, head: int, n_heads: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    theta = np.asarray(spec.frequencies)
    if 2 * theta.size > q.shape[1]:
        raise PosencError(f"custom: {theta.size} frequencies need head dim >= {2 * theta.size}")
    return rotate(q, theta), rotate(k, theta)


def _xpos(spec: XPos, q: np.ndarray, k: np.ndarray, head: int, n_heads: int
          ) -> tuple[np.ndarray, np.ndarray]:
    """Rotate every plane (interleaved) by theta_m = base^(-2m/d); plane m of the query at i
    scaled by lambda_m^i, of the key at j by lambda_m^(-j)."""
    d = q.shape[1]
    theta = spec.base ** (-2.0 * np.arange(d // 2) / d)
    lam = xpos_decays(spec, d)
    p = np.arange(q.shape[0], dtype=float)[:, None]
    up, down = np.repeat(lam[None, :] ** p, 2, axis=1), np.repeat(lam[None, :] ** -p, 2, axis=1)
    return rotate(q, theta) * up, rotate(k, theta) * down


#: rotary part kind -> (spec, q, k, head, n_heads) -> rotated (q, k).
ROTARY_FORMULAS = {"rope": _rope, "frequencies": _frequencies, "xpos": _xpos}


def _mla_path(spec: MLA, x: np.ndarray, wq_rope: np.ndarray | None, wk_rope: np.ndarray | None
              ) -> np.ndarray:
    """MLA's decoupled RoPE path logits (the content path is x W_q (x W_k)^T)."""
    if wq_rope is None or wk_rope is None:
        raise PosencError("mla: give wq_rope and wk_rope for the decoupled RoPE path")
    wqr, wkr = _check(x, wq_rope, "wq_rope"), _check(x, wk_rope, "wk_rope")
    r = wqr.shape[1]
    if wkr.shape != wqr.shape or r % 2 or (spec.rope_dim is not None and r != spec.rope_dim):
        raise PosencError(f"mla: wq_rope/wk_rope must be (D, rope_dim) with an even rope_dim"
                          f"{'' if spec.rope_dim is None else f' = {spec.rope_dim}'}; got "
                          f"{wqr.shape}, {wkr.shape}")
    theta = spec.base ** (-2.0 * np.arange(r // 2) / r)      # interleaved pairing
    return rotate(x @ wqr, theta) @ rotate(x @ wkr, theta).T


def _not_toeplitz(spec: MLA, x: np.ndarray, wq_rope: Any, wk_rope: Any) -> np.ndarray:
    """mla:rope=paper_code: not a rotation (one line, posenc.encodings.parts)."""
    raise not_toeplitz(spec)


#: mla part kind -> (spec, x, wq_rope, wk_rope) -> the decoupled path's logits.
MLA_FORMULAS = {"mla": _mla_path, "mla_paper_code": _not_toeplitz}
