"""Packed tokens: the real (non-padding) tokens of a padded batch as one (N, ...) tensor, and the
rows the attention sees them in.

With the padding mask on, a padding position's hidden state never reaches a logit: it is a masked
key (weight 0 in every softmax row, so its value is never read either) and has weight 0 in the
mean pooling.  The token-wise parts of a block -- the LayerNorms, the Q/K/V and output
projections, the MLP, the residual adds, dropout after them -- therefore need only the real
tokens.  The model runs them on the packed ``(N, D)`` tokens (N = number of real tokens, in
batch-major order) and only the attention itself sees a padded ``(rows, T)`` layout
(:meth:`Packing.unpack` / :meth:`Packing.pack`).

**Rows.**  Unmerged, row b is example b at columns 0..T-1 (zeros at its padding).  Merged
(``merge=True``, every example's real tokens a prefix), several short examples share a row, each
as a *segment* of consecutive columns, first-fit by decreasing length (deterministic), and a
block-diagonal mask (:meth:`Packing.block_mask`) keeps each query on its own segment's keys.  This
is exact when the attention depends on positions only through i - j (every PE part with a
Toeplitz form: RoPE, xPos, the additive Toeplitz biases; absolute PEs are added to the input
before packing): a segment starting at column o sees the rotation / bias of offsets
(i + o) - (j + o) = i - j, as in its own row.  Fewer rows means fewer (rows, heads, T, T) scores
-- the attention's cost -- when lengths vary (the quick distance task: lengths 6..58).  The free
columns at a row's end form one more segment that attends to itself (so no softmax row is all
-inf); its outputs are never read.

The logits are those of the padded computation up to float rounding (summation order, the
rotation angles of shifted columns).  The model packs only when nothing could see the
difference: padding masked, no hook attached (a hook sees the (batch, pos, ...) layouts), no head
ablation; it merges rows only for PEs whose parts all have a Toeplitz form
(:data:`posenc.parts.NOT_TOEPLITZ`).  A batch without padding is packed too (``dense``: every
token real, the layouts are reshapes of each other), so that its blocks can run as the sub-layer
functions of :mod:`.attention_residual` / :mod:`.mlp_residual`, which take the (N, D) layout.
See :class:`~posenc.empirical.model.Transformer`.
"""

from __future__ import annotations

from typing import Optional

import torch



