"""The packed forward of a :class:`~posenc.empirical.model.transformer.Transformer`: the reference forward's
computation on the real tokens only (:mod:`.packing`), from the model's own modules and
parameters.

Token-wise parts (embedding, LayerNorms, projections, MLP, residuals) see the packed tokens
(N, D); the attention sees packed rows (rows, T), merged when the PE sees positions only through
i - j (:func:`merges_rows`).  Per block, in order of preference:

* every block covered by both sub-layer functions: all blocks as one autograd function
  (:mod:`.block_stack`);
* the attention sub-layer as one function (:mod:`.attention_sublayer`): keys and values from
  the layer's own input, a plain :class:`~posenc.empirical.model.attention.Attention` that
  :func:`~.packed_attention.supports`, no dropout after it;
* else, for a covered plain attention (keys and values from elsewhere, or dropout after it), the
  attention alone as one function (:class:`.packed_attention.PackedAttention`);
* else the attention module's own projections and rotation
  (:meth:`~posenc.empirical.model.attention.Attention.heads`,
  :meth:`~posenc.empirical.model.mla.MLAAttention.project`) on the unpacked rows, the fast path's
  kernel of the rows (:mod:`.rows_attention`, with a :class:`~.mask.PackedMask`), W_O on the
  packed tokens;
* the MLP sub-layer as one function (:mod:`.mlp_sublayer`) where it covers the modules, else
  the modules.

Trailing columns that are padding in every example are dropped first (they are masked keys and
pooled with weight 0).  The logits and gradients are the reference's up to float rounding
(summation order, the rotation angles of shifted columns); tests compare both in float64 for
every catalogue entry.  Only :func:`posenc.empirical.fast.forward` calls this, after checking
that it covers the model and batch.
"""

from __future__ import annotations

import torch

from ...encodings import parts
from ..model.attention import Attention
from ..model.transformer import Block, Transformer
from ..tasks import PAD
from .attention_sublayer import attention_sublayer
from .block_stack import block_stack
from .mask import PackedMask
from .mlp_sublayer import supports as mlp_supports, mlp_sublayer
from .packed_attention import PackedAttention, layer_inputs, supports as attention_supports
from .rows_attention import rows_attention


def merges_rows(spec) -> bool:
    """Whether short examples may share attention rows: every part of ``spec`` has a Toeplitz
    form (not in :data:`posenc.encodings.parts.NOT_TOEPLITZ`, read at call time).  Absolute parts are added
    to the input before packing, by each token's own column, so they never stop a merge."""
    return not any(p.kind in parts.NOT_TOEPLITZ for p in spec.parts())


