"""Packed tokens: the real (non-padding) tokens of a padded batch as one (N, ...) tensor, and the
rows the attention sees them in.

With the padding mask on, a padding position's hidden state never reaches a logit: it is a masked
key (weight 0 in every softmax row, so its value is never read either) and has weight 0 in the
mean pooling.  The token-wise parts of a block -- the LayerNorms, the Q/K/V and output
projections, the MLP, the residual adds, dropout after them -- therefore need only the real
tokens.  The fast path runs them on the packed ``(N, D)`` tokens (N = number of real tokens, in
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
rotation angles of shifted columns).  The fast path packs only when nothing could see the
difference: no hook attached (a hook sees the (batch, pos, ...) layouts), no head
ablation (:func:`posenc.empirical.fast.why_not`); it merges rows only for PEs whose parts all have
a Toeplitz form (:data:`posenc.encodings.parts.NOT_TOEPLITZ`; :func:`.packed.merges_rows`).  A batch
without padding is packed too (``dense``: every token real, the layouts are reshapes of each
other), so that its blocks can run as the sub-layer functions of :mod:`.attention_sublayer` /
:mod:`.mlp_sublayer`, which take the (N, D) layout.
With padding not masked (``mask_padding=False``) every position counts as real (a dense
batch).  See :mod:`.packed`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch


def index_tensor(a: np.ndarray, device: torch.device) -> torch.Tensor:
    """An integer numpy array as an int64 torch tensor on ``device`` (no copy on a CPU)."""
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)).to(device)


class Packing:
    """The real tokens of a (batch, T) batch: ``keep`` (batch, T) bool, False = padding.

    The index maps are computed once per forward with numpy on the host: a few dozen small
    integer operations, each cheaper to dispatch in numpy than in torch (with the block mask and
    :class:`~.packed_attention.HeadSlots`, ~0.2 ms instead of ~0.3 ms per forward of a quick
    batch on this project's 2-core machine, 2026-12-01); torch takes the arrays without a copy
    (then moves them to ``keep``'s device)."""

    def __init__(self, keep: torch.Tensor, merge: bool = False):
        self.batch, self.seq = int(keep.shape[0]), int(keep.shape[1])
        device = keep.device
        k = keep.detach().cpu().numpy()  # (batch, T) bool
        index = np.flatnonzero(k)  # (N,) flat positions b * T + t
        example = index // self.seq  # (N,) its b
        counts = k.sum(axis=1)  # (batch,) real tokens per example
        columns = index - example * self.seq  # (N,) position t in the example
        self.index, self.example = index_tensor(index, device), index_tensor(example, device)
        self.columns = index_tensor(columns, device)
        self.counts = index_tensor(counts, device)
        self.segments: Optional[torch.Tensor] = None  # (rows, T) segment id per slot, merged only
        self.rows, self.slots = self.batch, self.index  # unmerged: row b = example b
        if merge and bool((k == (np.arange(self.seq)[None, :] < counts[:, None])).all()):
            self._merge(counts.tolist(), example, columns, device)  # real tokens a prefix

    def _merge(self, lengths: list[int], example: np.ndarray, columns: np.ndarray,
               device: torch.device) -> None:
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
        slots = np.asarray(start, dtype=np.int64)[example] + columns
        segments = np.full(len(room) * T, -1, dtype=np.int64)
        segments[slots] = example
        # the segment's number within its row; the free columns at a row's end: one more
        local = np.repeat(np.asarray(used, dtype=np.int64), T)
        local[slots] = np.asarray(rank, dtype=np.int64)[example]
        self.rows, self.slots = len(room), index_tensor(slots, device)
        self.segments = index_tensor(segments.reshape(self.rows, T), device)
        # each row's segments as column ranges [a, b), the free columns at its end included
        self._ranges = [(s // T, s % T, s % T + n) for s, n in zip(start, lengths)]
        self._ranges += [(r, T - f, T) for r, f in enumerate(room) if f > 0]
        self.local = index_tensor(local.reshape(self.rows, T), device)  # (rows, T)
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
        mask = np.full((self.rows, self.seq, self.seq), -np.inf, dtype=np.float32)
        for r, a, b in self._ranges:  # a segment's block (on the host: ~2x faster than torch.where)
            mask[r, a:b, a:b] = 0
        return torch.from_numpy(mask).to(device=self.segments.device, dtype=dtype)  # 0/-inf: exact

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
