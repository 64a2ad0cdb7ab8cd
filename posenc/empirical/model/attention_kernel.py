"""The attention kernel: softmax(Q K^T / sqrt(d) + B + M) V, explicitly or by SDPA, chosen by device
and head dim; and the additive score mask of one forward pass.

**Kernel choice** (:func:`use_sdpa`), by the measurements of ``benchmarks/attention_kernel.py``
(forward + backward of one attention layer, SDPA vs the explicit kernel by head dim and thread
count; dated figures in ``benchmarks/results/attention_kernel_cpu_*.txt``):

* CPU: the explicit kernel below for d_qk < ``CPU_SDPA_MIN_HEAD_DIM`` = 32 (it wins clearly at
  8 and 16 -- the quick preset has 8, the paper preset 16); SDPA from 32 on, where it wins at 2
  threads (by ~20%) and loses by 5-19% at 1 thread.
* CUDA: SDPA (flash / memory-efficient kernels).  Not re-measured in this change (no GPU was
  available to it); it is what the model used before on every device.

Hooking ``hook_attn_scores`` or ``hook_pattern`` always takes the explicit kernel.

The CPU fast path (:mod:`posenc.empirical.fast`) runs the same kernel on its packed rows, with
a mask of its own (:class:`~posenc.empirical.fast.mask.PackedMask`, a subclass of
:class:`ScoreMask` that adds the merged rows' block mask); nothing here knows about packing.

**Mask** (:class:`ScoreMask`): built once per forward and shared by every layer: the padding
keys as a (batch, T) additive vector (0 / -inf) and the causal triangle (T, T).  Without a bias
or the causal triangle the explicit kernel folds the mask into the score
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

# Smallest d_qk from which SDPA is used on a CPU (measured, see the module doc).
CPU_SDPA_MIN_HEAD_DIM = 32


def use_sdpa(device: torch.device, d_qk: int) -> bool:
    """True: run SDPA; False: the explicit kernel (the measured choice, module doc)."""
    return device.type != "cpu" or d_qk >= CPU_SDPA_MIN_HEAD_DIM


class ScoreMask:
    """Additive mask M (0 / -inf) of one forward: padding keys and the causal triangle.

    ``keys``: (batch, T) additive key mask or None; ``causal``: (T, T) or None; ``dtype`` is the
    masks' dtype.  :meth:`base` and :meth:`score_columns` are the key mask's two forms; the fast
    path's subclass gives them for its merged rows.
    """

    def __init__(self, keys: Optional[torch.Tensor], causal: Optional[torch.Tensor], seq: int,
                 dtype: torch.dtype = torch.float32):
        self.keys, self.causal, self.seq, self.dtype = keys, causal, seq, dtype
        self._memo: dict[tuple, tuple[Optional[torch.Tensor], Optional[torch.Tensor]]] = {}
        self._columns: dict[torch.dtype, Optional[tuple[torch.Tensor, torch.Tensor]]] = {}

    @staticmethod
    def key_mask(keep: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """keep (B, T) bool -> (B, T) additive: 0 at a real key, -inf at padding."""
        return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, float("-inf"))

    @staticmethod
    def triangle(seq: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """(T, T) additive causal mask: -inf above the diagonal (key j > query i)."""
        return torch.zeros(seq, seq, dtype=dtype, device=device).masked_fill(
            torch.ones(seq, seq, dtype=torch.bool, device=device).triu(1), float("-inf"))

    @classmethod
    def build(cls, keep: Optional[torch.Tensor], causal: bool, seq: int, dtype: torch.dtype,
              device: torch.device) -> "ScoreMask":
        """keep (B, T) bool (False = padding key) or None; causal: mask j > i."""
        padded = keep is not None and not bool(keep.all())  # no padding: no mask
        keys = cls.key_mask(keep, dtype) if padded else None
        return cls(keys, cls.triangle(seq, dtype, device) if causal else None, seq, dtype)

    def base(self) -> Optional[torch.Tensor]:
        """The key mask broadcastable to (B, H, T, T), or None."""
        return None if self.keys is None else self.keys[:, None, None, :]

    def score_columns(self, dtype: torch.dtype) -> Optional[tuple[torch.Tensor, torch.Tensor]]:
        """The padding keys as extra columns of q and k, ``[1] . [m_j]``, (B, 1, T, 1) each, or
        None without padding.  Built once per forward (memo)."""
        if dtype not in self._columns:
            cols: Optional[tuple[torch.Tensor, torch.Tensor]] = None
            if self.keys is not None:
                keys = self.keys.to(dtype)[:, None, :, None]  # (B, 1, T, 1)
                cols = (torch.ones_like(keys), keys)
            self._columns[dtype] = cols
        return self._columns[dtype]

    def repeat(self, times: int) -> "ScoreMask":
        """The mask of a batch repeated ``times`` (ablation variants, variant-major)."""
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
        base = self.base()
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
    (The fast path's merged rows ride the same way, as one-hot segment columns.)
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