def trim(tokens: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop the trailing columns that are padding in every example (at least one stays)."""
    real = keep.any(dim=0).nonzero()
    length = int(real[-1]) + 1 if len(real) else tokens.shape[1]
    return (tokens, keep) if length == tokens.shape[1] else (tokens[:, :length], keep[:, :length])


def can_fuse_attention(block: Block, dtype: torch.dtype) -> bool:
    """Whether ``block``'s attention sub-layer runs as one function (:mod:`.attention_sublayer`)."""
    attn = block.attn
    return (not block.kv_from_input and type(attn) is Attention
            and not (block.training and block.drop_attn.p > 0)
            and attention_supports(attn.rotary, dtype, attn.dropout if block.training else 0.0))


def can_fuse_mlp(block: Block, dtype: torch.dtype) -> bool:
    """Whether ``block``'s MLP sub-layer runs as one function (:mod:`.mlp_sublayer`)."""
    return mlp_supports(block.ln2, block.mlp, block.training and block.drop.p > 0, dtype)


def stacked(blocks, dtype: torch.dtype) -> bool:
    """Whether every block runs in one function (:mod:`.block_stack`)."""
    return all(can_fuse_attention(b, dtype) and can_fuse_mlp(b, dtype) for b in blocks)


def embedding(model: Transformer, tokens: torch.Tensor, mask: PackedMask, offset: int) -> torch.Tensor:
    """:meth:`~posenc.empirical.model.transformer.Transformer.input_embedding` of the real tokens only, (N, D)
    in packed order: the same sums E[token] + P[position], without the padding's rows."""
    packing = mask.packing
    x = model.embed(packing.from_batch(tokens))  # (N, D)
    if model.pos_embed is not None:
        p = model.pos_embed(tokens.shape[1], offset, x.dtype)  # (T, D)
        x = x + p.index_select(0, packing.columns)
    return x


def attention(block: Block, a: torch.Tensor, kv: torch.Tensor, mask: PackedMask,
              offset: int) -> torch.Tensor:
    """The attention of a block that is not one function: a, kv (N, D) -> (N, D)."""
    attn, unpack = block.attn, mask.packing.unpack
    dropout = attn.dropout if attn.training else 0.0
    if type(attn) is Attention and attention_supports(attn.rotary, a.dtype, dropout):
        qkv = attn.qkv(a) if kv is a else torch.cat(attn.split_projection(a, kv), dim=1)
        return attn.out(PackedAttention.apply(qkv, *layer_inputs(attn, mask, offset, a.dtype)))
    if type(attn) is Attention:  # projections on the packed tokens, then the rows
        D = attn.d_model
        if kv is a:
            q, k, v = unpack(attn.qkv(a)).split(D, dim=-1)
        else:
            q, kv = attn.split_projection(a, kv)
            q, (k, v) = unpack(q), unpack(kv).split(D, dim=-1)
        q, k, v = attn.heads(q, k, v, offset)  # (rows, H, T, dh)
    else:  # MLA (and any AttentionBase): its projections on the rows
        ap = unpack(a)
        q, k, v = attn.project(ap, ap if kv is a else unpack(kv), offset)
    rows, _, T, _ = q.shape
    bias = attn.positional_bias(T, offset, q.dtype)
    z = rows_attention(q, k, v, mask, bias, dropout, attn.kernel)  # (rows, H, T, dh)
    return attn.out(mask.packing.pack(z.transpose(1, 2).reshape(rows, T, -1)))


def block_forward(block: Block, h: torch.Tensor, x0: torch.Tensor, mask: PackedMask,
                  offset: int) -> torch.Tensor:
    """One block on the packed tokens h, x0 (N, D) -> (N, D)."""
    if can_fuse_attention(block, h.dtype):
        h = attention_sublayer(h, block.ln1, block.attn, mask, offset)
    else:
        a = block.ln1(h)
        h = h + block.drop_attn(attention(block, a, block.kv_input(a, x0), mask, offset))
    if can_fuse_mlp(block, h.dtype):
        return mlp_sublayer(h, block.ln2, block.mlp)
    return h + block.drop(block.mlp(block.ln2(h)))


def packed_forward(model: Transformer, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """tokens (B, T) -> logits (B, C), packed (see the module doc); no hook.  Padding not
    masked (``mask_padding=False``): every position is a real token (one dense row each)."""
    if model.cfg.mask_padding:
        keep = tokens != PAD  # (B, T) bool
        tokens, keep = trim(tokens, keep)
    else:  # padding is an ordinary token: every position real, one dense row per example
        keep = torch.ones_like(tokens, dtype=torch.bool)
    T = tokens.shape[1]
    mask = PackedMask.pack(keep, model.cfg.causal, T, model.embed.weight.dtype, tokens.device,
                           merge=merges_rows(model.spec))
    h = x0 = embedding(model, tokens, mask, offset)  # (N, D)
    if stacked(model.blocks, h.dtype):
        h = block_stack(h, model.blocks, mask, offset)
    else:
        for block in model.blocks:
            h = block_forward(block, h, x0, mask, offset)
    return model.classifier(mask.packing.mean(model.ln_f(h)))  # (B, C)
