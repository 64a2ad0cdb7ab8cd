"""The score mask of a packed forward: the padding keys, the causal triangle, the packing of the
batch and, with merged rows, the rows' block mask -- in the forms the fast path's kernels take.

* :meth:`PackedMask.packed_constant`: every constant additive term summed once per forward and
  shared by the layers -- the constant of :class:`~.packed_attention.PackedAttention`;
* :meth:`PackedMask.score_columns`: the key mask (or the merged rows' block mask) as extra columns
  of q and k, so it rides in the score GEMM (:func:`.rows_attention.rows_attention`);
* :meth:`PackedMask.flat`: M + B as (rows * heads, T, T), once per forward for a fixed bias, the
  input of a ``baddbmm`` (:func:`.rows_attention.rows_attention`);
* :meth:`PackedMask.additive`: M + B broadcastable to (rows, H, T, T), for SDPA.

(The reference forward's mask is one additive tensor,
:func:`posenc.empirical.model.attention.attention_mask`; these forms were the reference kernel's
until 2026-12-04 and stay here, where the fast path's numerics depend on them.)
"""

from __future__ import annotations

from typing import Optional

import torch

from ..model.attention import attention_mask
from .packing import Packing


class PackedMask:
    """The mask of a packed forward.  ``keys``: (rows, T) additive key mask (0 / -inf) or None;
    ``causal``: (T, T) or None; ``packing``: the real tokens (:mod:`.packing`); with merged rows
    ``keys`` is None and :attr:`blocks` holds the mask instead."""

    def __init__(self, keys: Optional[torch.Tensor], causal: Optional[torch.Tensor], seq: int,
                 packing: Packing, dtype: torch.dtype = torch.float32):
        self.keys, self.causal, self.seq, self.dtype = keys, causal, seq, dtype
        self.packing = packing
        self._blocks: Optional[torch.Tensor] = None
        self._memo: dict[tuple, tuple[Optional[torch.Tensor], Optional[torch.Tensor]]] = {}
        self._columns: dict[torch.dtype, Optional[tuple[torch.Tensor, torch.Tensor]]] = {}

    @classmethod
    def pack(cls, keep: torch.Tensor, causal: bool, seq: int, dtype: torch.dtype,
             device: torch.device, merge: bool) -> "PackedMask":
        """keep (B, T) bool (False = padding); merge: let short examples share attention rows
        (:mod:`.packing`; only for PEs that see i - j).  A batch without padding is packed too
        (every token real): the sub-layer functions need the layout."""
        padded = not bool(keep.all())
        packing = Packing(keep, merge and padded)
        keys = tri = None  # the reference's masks, in this class's layouts
        if padded and not packing.merged:  # (rows, T): 0 at a real key, -inf at padding
            keys = attention_mask(keep, False, seq, dtype, device)[:, 0, 0, :]
        if causal:  # (T, T): -inf above the diagonal (key j > query i)
            tri = attention_mask(None, True, seq, dtype, device)[0, 0]
        return cls(keys, tri, seq, packing, dtype)

    @property
    def merged(self) -> bool:
        return self.packing.merged

    @property
    def blocks(self) -> Optional[torch.Tensor]:
        """(rows, T, T) additive mask of merged rows (each query on its own segment's keys), or
        None; built on first use -- the packed attention (:meth:`packed_constant`), a bias, the
        causal triangle or SDPA need it; the explicit kernel without them takes
        :meth:`score_columns` instead."""
        if self._blocks is None and self.merged:
            self._blocks = self.packing.block_mask(self.dtype)
        return self._blocks

    def base(self) -> Optional[torch.Tensor]:
        """The key mask broadcastable to (rows, H, T, T): merged rows' blocks, or the keys, or
        None."""
        if self.merged:
            return self.blocks[:, None]
        return None if self.keys is None else self.keys[:, None, None, :]

    def score_columns(self, dtype: torch.dtype) -> Optional[tuple[torch.Tensor, torch.Tensor]]:
        """The key mask as extra columns of q and k, or None without one (built once per forward):
        merged rows' one-hot segment columns (:meth:`.packing.Packing.score_columns`), (rows, 1,
        T, S) each; else the padding keys as ``[1] . [m_j]``, (rows, 1, T, 1) each."""
        if dtype not in self._columns:
            cols: Optional[tuple[torch.Tensor, torch.Tensor]] = None
            if self.merged:
                cols = self.packing.score_columns(dtype)
            elif self.keys is not None:
                keys = self.keys.to(dtype)[:, None, :, None]  # (rows, 1, T, 1)
                cols = (torch.ones_like(keys), keys)
            self._columns[dtype] = cols
        return self._columns[dtype]

    def additive(self, bias: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """The whole M + B, broadcastable to (rows, H, T, T) (for SDPA), or None."""
        if bias is None:
            small = None if self.causal is None else self.causal[None]
        else:
            small = bias if self.causal is None else bias + self.causal  # (H or 1, T, T)
        base = self.base()
        if base is None:
            return None if small is None else small[None]
        return base if small is None else base + small[None]

    def flat(self, bias: Optional[torch.Tensor], batch: int, heads: int) -> Optional[torch.Tensor]:
        """M + B as (batch * heads, T, T) (or (1, T, T) when the same for all), or None; once per
        forward for a bias without a gradient (memo), per layer for a learned one."""
        if bias is not None and bias.requires_grad:
            return self._flatten(self.additive(bias), batch, heads)
        key = (id(bias), batch)  # the entry keeps ``bias`` alive, so its id stays unique
        if key not in self._memo:
            self._memo[key] = (bias, self._flatten(self.additive(bias), batch, heads))
        return self._memo[key][1]

    def _flatten(self, m: Optional[torch.Tensor], batch: int, heads: int) -> Optional[torch.Tensor]:
        if m is None:
            return None
        T = self.seq
        if m.shape[0] == 1 and m.shape[1] == 1:
            return m.reshape(1, m.shape[2], T)  # broadcasts over batch * heads
        return m.expand(batch, heads, T, T).reshape(batch * heads, T, T)

    def packed_constant(self, bias: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """The constant additive terms of a packed forward's scores, summed once per forward and
        shared by the layers (memo): merged rows' block mask (rows, 1, T, T) or the padding keys
        (rows, 1, T, T), the causal triangle (T, T), and ``bias`` (H or 1, T, T) -- a PE bias
        without a gradient, or None; broadcastable to (rows, H, T, T), or None when all are
        absent.  The masks are 0 / -inf, so adding the sum equals adding the terms one by one,
        bit for bit.  A padding query (its output is never read) sees its own key: with the
        causal triangle after leading padding, or in an example that is all padding, its row
        would otherwise be all -inf, and the NaN row of P would reach real gradients through
        0 * NaN in the backward (dV = P^T dZ)."""
        key = ("packed", id(bias))  # the entry keeps ``bias`` alive, so its id stays unique
        if key not in self._memo:
            if self.merged:
                parts = [self.blocks[:, None]]
            elif self.keys is None:
                parts = []
            else:  # (rows, 1, T, T): a padding query sees its own key (see above)
                keys = self.keys[:, None, :].expand(-1, self.seq, -1).clone()
                keys.diagonal(dim1=1, dim2=2).zero_()  # a real query's own key is 0 already
                parts = [keys[:, None]]
            parts += [m for m in (self.causal, bias) if m is not None]
            total = None
            for m in parts:
                total = m if total is None else total + m
            self._memo[key] = (bias, total)
        return self._memo[key][1]
