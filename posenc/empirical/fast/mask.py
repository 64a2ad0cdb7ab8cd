"""The score mask of a packed forward: :class:`~posenc.empirical.model.attention_kernel.ScoreMask`
(padding keys, causal triangle) plus the packing of the batch and, with merged rows, the rows' block mask.

The reference kernel (:func:`~posenc.empirical.model.attention_kernel.explicit_attention`, SDPA) reads a mask
through :meth:`ScoreMask.base` and :meth:`ScoreMask.score_columns`; :class:`PackedMask` gives
them for merged rows ((rows, T, T) block mask; one-hot segment columns), so the modules' own
attention code runs unchanged on the packed rows.  :meth:`PackedMask.packed_constant` is the
constant additive term of :class:`~.packed_attention.PackedAttention`.
"""

from __future__ import annotations

from typing import Optional

import torch

from ..model.attention_kernel import ScoreMask
from .packing import Packing


class PackedMask(ScoreMask):
    """The mask of a packed forward.  ``packing``: the real tokens (:mod:`.packing`); with merged
    rows ``keys`` is None and :attr:`blocks` holds the mask instead."""

    def __init__(self, keys: Optional[torch.Tensor], causal: Optional[torch.Tensor], seq: int,
                 packing: Packing, dtype: torch.dtype = torch.float32):
        super().__init__(keys, causal, seq, dtype)
        self.packing = packing
        self._blocks: Optional[torch.Tensor] = None

    @classmethod
    def pack(cls, keep: torch.Tensor, causal: bool, seq: int, dtype: torch.dtype,
             device: torch.device, merge: bool) -> "PackedMask":
        """keep (B, T) bool (False = padding); merge: let short examples share attention rows
        (:mod:`.packing`; only for PEs that see i - j).  A batch without padding is packed too
        (every token real): the sub-layer functions need the layout."""
        padded = not bool(keep.all())
        packing = Packing(keep, merge and padded)
        keys = cls.key_mask(keep, dtype) if padded and not packing.merged else None
        tri = cls.triangle(seq, dtype, device) if causal else None
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
        """The key mask broadcastable to (rows, H, T, T): merged rows' blocks, or the keys."""
        if self.merged:
            return self.blocks[:, None]
        return super().base()

    def score_columns(self, dtype: torch.dtype) -> Optional[tuple[torch.Tensor, torch.Tensor]]:
        """Merged rows: the block mask as one-hot segment columns
        (:meth:`.packing.Packing.score_columns`), (rows, 1, T, S) each; else the padding keys'."""
        if self.merged:
            if dtype not in self._columns:
                self._columns[dtype] = self.packing.score_columns(dtype)
            return self._columns[dtype]
        return super().score_columns(dtype)

    def repeat(self, times: int) -> "ScoreMask":
        raise ValueError("a packed forward has no ablation variants")

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