class Packing:
    """The real tokens of a (batch, T) batch: ``keep`` (batch, T) bool, False = padding."""

    def __init__(self, keep: torch.Tensor, merge: bool = False):
        self.batch, self.seq = int(keep.shape[0]), int(keep.shape[1])
        self.index = keep.reshape(-1).nonzero().squeeze(1)  # (N,) flat positions b * T + t
        self.example = torch.div(self.index, self.seq, rounding_mode="floor")  # (N,) its b
        self.counts = keep.sum(dim=1)  # (batch,) real tokens per example
        self.segments: Optional[torch.Tensor] = None  # (rows, T) segment id per slot, merged only
        self.rows, self.slots = self.batch, self.index  # unmerged: row b = example b
        if merge and bool((keep == (torch.arange(self.seq, device=keep.device)[None, :]
                                    < self.counts[:, None])).all()):  # real tokens a prefix
            self._merge(self.counts.tolist(), keep.device)

    def _merge(self, lengths: list[int], device: torch.device) -> None:
        """First-fit decreasing: each example (longest first, ties by index) goes to the first row
        with room; ``slots`` maps packed token n to row * T + column."""
        T = self.seq
        room: list[int] = []  # free columns of each row
        used: list[int] = []  # segments placed in each row so far
        start = [0] * self.batch  # row * T + first column of each example
        rank = [0] * self.batch  # its segment's number within its row
        for b in sorted(range(self.batch), key=lambda i: (-lengths[i], i)):
            row = next((r for r, free in enumerate(room) if free >= lengths[b]), len(room))
            if row == len(room):
                room.append(T)
                used.append(0)
            start[b], rank[b] = row * T + (T - room[row]), used[row]
            room[row] -= lengths[b]
            used[row] += 1
        if len(room) == self.batch:
            return  # nothing shares a row: the plain layout
        offsets = torch.tensor(start, dtype=torch.long, device=device)  # (batch,)
        column = self.index - self.example * T  # (N,) position in the example
        self.rows, self.slots = len(room), offsets[self.example] + column
        segments = torch.full((self.rows * T,), -1, dtype=torch.long, device=device)
        self.segments = segments.index_copy(0, self.slots, self.example).view(self.rows, T)
        # the segment's number within its row; the free columns at a row's end: one more
        tail = torch.tensor(used, dtype=torch.long, device=device).repeat_interleave(T)
        ranks = torch.tensor(rank, dtype=torch.long, device=device)[self.example]
        self.local = tail.index_copy(0, self.slots, ranks).view(self.rows, T)  # (rows, T)
        self.n_local = max(u + (f > 0) for u, f in zip(used, room))  # segments in the fullest row

    @property
    def merged(self) -> bool:
        return self.segments is not None

    @property
    def n_tokens(self) -> int:
        return int(self.index.shape[0])

    def block_mask(self, dtype: torch.dtype) -> torch.Tensor:
        """(rows, T, T) additive: 0 where query and key are in one segment, -inf elsewhere."""
        assert self.segments is not None
        same = self.segments[:, :, None] == self.segments[:, None, :]
        return torch.where(same, torch.zeros((), dtype=dtype, device=same.device),
                           torch.full((), float("-inf"), dtype=dtype, device=same.device))

    def score_columns(self, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """The block mask as extra columns of q and k, (rows, 1, T, S) each (S segments in the
        fullest row): ``[q, e_i] . [k, BIG (e_j - 1)] = q.k - BIG [segment(i) != segment(j)]``
        with e the one-hot of a slot's segment number and BIG the dtype's largest finite number
        (not a fixed gap: scores can be large, e.g. xpos with a small scale_base, ~1e6 x q.k
        across a row).  A cross-segment score is then -BIG or -inf for every finite q.k, and
        its exp is 0, so the softmax equals the -inf mask's exactly; a same-segment score gets
        1 * 0 and 0 * -BIG, exact zeros (no rounding).  (-inf itself would give 0 * -inf = NaN.)"""
        assert self.segments is not None
        one_hot = torch.nn.functional.one_hot(self.local, self.n_local).to(dtype)  # (rows, T, S)
        return one_hot[:, None], ((one_hot - 1) * torch.finfo(dtype).max)[:, None]

    @property
    def dense(self) -> bool:
        """Every token real (no padding): the layouts are reshapes of each other."""
        return self.n_tokens == self.batch * self.seq

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """(rows, T, *rest) -> (N, *rest): the real tokens, in batch-major order."""
        if self.dense:
            return x.reshape(-1, *x.shape[2:])
        return x.reshape(-1, *x.shape[2:]).index_select(0, self.slots)

    def from_batch(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, T, *rest) -> (N, *rest)."""
        if self.dense:
            return x.reshape(self.batch * self.seq, *x.shape[2:])
        return x.reshape(self.batch * self.seq, *x.shape[2:]).index_select(0, self.index)

    def unpack(self, y: torch.Tensor) -> torch.Tensor:
        """(N, *rest) -> (rows, T, *rest) with zeros at the free slots."""
        rest = y.shape[1:]
        if self.dense:
            return y.reshape(self.rows, self.seq, *rest)
        out = y.new_zeros(self.rows * self.seq, *rest).index_copy(0, self.slots, y)
        return out.view(self.rows, self.seq, *rest)

    def mean(self, y: torch.Tensor) -> torch.Tensor:
        """(N, D) -> (batch, D): each example's mean over its real tokens (0 for none)."""
        if self.dense:
            return y.reshape(self.batch, self.seq, -1).mean(dim=1)
        sums = y.new_zeros(self.batch, y.shape[1]).index_add(0, self.example, y)
        return sums / self.counts.clamp(min=1).to(y.dtype)[:, None]
