"""Multi-head latent attention with decoupled RoPE (DeepSeek-V2, 2024).

Per head h, with x the normed query input and y the normed key/value input:

    c_q = W_dq x            (q_latent)        c_kv = W_dkv y           (kv_latent)
    q_h = [W_uq[h] c_q ; rot(W_qr[h] c_q)]     k_h = [W_uk[h] c_kv ; rot(W_kr y)]
    v_h = W_uv[h] c_kv

The content parts (head_dim wide) carry no position; the decoupled parts
(``rope_dim`` wide) are rotated by RoPE with ``theta_m = base^(-2m/rope_dim)``
and interleaved pairing; with ``shared_rope_key`` one ``W_kr`` (rope_dim, D)
serves every head, otherwise one per head.  Scores are scaled by
``1 / sqrt(head_dim + rope_dim)``.  Latent widths default to
``min(4 * head_dim, d_model)``.  No layer norm on the latents (DeepSeek-V2 has
one; we leave it out so the logit is a plain bilinear form).

``rope=paper_code`` is the paper code's MLA (``dis_gen/mla.py``): one ``W_qr``
(rope_dim, q_latent) shared by every head (like ``W_kr``), ``rope_dim`` =
head_dim by default, the "rotation" :class:`~posenc.empirical.model.pe.rotary.PaperCodeMix`
(not a rotation), and no bias in the output projection.

A :class:`LatentAblation` gates the latents the up-projections read (``W_uq`` reads c_q,
``W_uk`` and ``W_uv`` read c_kv; ``W_qr`` still reads the whole c_q): the paper code's MLA
ablation (``dis_gen/mlavis.py``, which zeroes input columns of the three up-projections), all
its variants of one layer in one pass; see :mod:`posenc.empirical.analysis.latent_ablation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from ...encodings import MLA
from .attention import Ablation, AttentionBase, run_head_hook
from .hooks import run_hook
from ...encodings.parts import structure
from .pe.rotary import MLA_FORMULAS


class MLAAttention(AttentionBase):
    def __init__(self, d_model: int, n_heads: int, spec: MLA, dropout: float = 0.0,
                 device: str | torch.device = "cpu"):
        paper = spec.rope == "paper_code"
        rope_dim = spec.resolved_rope_dim(d_model // n_heads)
        super().__init__(d_model, n_heads, dropout, bias=None, d_qk=d_model // n_heads + rope_dim,
                         rotary_hooks=True, out_bias=not paper, device=device)
        dh = self.head_dim
        self.q_latent = spec.q_latent or min(4 * dh, d_model)
        self.kv_latent = spec.kv_latent or min(4 * dh, d_model)
        self.rope_dim = rope_dim
        self.shared_rope_key = spec.shared_rope_key
        H, r = n_heads, self.rope_dim
        self.q_down = nn.Linear(d_model, self.q_latent, bias=False)  # W_dq
        self.q_up = nn.Linear(self.q_latent, H * dh, bias=False)  # W_uq
        self.q_rope = nn.Linear(self.q_latent, r if paper else H * r, bias=False)  # W_qr
        self.kv_down = nn.Linear(d_model, self.kv_latent, bias=False)  # W_dkv
        self.k_up = nn.Linear(self.kv_latent, H * dh, bias=False)  # W_uk
        self.v_up = nn.Linear(self.kv_latent, H * dh, bias=False)  # W_uv
        self.k_rope = nn.Linear(d_model, r if self.shared_rope_key else H * r, bias=False)  # W_kr
        self.rotary = MLA_FORMULAS[structure(spec).mla.kind](spec, r)

    def project(self, x: torch.Tensor, kv: torch.Tensor, offset: int,
                latent: Optional["LatentAblation"] = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, D), kv (Bk, T, D) -> q, k (B or Bk, H, T, dh + r; the RoPE part rotated),
        v (Bk, H, T, dh); with ``latent`` (V variants) V * B and V * Bk rows, variant-major."""
        B, T, _ = x.shape
        H, dh, r = self.n_heads, self.head_dim, self.rope_dim
        x, kv = run_hook(self.hook_q_in, x), run_hook(self.hook_kv_in, kv)
        Bk = kv.shape[0]
        c_q = self.q_down(x)  # (B, T, q_latent)
        c_kv = self.kv_down(kv)  # (Bk, T, kv_latent)
        V = 1 if latent is None else latent.n_variants
        up_q = c_q if latent is None else latent.gated(latent.q_gate, c_q)  # (V * B, T, q_latent)
        up_kv = c_kv if latent is None else latent.gated(latent.kv_gate, c_kv)  # (V * Bk, ..)
        q_c = self.q_up(up_q).view(V * B, T, H, dh).transpose(1, 2)  # (V * B, H, T, dh)
        q_r = self.q_rope(c_q).view(B, T, -1, r).transpose(1, 2).expand(B, H, T, r)  # (B, H, T, r)
        k_c = self.k_up(up_kv).view(V * Bk, T, H, dh).transpose(1, 2)
        k_r = self.k_rope(kv).view(Bk, T, -1, r).transpose(1, 2).expand(Bk, H, T, r)
        v = self.v_up(up_kv).view(V * Bk, T, H, dh).transpose(1, 2)
        if latent is not None:  # the RoPE parts read no gated latent: the same in every variant
            q_r, k_r = q_r.repeat(V, 1, 1, 1), k_r.repeat(V, 1, 1, 1)
        q = torch.cat([q_c, q_r], dim=-1)  # (B, H, T, dh + r), before the rotation
        k = torch.cat([k_c, k_r], dim=-1)
        q, k, v = (run_head_hook(p, t) for p, t in ((self.hook_q, q), (self.hook_k, k), (self.hook_v, v)))
        q = torch.cat([q[..., :dh], self.rotary(q[..., dh:], offset)], dim=-1)
        k = torch.cat([k[..., :dh], self.rotary(k[..., dh:], offset)], dim=-1)
        return run_head_hook(self.hook_rot_q, q), run_head_hook(self.hook_rot_k, k), v

    def head_weights(self) -> dict[str, torch.Tensor]:
        """Effective per-head maps from the normed input (D wide).

        W_q, W_k (H, dh, D) content parts; W_qr, W_kr (H, rope_dim, D) rotary
        parts (W_kr identical across heads when shared); W_v (H, dh, D);
        W_o (H, D, dh).
        """
        H, dh, r, D = self.n_heads, self.head_dim, self.rope_dim, self.d_model
        Wdq, Wdkv = self.q_down.weight.detach(), self.kv_down.weight.detach()
        Wkr = self.k_rope.weight.detach().reshape(-1, r, D).expand(H, r, D)
        return {"W_q": (self.q_up.weight.detach() @ Wdq).reshape(H, dh, D),
                "W_k": (self.k_up.weight.detach() @ Wdkv).reshape(H, dh, D),
                "W_qr": (self.q_rope.weight.detach() @ Wdq).reshape(-1, r, D).expand(H, r, D).clone(),
                "W_kr": Wkr.clone(),
                "W_v": (self.v_up.weight.detach() @ Wdkv).reshape(H, dh, D),
                "W_o": self.out.weight.detach().reshape(D, H, dh).permute(1, 0, 2)}


