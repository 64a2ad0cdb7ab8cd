"""The attention kernel of the packed rows where the attention is not one autograd function
(:mod:`.packed`: xPos, half pairing, MLA, attention dropout): softmax(Q K^T / sqrt(d) + B + M) V
on (rows, H, T, d) tensors with a :class:`~.mask.PackedMask`, explicitly or by SDPA as the
module's ``kernel`` says.

The explicit kernel folds the mask into the score GEMM:

* with a PE bias or the causal triangle, ``baddbmm`` adds M + B -- materialised once per forward
  for a fixed bias (ALiBi, a custom kernel: one module shared by all layers, so every layer hits
  the same entry) or per layer for a learned one (:meth:`.mask.PackedMask.flat`) -- inside the GEMM;
* with the key mask alone, it rides in the GEMM as extra columns: q gets a last coordinate 1 and k
  the key's mask value (0 or -inf), so ``[q/sqrt(d), 1] . [k, m_j] = q.k/sqrt(d) + m_j``, and
  nothing of size (rows, H, T, T) is materialised besides the scores (merged rows: one-hot segment
  columns, :meth:`.mask.PackedMask.score_columns`).  The extra column of dq is 0 * -inf at masked
  keys; it belongs to the constant 1 and is dropped, so no NaN reaches a gradient.

This was the reference model's kernel until 2026-12-04 (the reference now adds the mask after a
plain GEMM, :meth:`posenc.empirical.model.attention.AttentionBase.attend`); it stays here
unchanged so that the fast path's training numerics stay what they were, bit for bit.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from .mask import PackedMask


def rows_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: PackedMask,
                   bias: Optional[torch.Tensor], dropout: float, kernel: str) -> torch.Tensor:
    """q, k (rows, H, T, d_qk), v (rows, H, T, dh) -> z (rows, H, T, dh); ``kernel``:
    ``"explicit"`` or ``"sdpa"`` (the module's choice)."""
    if kernel == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.additive(bias), dropout_p=dropout)
    B, H, T, d = q.shape
    if bias is None and mask.causal is None:
        q = q * d ** -0.5
        columns = mask.score_columns(q.dtype)
        if columns is not None:
            qe, ke = columns
            q = torch.cat([q, qe.expand(B, H, T, qe.shape[-1])], dim=-1)
            k = torch.cat([k, ke.expand(B, H, T, ke.shape[-1])], dim=-1)
        scores = torch.matmul(q, k.transpose(-1, -2))  # (B, H, T, T)
    else:
        qf, kf = q.reshape(B * H, T, d), k.reshape(B * H, T, d)
        scores = torch.baddbmm(mask.flat(bias, B, H), qf, kf.transpose(1, 2),
                               alpha=d ** -0.5).view(B, H, T, T)
    pattern = scores.softmax(dim=-1)
    if dropout:
        pattern = F.dropout(pattern, dropout)
    return torch.matmul(pattern, v)  # (B, H, T, dh)
