"""Multi-head attention with every catalogue PE, hook points and a per-head ablation gate.

Scores for head h, query i, key j (what ``hook_attn_scores`` shows):

    s[h, i, j] = <rot_i(q_h(x_i)), rot_j(k_h(y_j))> / sqrt(d_qk) + B[h, i, j] + M[i, j]

with x the layer-normed query input (``hook_q_in``), y the layer-normed key /
value input (``hook_kv_in``: the same as x, or the normed input embeddings when
keys and values come from the input; in paper-code mode the raw input embeddings,
as the paper's code), ``q_h = W_q[h] x``, ``k_h = W_k[h] y`` (no projection
bias; with ``qkv_bias``, as the paper's code, plus one), ``rot_p`` the RoPE rotation at
position p (identity without RoPE), B the PE bias and M the padding / causal
mask (0 or -inf).  The kernel (explicit softmax(QK^T/sqrt(d) + B + M) V or
``torch.nn.functional.scaled_dot_product_attention``) is chosen by device and
head dim in :mod:`.attention_kernel`; the explicit one always when ``hook_attn_scores``
or ``hook_pattern`` has a hook attached.  Q, K, V come from one fused
projection ``qkv`` (rows W_q, W_k, W_v).

Hook points follow TransformerLens (names, layouts, order):

=====================  ==========================================  ===============================
hook                   what                                        layout
=====================  ==========================================  ===============================
``hook_q``, ``hook_k``  queries / keys BEFORE the rotation           (batch, pos, head_index, d_qk)
``hook_v``             values                                      (batch, pos, head_index, d_head)
``hook_rot_q``/``_k``  queries / keys after RoPE (rotary PEs only)  (batch, pos, head_index, d_qk)
``hook_attn_scores``   s above (pre-softmax, scaled, bias, mask)   (batch, head_index, q_pos, k_pos)
``hook_pattern``       softmax(s)                                  (batch, head_index, q_pos, k_pos)
``hook_z``             per-head output, before ``W_O``              (batch, pos, head_index, d_head)
``hook_q_in``          x (ours, not TransformerLens's)             (batch, pos, d_model)
``hook_kv_in``         y (ours)                                    (batch, pos, d_model)
=====================  ==========================================  ===============================

For MLA, d_qk = head_dim + rope_dim: q = [content ; decoupled RoPE part]
(``hook_q`` before, ``hook_rot_q`` after the rotation of the RoPE part).

A :class:`HeadAblation` at a layer replaces heads right after ``hook_z``:
with gate g (variants, heads) and replacement r, variant v of example b gets
``z' = g[v, h] z + (1 - g[v, h]) r``; the batch grows to variants x batch
(variant-major), so the single-head ablations of one layer run as one pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from .hooks import HookPoint, run_hook
from .attention_kernel import ScoreMask, explicit_attention, use_sdpa


@dataclass
class HeadAblation:
    """Replace heads of ``layer`` at hook_z.

    ``gate`` (variants, heads): 1 keeps a head, 0 replaces it.  ``replacement``:
    None (zeros), (seq, heads, head_dim) (e.g. a data-set mean) or
    (batch, seq, heads, head_dim) (e.g. resampled from other examples) -- the
    layout of ``hook_z``.
    """

    layer: int
    gate: torch.Tensor
    replacement: Optional[torch.Tensor] = None

    @property
    def n_variants(self) -> int:
        return int(self.gate.shape[0])

    def apply(self, z: torch.Tensor) -> torch.Tensor:
        """(batch, T, H, dh) -> (variants * batch, T, H, dh)."""
        B = z.shape[0]
        g = self.gate.to(z.dtype)[:, None, None, :, None]  # (V, 1, 1, H, 1)
        out = g * z[None]
        if self.replacement is not None:
            r = self.replacement.to(z.dtype)
            r = r[None, None] if r.dim() == 3 else r[None]  # (1, 1 or B, T, H, dh)
            out = out + (1 - g) * r
        return out.reshape(self.n_variants * B, *z.shape[1:])


def heads_last(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, d) <-> (B, T, H, d): a view (the hook layout vs the kernel layout)."""
    return x.transpose(1, 2)


