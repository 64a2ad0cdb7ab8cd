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
"""

from __future__ import annotations

import torch
from torch import nn

from ...encodings import MLA
from .attention import AttentionBase, run_head_hook
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

    def project(self, x: torch.Tensor, kv: torch.Tensor, offset: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, D), kv (Bk, T, D) -> q, k (B or Bk, H, T, dh + r; the RoPE part rotated),
        v (Bk, H, T, dh)."""
        B, T, _ = x.shape
        H, dh, r = self.n_heads, self.head_dim, self.rope_dim
        x, kv = run_hook(self.hook_q_in, x), run_hook(self.hook_kv_in, kv)
        Bk = kv.shape[0]
        c_q = self.q_down(x)  # (B, T, q_latent)
        c_kv = self.kv_down(kv)  # (Bk, T, kv_latent)
        q_c = self.q_up(c_q).view(B, T, H, dh).transpose(1, 2)  # (B, H, T, dh)
        q_r = self.q_rope(c_q).view(B, T, -1, r).transpose(1, 2).expand(B, H, T, r)  # (B, H, T, r)
        k_c = self.k_up(c_kv).view(Bk, T, H, dh).transpose(1, 2)
        k_r = self.k_rope(kv).view(Bk, T, -1, r).transpose(1, 2).expand(Bk, H, T, r)
        v = self.v_up(c_kv).view(Bk, T, H, dh).transpose(1, 2)
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
