"""All blocks of a packed forward as one autograd function: each block's attention sub-layer
(:func:`.attention_sublayer.attention_forward`) and MLP sub-layer
(:func:`.mlp_sublayer.mlp_forward`) in turn, and their hand-written backwards in reverse.

With one function per sub-layer, every block costs two autograd nodes (two ``Function.apply``
calls in the forward, two node evaluations in the backward: ~18 us each at the quick size, about
a tenth of a millisecond per step for four blocks) and the Python between them.  The stack runs
the same ATen kernels in the same order, so it computes what the per-sub-layer functions compute,
bit for bit (tests compare both, and ``torch.autograd.gradcheck`` the backward in float64).  The
fast path uses it in a packed forward when every block's sub-layers are covered
(:func:`.packed.stacked`); otherwise each block dispatches on its own.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

import torch
from torch.autograd.function import once_differentiable

from .attention_sublayer import attention_args, attention_backward, attention_forward
from .mlp_sublayer import mlp_args, mlp_backward, mlp_forward
from .packed_attention import HeadSlots

#: tensors per block: the attention sub-layer's (LN weight, LN bias, W_qkv, b_qkv, W_o, b_o,
#: learned bias) then the MLP sub-layer's (LN weight, LN bias, W1, b1, W2, b2)
ATTENTION_TENSORS, MLP_TENSORS = 7, 6
PER_BLOCK = ATTENTION_TENSORS + MLP_TENSORS
QKV_BIAS, LEARNED_BIAS = 3, 6  # positions within a block's tensors


class BlockPlan(NamedTuple):
    """A block's non-tensor arguments: the attention's index maps, phasors, constant masks,
    scale and LayerNorm eps, and the MLP's LayerNorm eps and activation."""
    slots: HeadSlots
    phasors: Optional[torch.Tensor]
    masks: tuple
    scale: float
    attention_eps: float
    mlp_eps: float
    gelu: bool


class BlockStack(torch.autograd.Function):
    """``apply(h (N, D), plans (one BlockPlan per block), *tensors) -> (N, D)``; ``tensors``:
    :data:`PER_BLOCK` per block, in the order of :data:`ATTENTION_TENSORS` / :data:`MLP_TENSORS`
    (None for an absent b_qkv or learned bias)."""

    @staticmethod
    def forward(ctx, h: torch.Tensor, plans: Sequence[BlockPlan], *tensors):
        saved: list = []
        sizes: list[tuple[int, int]] = []  # per block: tensors saved by its two sub-layers
        for i, plan in enumerate(plans):
            t = tensors[i * PER_BLOCK:(i + 1) * PER_BLOCK]
            h, s_attention = attention_forward(h, *t[:ATTENTION_TENSORS], plan.slots, plan.phasors,
                                               plan.masks, plan.scale, plan.attention_eps)
            h, s_mlp = mlp_forward(h, *t[ATTENTION_TENSORS:], plan.mlp_eps, plan.gelu)
            saved += [*s_attention, *s_mlp]
            sizes.append((len(s_attention), len(s_mlp)))
        ctx.save_for_backward(*saved)
        ctx.plans, ctx.sizes = plans, sizes
        # per block: the learned bias's heads when it needs a gradient, and whether b_qkv exists
        ctx.bias_heads, ctx.qkv_bias = [], []
        for i in range(len(plans)):
            bias = tensors[i * PER_BLOCK + LEARNED_BIAS]
            needed = bias is not None and ctx.needs_input_grad[2 + i * PER_BLOCK + LEARNED_BIAS]
            ctx.bias_heads.append(bias.shape[0] if needed else None)
            ctx.qkv_bias.append(tensors[i * PER_BLOCK + QKV_BIAS] is not None)
        return h

    @staticmethod
    @once_differentiable  # the backward is hand-written: no second derivative
    def backward(ctx, dy: torch.Tensor):
        saved = ctx.saved_tensors
        plans = ctx.plans
        grads: list = [None] * (len(plans) * PER_BLOCK)
        at = len(saved)
        for i in reversed(range(len(plans))):
            plan, (n_attention, n_mlp) = plans[i], ctx.sizes[i]
            dy, *g_mlp = mlp_backward(saved[at - n_mlp:at], dy, plan.gelu)
            at -= n_mlp
            dy, *g_attention = attention_backward(saved[at - n_attention:at], dy, plan.slots,
                                                  plan.scale, ctx.bias_heads[i], ctx.qkv_bias[i],
                                                  plan.masks)
            at -= n_attention
            grads[i * PER_BLOCK:(i + 1) * PER_BLOCK] = g_attention + g_mlp
        return (dy, None, *grads)


def stack_inputs(blocks: Sequence, mask, offset: int, dtype: torch.dtype) -> tuple[tuple, list]:
    """:class:`BlockStack`'s ``plans`` and ``tensors`` for ``blocks``
    (:class:`~posenc.empirical.model.transformer.Block`, each covered by both sub-layer functions) in a packed
    forward (``mask`` a :class:`~.mask.PackedMask`)."""
    plans, tensors = [], []
    for block in blocks:
        g, beta, w_qkv, b_qkv, w_o, b_o, bias, slots, w, masks, scale, eps = attention_args(
            block.ln1, block.attn, mask, offset, dtype)
        *mlp_tensors, mlp_eps, gelu = mlp_args(block.ln2, block.mlp)
        plans.append(BlockPlan(slots, w, masks, scale, eps, mlp_eps, gelu))
        tensors += [g, beta, w_qkv, b_qkv, w_o, b_o, bias, *mlp_tensors]
    return tuple(plans), tensors


def block_stack(h: torch.Tensor, blocks: Sequence, mask, offset: int) -> torch.Tensor:
    """``h`` (N, D) through every block of ``blocks`` (see :func:`stack_inputs`)."""
    plans, tensors = stack_inputs(blocks, mask, offset, h.dtype)
    return BlockStack.apply(h, plans, *tensors)