class AttentionBase(nn.Module):
    """Hooks, the attention kernel, the ablation gate and the output projection."""

    def __init__(self, d_model: int, n_heads: int, dropout: float, bias: Optional[nn.Module],
                 rotary_hooks: bool = False, out_bias: bool = True):
        super().__init__()
        self.d_model, self.n_heads = d_model, n_heads
        self.head_dim = d_model // n_heads
        self.dropout = dropout
        self.bias = bias
        self.out = nn.Linear(n_heads * self.head_dim, d_model, bias=out_bias)
        names = ["hook_q_in", "hook_kv_in", "hook_q", "hook_k", "hook_v"]
        if rotary_hooks:  # as TransformerLens: only attention with a rotation has them
            names += ["hook_rot_q", "hook_rot_k"]
        for name in names + ["hook_attn_scores", "hook_pattern", "hook_z"]:
            setattr(self, name, HookPoint())

    def qkv_hooks(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """hook_q / hook_k / hook_v on (B, H, T, d) tensors, shown as (B, T, H, d)."""
        out = []
        for point, x in ((self.hook_q, q), (self.hook_k, k), (self.hook_v, v)):
            out.append(heads_last(point(heads_last(x))) if point.fns else x)
        return out

    def rot_hooks(self, q: torch.Tensor, k: torch.Tensor):
        if self.hook_rot_q.fns:
            q = heads_last(self.hook_rot_q(heads_last(q)))
        if self.hook_rot_k.fns:
            k = heads_last(self.hook_rot_k(heads_last(k)))
        return q, k

    def positional_bias(self, seq: int, offset: int = 0,
                        dtype: torch.dtype = torch.float32) -> Optional[torch.Tensor]:
        """The PE bias this layer adds to the scores: (H or 1, seq, seq), or None."""
        return None if self.bias is None else self.bias(seq, offset, dtype)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: ScoreMask,
               bias: Optional[torch.Tensor]) -> torch.Tensor:
        """q, k (B, H, T, d_qk), v (B, H, T, dh) -> z (B, H, T, dh)."""
        p = self.dropout if self.training else 0.0
        hooked = self.hook_attn_scores.active or self.hook_pattern.active
        if not hooked and use_sdpa(q.device, q.shape[-1]):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.additive(bias),
                                                  dropout_p=p)
        return explicit_attention(q, k, v, mask, bias, p,
                                  self.hook_attn_scores if self.hook_attn_scores.active else None,
                                  self.hook_pattern if self.hook_pattern.active else None)

    def forward(self, x: torch.Tensor, kv: torch.Tensor, mask: ScoreMask, offset: int = 0,
                ablation: Optional[HeadAblation] = None) -> torch.Tensor:
        """x (B, T, D) normed query input; kv (B or fewer, T, D) normed key/value input ->
        (B', T, D) (B' = variants * B under an ablation): W_O of :meth:`mix`."""
        return self.out(self.mix(x, kv, mask, offset, ablation))

    def mix(self, x: torch.Tensor, kv: torch.Tensor, mask: ScoreMask, offset: int,
            ablation: Optional[HeadAblation]) -> torch.Tensor:
        """The heads' outputs before W_O, (B', T, H * dh) (each subclass)."""
        raise NotImplementedError

    def combine(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: ScoreMask,
                offset: int, ablation: Optional[HeadAblation]) -> torch.Tensor:
        """q, k (post-rotation), v (B, H, T, d); attention; hook_z; ablation -> the heads'
        outputs (B', T, H * dh), before W_O."""
        B, _, T, _ = q.shape
        if k.shape[0] != B:  # keys/values from a shared (un-ablated) input: broadcast over variants
            k, v = k.repeat(B // k.shape[0], 1, 1, 1), v.repeat(B // v.shape[0], 1, 1, 1)
        bias = self.positional_bias(T, offset, q.dtype)
        z = run_hook(self.hook_z, heads_last(self.attend(q, k, v, mask, bias)))  # (B, T, H, dh)
        if ablation is not None:
            z = ablation.apply(z)  # (V * B, T, H, dh)
        return z.reshape(z.shape[0], T, -1)


class Attention(AttentionBase):
    """Standard multi-head attention; optional RoPE ``rotary`` and additive ``bias``.
    ``qkv_bias``: Q, K, V projections with biases (the paper's code)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0,
                 rotary: Optional[nn.Module] = None, bias: Optional[nn.Module] = None,
                 qkv_bias: bool = False):
        super().__init__(d_model, n_heads, dropout, bias, rotary_hooks=rotary is not None)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=qkv_bias)  # rows: W_q, W_k, W_v
        self.rotary = rotary

    def mix(self, x: torch.Tensor, kv: torch.Tensor, mask: ScoreMask, offset: int = 0,
            ablation: Optional[HeadAblation] = None) -> torch.Tensor:
        """x (B, T, D), kv (B or fewer, T, D) -> the heads' outputs (B', T, D) before W_O."""
        x = run_hook(self.hook_q_in, x)
        D = self.d_model
        if kv is x and not self.hook_kv_in.active:
            q, k, v = self.qkv(x).split(D, dim=-1)  # one GEMM when keys come from x
        else:
            q, kv = self.split_projection(x, run_hook(self.hook_kv_in, kv))
            k, v = kv.split(D, dim=-1)
        return self.heads(q, k, v, mask, offset, ablation)

    def heads(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: ScoreMask,
              offset: int, ablation: Optional[HeadAblation]) -> torch.Tensor:
        """Projected q (B, T, D), k, v (B or fewer, T, D) -> the heads' outputs (B', T, D):
        split into heads, hooks, rotation, :meth:`combine`."""
        B, T, _ = q.shape
        H, dh = self.n_heads, self.head_dim
        q = q.view(B, T, H, dh).transpose(1, 2)  # (B, H, T, dh)
        k = k.view(k.shape[0], T, H, dh).transpose(1, 2)
        v = v.view(v.shape[0], T, H, dh).transpose(1, 2)
        q, k, v = self.qkv_hooks(q, k, v)
        if self.rotary is not None:
            q, k = self.rot_hooks(*self.rotary.rotate_qk(q, k, offset))
        return self.combine(q, k, v, mask, offset, ablation)

    def split_projection(self, x: torch.Tensor, kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Q from ``x`` and K, V from ``kv`` (keys and values from another input): (.., D) and
        (.., 2D), two GEMMs with the rows of the fused projection."""
        D, W, b = self.d_model, self.qkv.weight, self.qkv.bias
        return (F.linear(x, W[:D], None if b is None else b[:D]),
                F.linear(kv, W[D:], None if b is None else b[D:]))

    def head_weights(self) -> dict[str, torch.Tensor]:
        """Per-head matrices: W_q, W_k, W_v (H, dh, D) and W_o (H, D, dh)."""
        H, dh, D = self.n_heads, self.head_dim, self.d_model
        Wq, Wk, Wv = self.qkv.weight.detach().split(D, dim=0)
        return {"W_q": Wq.reshape(H, dh, D), "W_k": Wk.reshape(H, dh, D),
                "W_v": Wv.reshape(H, dh, D),
                "W_o": self.out.weight.detach().reshape(D, H, dh).permute(1, 0, 2)}
