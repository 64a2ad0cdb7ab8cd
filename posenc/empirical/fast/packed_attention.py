"""Attention of a packed forward as one autograd function: from the fused Q/K/V projection of the
real tokens (N, 3 * d_model) to the heads' outputs (N, d_model), with a hand-written backward.

In a packed forward (:mod:`.packing`) the attention sees the tokens in a padded ``(rows, T)``
layout.  Done op by op, that layout costs a scatter (``unpack``), three head-major reshapes that
copy, the rotation's complex views, the mask columns' concatenation, a copy of V for the second
product, the (rows, heads, T, T) mask expanded per head, and the transposes and the gather back --
each with its own autograd node and, in the backward, its own copies.  Here the layout is reached
by index maps (:class:`HeadSlots`, built once per forward and shared by the layers) so that

* forward: one gather puts Q, K, V head-major into one buffer ``(3, rows, heads, T, d)`` (zeros at
  the free slots); RoPE is one in-place complex product on Q and K; ``S = Q K^T / sqrt(d)``
  (``baddbmm`` with the scale as alpha: no pass of its own); the constant masks and the fixed PE
  bias -- summed once per forward (:meth:`.mask.PackedMask.packed_constant`) -- and a learned
  bias are added in place, broadcast over heads / rows; ``P = softmax(S)``; ``Z = P V``; one
  gather back to the real tokens;
* backward: one gather of dZ into the padded layout; ``dV = P^T dZ``, ``dP = dZ V^T``,
  ``dS = softmax'(dP)``, ``dQ = dS K / sqrt(d)``, ``dK = dS^T Q / sqrt(d)`` written into one
  buffer; the inverse rotation (conjugate phasors) in place; one gather back to
  (N, 3 * d_model).  A learned bias gets ``dS`` summed over the rows.

It computes exactly what :func:`.rows_attention.rows_attention` (the explicit kernel) computes on the
unpacked tensors (the same products, in the same float dtype; tests compare both, and
``torch.autograd.gradcheck`` the backward in float64).  The fast path (:mod:`.packed`) uses it
for the cases it covers (:func:`supports`): a packed forward, no attention dropout in training,
float32 / float64, and a rotation that is plain RoPE with interleaved pairing (or none);
everything else takes the op-by-op path.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from .packing import Packing, index_tensor
from ..model.pe.rotary import Rotary


#: Scores (rows * heads * T * T elements) above which :func:`attend` runs in chunks of rows of
#: at most :data:`CHUNK_SCORES` scores (at least one row), each chunk's scores, pattern and
#: their gradients staying in a core's cache, and the backward recomputes P per chunk instead of
#: reading it back.  The paper code's 128-token rows at batch 16 and 8 heads (8 MiB of scores a
#: layer) run in chunks of 2 rows = 1 MiB: a training step 1.05x faster at batch 16, 1.6x at
#: batch 64 (benchmarks/results/train_step_paper_code_cpu_2026-12-04.txt; this project's 2-core
#: machine has 2 MiB of L2 per core), with logits and gradients bit for bit those of one pass
#: there.  At or below ``CHUNK_ABOVE`` (4 MiB: the quick preset's packed rows, at most 16 x 8 x
#: 58^2 = 0.43M scores) one pass, P saved, as before.
CHUNK_ABOVE, CHUNK_SCORES = 1 << 20, 1 << 18


class HeadSlots:
    """Index maps between packed tokens and the head-major padded layout of one forward.

    With ``who[r, t]`` the packed token at row r, column t (or none, a free slot):

    * ``qkv_rows`` (3 * rows * heads * T,): for each row (part, r, h, t) of the buffer
      ``(3, rows, heads, T, d)`` viewed as ``(-1, d)``, its source row ``n * 3 * heads + part *
      heads + h`` of the packed ``(N, 3 * heads * d)`` viewed as ``(N * 3 * heads, d)``; a free
      slot reads the same offset in a block of ``3 * heads`` zero rows appended after the last;
    * ``out_rows`` (N * heads,): for each packed (n, h), its row ``(r * heads + h) * T + t`` of
      ``(rows, heads, T, d)`` -- the gather back of the heads' outputs;
    * ``grad_rows`` (rows * heads * T,): for each (r, h, t) of dZ's padded layout, its source row
      ``n * heads + h`` of the packed dZ, or the same offset in ``heads`` zero rows appended;
    * ``qkv_back`` (N * 3 * heads,): for each packed (n, part, h), its row of the buffer -- the
      gather back of dQ, dK, dV.
    """

    def __init__(self, packing: Packing, heads: int):
        T, rows, N = packing.seq, packing.rows, packing.n_tokens
        dev = packing.slots.device
        slots = packing.slots.cpu().numpy()  # index arithmetic on the host (see Packing)
        self.rows, self.seq, self.heads, self.n_tokens = rows, T, heads, N
        who = np.full(rows * T, N, dtype=np.int64)  # N: a free slot
        who[slots] = np.arange(N)
        who = who.reshape(rows, 1, T)
        h = np.arange(heads)
        part_head = np.arange(3 * heads).reshape(3, 1, heads, 1)
        self.qkv_rows = index_tensor((who[None] * (3 * heads) + part_head).reshape(-1), dev)
        self.grad_rows = index_tensor((who * heads + h[:, None]).reshape(-1), dev)
        rt = slots + (slots // T) * ((heads - 1) * T)  # r * H * T + t
        self.out_rows = index_tensor((rt[:, None] + h * T).reshape(-1), dev)
        parts = np.arange(0, 3 * rows * heads * T, rows * heads * T)
        self.qkv_back = index_tensor((rt[:, None, None] + h * T + parts[:, None]).reshape(-1), dev)

    @classmethod
    def of(cls, packing: Packing, heads: int) -> "HeadSlots":
        """The maps of ``packing`` for ``heads`` heads, built once per forward (cached on it)."""
        cache = packing.__dict__.setdefault("_head_slots", {})
        if heads not in cache:
            cache[heads] = cls(packing, heads)
        return cache[heads]


def _with_zero_rows(x: torch.Tensor, width: int, zeros: int) -> torch.Tensor:
    """``x`` viewed as (-1, width) with ``zeros`` zero rows appended (the source of a gather)."""
    flat = x.reshape(-1, width)
    return torch.cat([flat, flat.new_zeros(zeros, width)])


def _rotate_(buf: torch.Tensor, w: Optional[torch.Tensor]) -> None:
    """In place on (2 or more, rows, H, T, d): Q (part 0) and K (part 1) times ``w`` on the first
    2 * planes dims viewed as complex; ``w`` None: nothing.  (The backward applies conj(w).)"""
    if w is None:
        return
    r = 2 * w.shape[-1]
    z = torch.view_as_complex(buf[:2, ..., :r].unflatten(-1, (r // 2, 2)))
    z.mul_(w)  # broadcast over Q / K and the rows


def chunk_rows(rows: int, heads: int, seq: int) -> Optional[int]:
    """Rows per chunk when the scores of all ``rows`` exceed :data:`CHUNK_ABOVE` elements (at
    most :data:`CHUNK_SCORES` scores a chunk, at least one row), else None (one pass, P saved
    for the backward)."""
    if rows * heads * seq * seq <= CHUNK_ABOVE:
        return None
    return max(1, CHUNK_SCORES // (heads * seq * seq))


def _pattern(q: torch.Tensor, k: torch.Tensor, masks: Sequence[torch.Tensor],
             bias: Optional[torch.Tensor], scale: float, rows: slice, heads: int) -> torch.Tensor:
    """P = softmax(scale Q K^T + masks + bias) of the attention rows ``rows`` (q, k: their
    (rows * heads, T, d)); a mask with a row axis is sliced to them."""
    T = q.shape[1]
    # the scale rides in the GEMM (beta 0: the 0-dim input is not read)
    s = torch.baddbmm(q.new_zeros(()), q, k.transpose(1, 2), beta=0, alpha=scale)  # (r * H, T, T)
    s4 = s.view(-1, heads, T, T)
    for m in masks:
        s4.add_(m[rows] if m.dim() == 4 and m.shape[0] > 1 else m)
    if bias is not None:
        s4.add_(bias)
    return torch.softmax(s, dim=-1)


def _chunks(rows: int, per: Optional[int]) -> list[slice]:
    return [slice(0, rows)] if per is None else [slice(r, min(r + per, rows)) for r in range(0, rows, per)]


def attend(source: torch.Tensor, slots: HeadSlots, w: Optional[torch.Tensor],
           masks: Sequence[torch.Tensor], bias: Optional[torch.Tensor], scale: float):
    """The forward on ``source`` (N * 3 * H + 3 * H, d): the packed Q/K/V rows then the zero
    block.  Returns the heads' outputs (N * H, d) and what :func:`attend_backward` needs: the
    rotated Q, K, V and P, or None for P where the rows run in chunks (:func:`chunk_rows`; the
    backward then recomputes it chunk by chunk)."""
    rows, H, T = slots.rows, slots.heads, slots.seq
    d = source.shape[1]
    buf = source.index_select(0, slots.qkv_rows).view(3, rows, H, T, d)
    _rotate_(buf, w)  # Q, K rotated
    q, k, v = buf.view(3, rows * H, T, d).unbind(0)
    per = chunk_rows(rows, H, T)
    if per is None:
        p = _pattern(q, k, masks, bias, scale, slice(0, rows), H)
        return torch.bmm(p, v).view(-1, d).index_select(0, slots.out_rows), buf, p
    z = torch.empty_like(q)
    for r in _chunks(rows, per):
        h = slice(r.start * H, r.stop * H)
        torch.bmm(_pattern(q[h], k[h], masks, bias, scale, r, H), v[h], out=z[h])
    return z.view(-1, d).index_select(0, slots.out_rows), buf, None


def attend_backward(grad_source: torch.Tensor, buf: torch.Tensor, p: Optional[torch.Tensor],
                    slots: HeadSlots, w: Optional[torch.Tensor], scale: float,
                    bias_heads: Optional[int], masks: Sequence[torch.Tensor] = (),
                    bias: Optional[torch.Tensor] = None):
    """The backward of :func:`attend` from ``grad_source`` (N * H + H, d): dZ's rows then a zero
    block.  Returns dQ/dK/dV of the packed tokens (N * 3 * H, d) and, for ``bias_heads`` H or 1,
    the bias's gradient (dS summed over the rows, and over the heads for 1), else None.  ``p``
    None: the forward ran in chunks, and P is recomputed per chunk from ``masks`` and ``bias``
    (the forward's)."""
    rows, H, T = slots.rows, slots.heads, slots.seq
    d = buf.shape[-1]
    do = grad_source.index_select(0, slots.grad_rows).view(rows * H, T, d)
    q, k, v = buf.view(3, rows * H, T, d).unbind(0)
    g = torch.empty_like(buf)
    gq, gk, gv = g.view(3, rows * H, T, d).unbind(0)
    zero = q.new_zeros(())
    dbias = None
    for r in _chunks(rows, None if p is not None else chunk_rows(rows, H, T)):
        h = slice(r.start * H, r.stop * H)
        pc = p if p is not None else _pattern(q[h], k[h], masks, bias, scale, r, H)
        # dV = P^T dO and dK = dS^T Q computed transposed (dO^T P, Q^T dS: (d, T) per head) and
        # copied in: MKL's batched GEMM with a transposed (T, T) operand measured ~1.5x slower
        gv[h].copy_(torch.bmm(do[h].transpose(1, 2), pc).transpose(1, 2))
        ds = torch._softmax_backward_data(torch.bmm(do[h], v[h].transpose(1, 2)), pc, -1, pc.dtype)
        torch.baddbmm(zero, ds, k[h], beta=0, alpha=scale, out=gq[h])  # d(rotated Q) = scale dS K
        gk[h].copy_(torch.baddbmm(zero, q[h].transpose(1, 2), ds, beta=0, alpha=scale).transpose(1, 2))
        if bias_heads is not None:
            part = ds.view(-1, H, T, T).sum(0)
            dbias = part if dbias is None else dbias.add_(part)
    _rotate_(g, None if w is None else w.conj())  # the inverse rotation
    if dbias is not None and bias_heads == 1:
        dbias = dbias.sum(0, keepdim=True)
    return g.view(-1, d).index_select(0, slots.qkv_back), dbias


class PackedAttention(torch.autograd.Function):
    """``apply(qkv (N, 3 * H * d), bias (H or 1, T, T) or None, slots, phasors (H or 1, T, P)
    complex or None, masks, scale) -> (N, H * d)``; ``masks``: additive constants broadcastable
    to (rows, H, T, T) (the block mask, the key mask, the causal triangle)."""

    @staticmethod
    def forward(ctx, qkv: torch.Tensor, bias: Optional[torch.Tensor], slots: HeadSlots,
                w: Optional[torch.Tensor], masks: Sequence[torch.Tensor], scale: float) -> torch.Tensor:
        H = slots.heads
        N, d = qkv.shape[0], qkv.shape[1] // (3 * H)
        z, buf, p = attend(_with_zero_rows(qkv, d, 3 * H), slots, w, masks, bias, scale)
        ctx.save_for_backward(buf, p, w, bias)
        ctx.slots, ctx.scale, ctx.masks = slots, scale, masks
        ctx.bias_shape = None if bias is None else bias.shape
        return z.view(N, H * d)

    @staticmethod
    @once_differentiable  # the backward is hand-written: no second derivative
    def backward(ctx, dz: torch.Tensor):
        buf, p, w, bias = ctx.saved_tensors
        H, d = ctx.slots.heads, buf.shape[-1]
        bias_heads = (ctx.bias_shape[0] if ctx.bias_shape is not None and ctx.needs_input_grad[1]
                      else None)
        dqkv, dbias = attend_backward(_with_zero_rows(dz, d, H), buf, p, ctx.slots, w,
                                      ctx.scale, bias_heads, ctx.masks, bias)
        return dqkv.view(dz.shape[0], 3 * H * d), dbias, None, None, None, None


def supports(rotary, dtype: torch.dtype, dropout: float) -> bool:
    """Whether :class:`PackedAttention` computes this attention: no attention dropout (the caller
    passes 0 outside training), float32 / float64, no rotation or plain RoPE (:class:`Rotary`
    itself: not xPos, not the paper code's MLA mix) with interleaved pairing."""
    return (not dropout and dtype in (torch.float32, torch.float64)
            and (rotary is None or (type(rotary) is Rotary and rotary.pairing == "interleaved")))



def layer_inputs(attn, mask, offset: int, dtype: torch.dtype) -> tuple:
    """What :class:`PackedAttention` takes besides Q/K/V, for the
    :class:`~posenc.empirical.model.attention.Attention` ``attn`` in a packed forward (``mask`` a
    :class:`~.mask.PackedMask`): a learned PE bias (H or 1, T, T) or None, the index maps, the
    rotation's phasors or None, the constant additive terms -- the merged rows' block mask or the
    padding keys, the causal triangle and a fixed PE bias, summed once per forward
    (:meth:`~.mask.PackedMask.packed_constant`) -- and the score scale."""
    T = mask.seq
    bias = attn.positional_bias(T, offset, dtype)
    learned = bias is not None and bias.requires_grad
    constant = mask.packed_constant(None if learned else bias)
    return (bias if learned else None, HeadSlots.of(mask.packing, attn.n_heads),
            None if attn.rotary is None else attn.rotary.phasors(T, offset, dtype),
            () if constant is None else (constant,), attn.head_dim ** -0.5)
