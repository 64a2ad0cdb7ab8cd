"""The attention kernel: softmax(Q K^T / sqrt(d) + B + M) V, explicitly or by SDPA, chosen by device
and head dim; and the additive score mask of one forward pass.

**Kernel choice** (:func:`use_sdpa`), measured with ``benchmarks/attention_kernel.py`` (forward +
backward of one attention layer, batch 64 x 52 tokens, 8 heads, padding mask, best of 20, by
wall clock and by process CPU time; torch 2.13 on a shared 2-core Xeon with AVX-512 under heavy
background load (load average ~8), 2026-11-30; table in
benchmarks/results/attention_kernel_cpu_2026-11-30.txt).  SDPA / explicit CPU time:

=========  ==========  ==========
head dim   1 thread    2 threads
=========  ==========  ==========
8          1.20        1.69
16         1.16        2.06
32         1.05        0.77
64         1.18        0.77
128        1.19        0.80
=========  ==========  ==========

* CPU: the explicit kernel below for d_qk < ``CPU_SDPA_MIN_HEAD_DIM`` = 32 (it wins clearly at
  8 and 16 -- the quick preset has 8, the paper preset 16); SDPA from 32 on, where it wins at 2
  threads (by ~20%) and loses by 5-19% at 1 thread.
* CUDA: SDPA (flash / memory-efficient kernels).  Not re-measured in this change (no GPU was
  available to it); it is what the model used before on every device.

Hooking ``hook_attn_scores`` or ``hook_pattern`` always takes the explicit kernel.

**Packed forwards** (a CPU, no hook, no ablation: :mod:`.packing`) take neither for the cases
:func:`.packed_attention.covers` lists (no attention dropout, float32 / float64, plain RoPE with
interleaved pairing or no rotation): there the attention is one autograd function
(:mod:`.packed_attention`), and with keys and values from the layer's own input the whole
attention sub-layer is (:mod:`.attention_residual`), as is the MLP sub-layer
(:mod:`.mlp_residual`); when every block is covered, all blocks are one function
(:mod:`.block_stack`).  The explicit kernel below serves the other packed cases (xPos, half
pairing, MLA, dropout in training, bfloat16), with the mask rules that follow.

**Mask** (:class:`ScoreMask`): built once per forward and shared by every layer: the padding
keys as a (batch, T) additive vector (0 / -inf) -- or, in a packed forward with merged rows
(:mod:`.packing`), the (rows, T, T) block mask of the rows' segments -- and the causal triangle
(T, T).  Without a bias or the causal triangle the explicit kernel folds the mask into the score
GEMM as extra columns of q and k (:meth:`ScoreMask.score_columns`; no pass over the scores);
with a PE bias or the causal triangle, M + B is materialised as (batch * heads, T, T) once per
forward for a fixed bias (ALiBi, custom kernels: one module shared by all layers, so every layer
hits the same entry) or per layer for a learned one, and added inside the GEMM (``baddbmm``).
(Adding the small (H, T, T) bias after the GEMM instead measured no faster out of place and
slower in place on the GEMM's output view, whose backward copies the scores.)
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from .packing import Packing

# Smallest d_qk from which SDPA is used on a CPU (measured, see the module doc).
CPU_SDPA_MIN_HEAD_DIM = 32


def use_sdpa(device: torch.device, d_qk: int) -> bool:
    """True: run SDPA; False: the explicit kernel (the measured choice, module doc)."""
    return device.type != "cpu" or d_qk >= CPU_SDPA_MIN_HEAD_DIM


def use_packing(device: torch.device) -> bool:
    """Whether forwards on ``device`` may run packed (:mod:`.packing`): measured on a CPU
    (benchmarks/train_step.py); not on a GPU (none was available to measure it, and packing costs
    host synchronisations there), so a GPU keeps the padded layout."""
    return device.type == "cpu"


class ScoreMask:
    """Additive mask M (0 / -inf) of one forward: padding keys and the causal triangle.

    ``keys``: (batch, T) additive key mask or None; ``causal``: (T, T) or None; ``packing``: the
    real tokens when the token-wise parts run packed (:mod:`.packing`), else None.  With merged
    rows ``keys`` is None and :attr:`blocks` holds the mask instead; ``dtype`` is the masks' dtype.
    """

    def __init__(self, keys: Optional[torch.Tensor], causal: Optional[torch.Tensor], seq: int,
                 packing: Optional[Packing] = None, dtype: torch.dtype = torch.float32):
        self.keys, self.causal, self.seq, self.packing, self.dtype = keys, causal, seq, packing, dtype
        self._memo: dict[tuple, tuple[Optional[torch.Tensor], Optional[torch.Tensor]]] = {}
        self._columns: dict[torch.dtype, Optional[tuple[torch.Tensor, torch.Tensor]]] = {}
        self._blocks: Optional[torch.Tensor] = None

    @property
    def merged(self) -> bool:
        return self.packing is not None and self.packing.merged

    @property
    def blocks(self) -> Optional[torch.Tensor]:
        """(rows, T, T) additive mask of merged rows (each query on its own segment's keys), or
        None; built on first use -- the packed attention (:meth:`packed_constant`), a bias, the
        causal triangle or SDPA need it; the explicit kernel without them takes
        :meth:`score_columns` instead."""
        if self._blocks is None and self.merged:
            assert self.packing is not None
            self._blocks = self.packing.block_mask(self.dtype)
        return self._blocks

    @classmethod
    def build(cls, keep: Optional[torch.Tensor], causal: bool, seq: int, dtype: torch.dtype,
              device: torch.device, pack: bool = False, merge: bool = False) -> "ScoreMask":
        """keep (B, T) bool (False = padding key) or None; causal: mask j > i; pack: run the
        token-wise parts on the real tokens only (all of them without padding); merge: let
        short examples share attention rows (:mod:`.packing`; only for PEs that see i - j)."""
        padded = keep is not None and not bool(keep.all())  # no padding: no mask
        # packed even without padding (every token real): the sub-layer functions need the layout
        packing = Packing(keep, merge and padded) if pack and keep is not None else None
        keys = None
        if padded and not (packing is not None and packing.merged):  # merged: the blocks instead
            keys = torch.zeros(keep.shape, dtype=dtype, device=device).masked_fill(~keep, float("-inf"))
        tri = None
        if causal:
            tri = torch.zeros(seq, seq, dtype=dtype, device=device).masked_fill(
                torch.ones(seq, seq, dtype=torch.bool, device=device).triu(1), float("-inf"))
        return cls(keys, tri, seq, packing, dtype)

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

    def score_columns(self, dtype: torch.dtype) -> Optional[tuple[torch.Tensor, torch.Tensor]]:
        """The mask (without causal triangle) as extra columns of q and k, (B, 1, T, S) each, or
        None without one: padding keys ``[1] . [m_j]``; merged rows
        :meth:`.packing.Packing.score_columns`.  Built once per forward (memo)."""
        if dtype not in self._columns:
            cols: Optional[tuple[torch.Tensor, torch.Tensor]] = None
            if self.merged:
                assert self.packing is not None
                cols = self.packing.score_columns(dtype)
            elif self.keys is not None:
                keys = self.keys.to(dtype)[:, None, :, None]  # (B, 1, T, 1)
                cols = (torch.ones_like(keys), keys)
            self._columns[dtype] = cols
        return self._columns[dtype]

    def repeat(self, times: int) -> "ScoreMask":
        """The mask of a batch repeated ``times`` (ablation variants, variant-major)."""
        if self.packing is not None:
            raise ValueError("a packed forward has no ablation variants")
        if self.keys is None:
            return self
        return ScoreMask(self.keys.repeat(times, 1), self.causal, self.seq, dtype=self.dtype)

    def small(self, bias: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """B + causal triangle, (H or 1, T, T), or None."""
        if bias is None:
            return None if self.causal is None else self.causal[None]
        return bias if self.causal is None else bias + self.causal

    def additive(self, bias: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """The whole M + B, broadcastable to (B, H, T, T) (for SDPA), or None."""
        small = self.small(bias)
        if self.keys is not None:
            base: Optional[torch.Tensor] = self.keys[:, None, None, :]
        else:
            base = None if self.blocks is None else self.blocks[:, None]
        if base is None:
            return None if small is None else small[None]
        return base if small is None else base + small[None]

    def flat(self, bias: Optional[torch.Tensor], batch: int, heads: int) -> Optional[torch.Tensor]:
        """M + B as (batch * heads, T, T) (or (1, T, T) when the same for all), or None."""
        if bias is not None and bias.requires_grad:  # a learned bias: per layer, no memo
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


def explicit_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: ScoreMask,
                       bias: Optional[torch.Tensor], dropout: float, scores_hook=None,
                       pattern_hook=None) -> torch.Tensor:
    """q, k (B, H, T, d_qk), v (B, H, T, dh) -> z (B, H, T, dh).

    Scores: with a bias or the causal triangle, ``baddbmm`` adds M + B (materialised once per
    forward and shared by the layers, :meth:`ScoreMask.flat`) inside the GEMM.  With the padding
    mask alone, it rides in the GEMM instead: q gets a last coordinate 1 and k the key's mask
    value (0 or -inf), so ``[q/sqrt(d), 1] . [k, m_j] = q.k/sqrt(d) + m_j`` and nothing of size
    (B, H, T, T) is materialised besides the scores.  (The extra column of dq is 0 * -inf at
    masked keys; it belongs to the constant 1 and is dropped, so no NaN reaches a gradient.)
    Merged rows' block mask rides the same way, as one-hot segment columns
    (:meth:`~posenc.empirical.packing.Packing.score_columns`).
    ``scores_hook`` / ``pattern_hook``: functions of the (B, H, T, T) scores / pattern, or None.
    """
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
    if scores_hook is not None:
        scores = scores_hook(scores)
    pattern = scores.softmax(dim=-1)
    if pattern_hook is not None:
        pattern = pattern_hook(pattern)
    if dropout:
        pattern = F.dropout(pattern, dropout)
    return torch.matmul(pattern, v)  # (B, H, T, dh)
