"""The attention kernel: softmax(Q K^T / sqrt(d) + B + M) V, explicitly or by SDPA, chosen by device
and head dim; and the additive score mask of one forward pass.

**Kernel choice** (:func:`use_sdpa`), measured with ``benchmarks/attention_kernel.py`` (forward +
backward of one attention layer, batch 64 x 52 tokens, 8 heads, padding mask, best of 20,
torch 2.13 on a shared 2-core Xeon with AVX-512, 2026-11-30; the full table is in
benchmarks/results/attention_kernel_cpu_2026-11-30.txt):

* CPU: the explicit kernel -- ``baddbmm`` (mask + bias added inside the GEMM), ``softmax``,
  ``bmm`` -- is faster than SDPA's CPU flash kernel for every head dim up to
  ``CPU_SDPA_MIN_HEAD_DIM`` (exclusive); above it SDPA is used.
* CUDA: SDPA (flash / memory-efficient kernels).  Not re-measured in this change (no GPU was
  available to it); it is what the model used before on every device.

Hooking ``hook_attn_scores`` or ``hook_pattern`` always takes the explicit kernel.

**Mask** (:class:`ScoreMask`): padding keys (when masked) and the causal upper triangle are one
additive tensor M (0 / -inf) built once per forward and shared by every layer.  For the explicit
kernel, M + B (the layer's PE bias) is materialised once as (batch * heads, T, T) and reused by
every layer whose bias is the same tensor (fixed biases -- ALiBi, custom kernels -- are one
shared module, so all layers hit the same entry); a learned bias is added per layer.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

# Smallest d_qk for which SDPA beats the explicit kernel on a CPU (see the module doc).
CPU_SDPA_MIN_HEAD_DIM = 64


def use_sdpa(device: torch.device, d_qk: int) -> bool:
    """True: run SDPA; False: the explicit kernel (the measured choice, module doc)."""
    return device.type != "cpu" or d_qk >= CPU_SDPA_MIN_HEAD_DIM


class ScoreMask:
    """Additive mask M (0 / -inf) of one forward: padding keys and the causal triangle.

    ``base``: (batch or 1, 1, T or 1, T) or None (nothing masked).
    """

    def __init__(self, base: Optional[torch.Tensor], seq: int):
        self.base, self.seq = base, seq
        self._memo: dict[tuple[int, int], tuple[Optional[torch.Tensor], torch.Tensor]] = {}

    @classmethod
    def build(cls, keep: Optional[torch.Tensor], causal: bool, seq: int, dtype: torch.dtype,
              device: torch.device) -> "ScoreMask":
        """keep (B, T) bool (False = padding key) or None; causal: mask j > i."""
        base = None
        if keep is not None:
            base = torch.zeros(keep.shape[0], 1, 1, seq, dtype=dtype, device=device)
            base = base.masked_fill(~keep[:, None, None, :], float("-inf"))
        if causal:
            upper = torch.ones(seq, seq, dtype=torch.bool, device=device).triu(1)
            if base is None:
                base = torch.zeros(1, 1, seq, seq, dtype=dtype, device=device)
            base = base.masked_fill(upper, float("-inf"))
        return cls(base, seq)

    def repeat(self, times: int) -> "ScoreMask":
        """The mask of a batch repeated ``times`` (ablation variants, variant-major)."""
        if self.base is None or self.base.shape[0] == 1:
            return self
        return ScoreMask(self.base.repeat(times, 1, 1, 1), self.seq)

    def additive(self, bias: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """M + B broadcastable to (B, H, T, T) (for SDPA and the hooks' view), or None."""
        if bias is None:
            return self.base
        return bias[None] if self.base is None else self.base + bias[None]

    def flat(self, bias: Optional[torch.Tensor], batch: int, heads: int) -> Optional[torch.Tensor]:
        """M + B as (batch * heads, T, T) (or (1, T, T) when it is the same for all), or None."""
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


def explicit_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       flat_mask: Optional[torch.Tensor], dropout: float, scores_hook=None,
                       pattern_hook=None) -> torch.Tensor:
    """q, k (B, H, T, d_qk), v (B, H, T, dh), flat_mask (B*H or 1, T, T) -> z (B, H, T, dh).

    ``scores_hook`` / ``pattern_hook``: functions of the (B, H, T, T) tensors (or None).
    """
    B, H, T, d = q.shape
    qf, kf = q.reshape(B * H, T, d), k.reshape(B * H, T, d)
    scale = d ** -0.5
    if flat_mask is None:
        scores = torch.bmm(qf, kf.transpose(1, 2)).mul_(scale)
    else:
        scores = torch.baddbmm(flat_mask, qf, kf.transpose(1, 2), alpha=scale)  # (B*H, T, T)
    if scores_hook is not None:
        scores = scores_hook(scores.view(B, H, T, T)).reshape(B * H, T, T)
    pattern = scores.softmax(dim=-1)
    if pattern_hook is not None:
        pattern = pattern_hook(pattern.view(B, H, T, T)).reshape(B * H, T, T)
    if dropout:
        pattern = F.dropout(pattern, dropout)
    return torch.bmm(pattern, v.reshape(B * H, T, v.shape[-1])).view(B, H, T, v.shape[-1])
