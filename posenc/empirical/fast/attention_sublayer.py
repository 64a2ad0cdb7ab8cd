"""A block's attention sub-layer ``h + W_O attn(W_QKV LN(h)) + b_O`` of a packed forward as one
autograd function with a hand-written backward.

Op by op, autograd records a node for the LayerNorm, the Q/K/V projection, the attention
(:class:`~.packed_attention.PackedAttention`), the output projection and the residual add; here
one node runs the same ATen kernels (``native_layer_norm``, ``mm`` / ``addmm``, the attention of
:func:`~.packed_attention.attend`).  The Q/K/V GEMM writes straight into the attention's gather
source (its zero block appended in place), and the output projection's backward writes dZ into
its gather source the same way, so neither is copied.  It computes what the modules compute
(tests compare both, and ``torch.autograd.gradcheck`` the backward in float64).  The fast path
(:mod:`.packed`) uses it in a packed forward when keys and values come from the layer's own
input and the attention is one :func:`~.packed_attention.supports` (no dropout after it either).
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch.autograd.function import once_differentiable

from .packed_attention import HeadSlots, attend, attend_backward, layer_inputs


def _zero_tailed(rows: int, zeros: int, width: int, like: torch.Tensor) -> torch.Tensor:
    """(rows + zeros, width), its last ``zeros`` rows zero, the others to be written."""
    out = like.new_empty(rows + zeros, width)
    out[rows:].zero_()
    return out


def attention_forward(h, g, beta, w_qkv, b_qkv, w_o, b_o, bias: Optional[torch.Tensor],
                      slots: HeadSlots, w: Optional[torch.Tensor], masks: Sequence[torch.Tensor],
                      scale: float, eps: float) -> tuple[torch.Tensor, tuple]:
    """``h + W_o attn(W_qkv LN(h) + b_qkv) + b_o`` for (N, D) ``h``; returns it and what
    :func:`attention_backward` needs."""
    N, D = h.shape
    H = slots.heads
    d = D // H
    x, mean, rstd = torch.native_layer_norm(h, (D,), g, beta, eps)
    source = _zero_tailed(N * 3 * H, 3 * H, d, h)
    qkv = source[:N * 3 * H].view(N, 3 * D)
    if b_qkv is None:
        torch.mm(x, w_qkv.t(), out=qkv)
    else:
        torch.addmm(b_qkv, x, w_qkv.t(), out=qkv)
    z, buf, p = attend(source, slots, w, masks, bias, scale)
    z = z.view(N, D)
    y = torch.addmm(b_o, z, w_o.t()).add_(h)
    return y, (h, g, beta, mean, rstd, x, w_qkv, w_o, z, buf, p, w, bias)


def attention_backward(saved: Sequence, dy: torch.Tensor, slots: HeadSlots, scale: float,
                       bias_heads: Optional[int], qkv_bias: bool,
                       masks: Sequence[torch.Tensor] = ()) -> tuple:
    """The gradients of :func:`attention_forward`'s tensor inputs ``(h, g, beta, W_qkv, b_qkv,
    W_o, b_o, bias)`` from ``dy``; ``bias_heads``: the learned bias's heads (H or 1), or None for
    no bias gradient; ``qkv_bias``: whether there is a b_qkv; ``masks``: the forward's (the
    attention recomputes P from them where it ran in chunks)."""
    h, g, beta, mean, rstd, x, w_qkv, w_o, z, buf, p, w, bias = saved
    N, D = h.shape
    H = slots.heads
    d = D // H
    dw_o, db_o = dy.t().mm(z), dy.sum(0)
    grad_source = _zero_tailed(N * H, H, d, dy)
    torch.mm(dy, w_o, out=grad_source[:N * H].view(N, D))  # dZ
    dqkv, dbias = attend_backward(grad_source, buf, p, slots, w, scale, bias_heads, masks, bias)
    dqkv = dqkv.view(N, 3 * D)
    dw_qkv = dqkv.t().mm(x)
    db_qkv = dqkv.sum(0) if qkv_bias else None
    dh, dg, dbeta = torch.ops.aten.native_layer_norm_backward(
        dqkv.mm(w_qkv), h, (D,), mean, rstd, g, beta, [True, True, True])
    return dh.add_(dy), dg, dbeta, dw_qkv, db_qkv, dw_o, db_o, dbias


class AttentionSublayer(torch.autograd.Function):
    """``apply(h (N, D), ln weight, ln bias, W_qkv (3D, D), b_qkv or None, W_o (D, D), b_o,
    bias (H or 1, T, T) or None, slots, phasors or None, masks, scale, eps) -> (N, D)``."""

    @staticmethod
    def forward(ctx, h, g, beta, w_qkv, b_qkv, w_o, b_o, bias: Optional[torch.Tensor],
                slots: HeadSlots, w: Optional[torch.Tensor], masks: Sequence[torch.Tensor],
                scale: float, eps: float):
        y, saved = attention_forward(h, g, beta, w_qkv, b_qkv, w_o, b_o, bias, slots, w, masks,
                                     scale, eps)
        ctx.save_for_backward(*saved)
        ctx.slots, ctx.scale, ctx.masks = slots, scale, masks
        ctx.bias_heads = None if bias is None or not ctx.needs_input_grad[7] else bias.shape[0]
        ctx.qkv_bias = b_qkv is not None
        return y

    @staticmethod
    @once_differentiable  # the backward is hand-written: no second derivative
    def backward(ctx, dy):
        grads = attention_backward(ctx.saved_tensors, dy, ctx.slots, ctx.scale, ctx.bias_heads,
                                   ctx.qkv_bias, ctx.masks)
        return (*grads, None, None, None, None, None)


def attention_args(ln: torch.nn.LayerNorm, attn, mask, offset: int, dtype: torch.dtype) -> tuple:
    """:class:`AttentionSublayer`'s arguments after ``h`` for the LayerNorm ``ln`` and the
    :class:`~posenc.empirical.model.attention.Attention` ``attn`` in a packed forward (``mask`` a
    :class:`~.mask.PackedMask`)."""
    return (ln.weight, ln.bias, attn.qkv.weight, attn.qkv.bias, attn.out.weight, attn.out.bias,
            *layer_inputs(attn, mask, offset, dtype), ln.eps)


def attention_sublayer(h: torch.Tensor, ln: torch.nn.LayerNorm, attn, mask, offset: int) -> torch.Tensor:
    """``h + attn(ln(h))`` for the packed tokens ``h`` (N, D) of a packed forward (``mask``
    a :class:`~.mask.PackedMask`), ``attn`` an :class:`~posenc.empirical.model.attention.Attention`."""
    return AttentionSublayer.apply(h, *attention_args(ln, attn, mask, offset, h.dtype))