@dataclass
class LatentAblation(Ablation):
    """Zero latent dimensions at the inputs of ``layer``'s up-projections.

    ``q_gate`` (variants, q_latent) multiplies c_q where ``W_uq`` reads it, ``kv_gate``
    (variants, kv_latent) c_kv where ``W_uk`` and ``W_uv`` read it (1 keeps a dimension, 0
    zeroes it); ``W_qr`` and ``W_kr`` are not gated.  ``W (g * c) = (W diag g) c``: a 0 in the
    gate is a zeroed input column of those weights.  The batch grows to variants x batch
    (variant-major) in the projections; the head outputs pass through unchanged.
    """

    layer: int
    q_gate: torch.Tensor
    kv_gate: torch.Tensor

    @property
    def n_variants(self) -> int:
        return int(self.q_gate.shape[0])

    def problem(self, attn: AttentionBase) -> Optional[str]:
        if not isinstance(attn, MLAAttention):
            return "a latent ablation needs an MLA attention layer (it has no latent)"
        want = ((self.n_variants, attn.q_latent), (self.n_variants, attn.kv_latent))
        got = (tuple(self.q_gate.shape), tuple(self.kv_gate.shape))
        return None if got == want else f"latent gates of shapes {want}; got {got}"

    def project(self, attn: AttentionBase, x: torch.Tensor, kv: torch.Tensor, offset: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        assert isinstance(attn, MLAAttention)  # problem() said so before the forward
        return attn.project(x, kv, offset, latent=self)

    @staticmethod
    def gated(gate: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """gate (V, n), c (B, T, n) -> (V * B, T, n): variant v of example b is gate[v] * c[b]."""
        out = gate.to(c.dtype)[:, None, None, :] * c[None]  # (V, B, T, n)
        return out.reshape(gate.shape[0] * c.shape[0], *c.shape[1:])
