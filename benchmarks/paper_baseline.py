"""A plain-PyTorch model of the paper's code architecture, the baseline of train_step.py.

Written from reading the paper's code (Qihuai27/Deposit-Pattern-Research, dis_gen/trans.py:
``TransformerDecoder`` / ``AttentionDecoderLayer``), not copied; what it does per step:

* input: token embedding + a positional term recomputed or re-read every step -- ``absolute``:
  a sinusoidal table (sin on even, cos on odd dims); ``rope``: concat(sin, cos) of
  position x inverse frequencies over d_model, ADDED to the embedding (as the paper's code does
  besides rotating q and k); ``alibi`` / ``nope``: a zero tensor of the input's shape, added;
* keys and values of every layer are computed from that input embedding (not layer-normed);
  queries from LayerNorm1 of the residual stream; q, k, v, out: four ``nn.Linear`` with bias;
* heads by view/transpose, then reshaped to (batch * heads, seq, head_dim); RoPE on q and k by
  recomputing the angles, ``view(..., d/2, 2)`` and ``stack`` every call (interleaved pairs,
  theta_m = 10000^(-2m/d_head)); q multiplied by 1/sqrt(d_head); scores by ``matmul``;
  ALiBi (slopes exp(-h/H), -slope |i - j|) rebuilt on every forward and added;
* softmax, dropout, ``matmul`` with v, heads merged, out projection, dropout, residual;
  pre-LN feed-forward Linear-ReLU-Linear, dropout, residual;
* no final LayerNorm; mean over ALL positions (padding is not masked); one Linear classifier.

:class:`PaperMLAModel` is the same for ``dis_gen/mla.py`` (``MLATransformerDecoder``): a learned
position table (1, max_len, D) added to the embedding; per layer pre-LN latent attention on the
layer-normed residual stream -- c_q = W_DQ x, c_kv = W_DKV x, content parts W_UQ c_q, W_UK c_kv,
values W_UV c_kv, one decoupled part W_QR c_q / W_KR x (head_dim wide, shared by the heads)
through the code's mix of sin/cos (the even and odd entries of cat[sin, cos], output as
cat[even part, odd part]: not a rotation), scores over [content ; decoupled] / sqrt(2 head_dim),
padding keys masked; no projection biases; feed-forward Linear-GELU-Dropout-Linear-Dropout; a
final LayerNorm, mean over the real tokens, one Linear classifier.

Parameter names are the code's, so :func:`code_state_dict` gives a state dict that
``posenc.empirical.training.paper_import.convert`` maps onto posenc's paper-code model.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def _inv_freq(dim: int) -> torch.Tensor:
    return 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))


class PaperLayer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, pe: str):
        super().__init__()
        self.d_model, self.n_heads, self.head_dim, self.pe = d_model, n_heads, d_model // n_heads, pe
        self.q_linear, self.k_linear = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.v_linear, self.out_linear = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.dropout = nn.Dropout(dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.register_buffer("inv_freq", _inv_freq(self.head_dim))

    def rope(self, t: torch.Tensor) -> torch.Tensor:  # (batch * heads, seq, head_dim)
        n, T, d = t.shape
        ang = torch.arange(T, dtype=torch.float, device=t.device)[:, None] * self.inv_freq[None, :]
        sin, cos = torch.sin(ang), torch.cos(ang)
        t = t.view(n, T, d // 2, 2)
        out = torch.stack([t[..., 0] * cos - t[..., 1] * sin, t[..., 0] * sin + t[..., 1] * cos], -1)
        return out.view(n, T, d)

    def alibi(self, T: int) -> torch.Tensor:  # (heads, seq, seq), rebuilt every forward
        H = self.n_heads
        m = torch.exp(-torch.arange(0, H).float() / H)
        rel = torch.arange(T).unsqueeze(0) - torch.arange(T).unsqueeze(1)
        return -torch.abs(rel).unsqueeze(0) * m[:, None, None]

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        H, d = self.n_heads, self.head_dim
        q = self.q_linear(self.norm1(x))
        k, v = self.k_linear(memory), self.v_linear(memory)
        q = q.view(B, T, H, d).transpose(1, 2).reshape(B * H, T, d)
        k = k.view(B, T, H, d).transpose(1, 2).reshape(B * H, T, d)
        v = v.view(B, T, H, d).transpose(1, 2).reshape(B * H, T, d)
        if self.pe == "rope":
            q, k = self.rope(q), self.rope(k)
        q = q * (1.0 / d ** 0.5)
        scores = torch.matmul(q, k.transpose(-2, -1))
        if self.pe == "alibi":
            scores = (scores.view(B, H, T, T) + self.alibi(T).to(scores.device)).view(B * H, T, T)
        w = self.dropout(F.softmax(scores, dim=-1))
        z = torch.matmul(w, v).view(B, H, T, d).transpose(1, 2).reshape(B, T, self.d_model)
        x = x + self.dropout(self.out_linear(z))
        return x + self.dropout(self.ffn(self.norm2(x)))


class PaperModel(nn.Module):
    """``forward(tokens (B, T)) -> logits (B, n_classes)``; pe in absolute, rope, alibi, nope."""

    def __init__(self, vocab: int, n_classes: int, d_model: int, n_heads: int, n_layers: int,
                 d_ff: int, dropout: float, pe: str, max_len: int):
        super().__init__()
        if pe not in ("absolute", "rope", "alibi", "nope"):
            raise ValueError(f"paper baseline has no PE {pe!r}")
        self.pe, self.d_model = pe, d_model
        self.embedding = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(PaperLayer(d_model, n_heads, d_ff, dropout, pe)
                                    for _ in range(n_layers))
        self.fc_out = nn.Linear(d_model, n_classes)
        pos = torch.arange(0, max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float) * -(math.log(10000.0) / d_model))
        table = torch.zeros(max_len, d_model)
        table[:, 0::2], table[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("absolute", table)
        self.register_buffer("inv_freq", _inv_freq(d_model))

    def positional(self, tokens: torch.Tensor) -> torch.Tensor:
        B, T = tokens.shape
        if self.pe == "absolute":
            return self.absolute[:T].unsqueeze(0)
        if self.pe == "rope":  # the input-side term of the paper's RoPE module
            ang = torch.einsum("i,j->ij", torch.arange(T, dtype=torch.float, device=tokens.device),
                               self.inv_freq)
            return torch.cat([torch.sin(ang), torch.cos(ang)], dim=-1).unsqueeze(0).expand(B, -1, -1)
        return torch.zeros(B, T, self.d_model, device=tokens.device)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        emb = self.embedding(tokens)
        if self.pe != "nope":
            emb = emb + self.positional(tokens)
        x = emb
        for layer in self.layers:
            x = layer(x, emb)  # keys and values from the input embedding in every layer
        return self.fc_out(x.mean(dim=1))


def _mla_mix(t: torch.Tensor, T: int) -> torch.Tensor:
    """The paper MLA's position mix of (..., T, d): sin and cos are the even and odd entries of
    cat[sin, cos] of position x inverse frequencies; out: cat[even cos' - odd sin', even sin' +
    odd cos'] (halves, not interleaved)."""
    d = t.shape[-1]
    ang = torch.arange(T, dtype=torch.float, device=t.device)[:, None] * _inv_freq(d).to(t.device)
    table = torch.cat([ang.sin(), ang.cos()], dim=-1)  # (T, d)
    s, c = table[:, 0::2], table[:, 1::2]
    even, odd = t[..., 0::2], t[..., 1::2]
    return torch.cat([even * c - odd * s, even * s + odd * c], dim=-1)


class PaperMLAAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, latent: int):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        dh = self.head_dim
        self.W_DKV, self.W_DQ = nn.Linear(d_model, latent, bias=False), nn.Linear(d_model, latent, bias=False)
        self.W_UK, self.W_UV = nn.Linear(latent, d_model, bias=False), nn.Linear(latent, d_model, bias=False)
        self.W_UQ = nn.Linear(latent, d_model, bias=False)
        self.W_KR, self.W_QR = nn.Linear(d_model, dh, bias=False), nn.Linear(latent, dh, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        H, dh = self.n_heads, self.head_dim
        c_kv, c_q = self.W_DKV(x), self.W_DQ(x)
        k_r = _mla_mix(self.W_KR(x), T)[:, None].expand(B, H, T, dh)
        q_r = _mla_mix(self.W_QR(c_q), T)[:, None].expand(B, H, T, dh)
        k = torch.cat([self.W_UK(c_kv).view(B, T, H, dh).transpose(1, 2), k_r], dim=-1)
        q = torch.cat([self.W_UQ(c_q).view(B, T, H, dh).transpose(1, 2), q_r], dim=-1)
        v = self.W_UV(c_kv).view(B, T, H, dh).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(2 * dh)
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        z = torch.matmul(F.softmax(scores, dim=-1), v).transpose(1, 2).reshape(B, T, D)
        return self.out_proj(z)


class PaperMLALayer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, latent: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = PaperMLAAttention(d_model, n_heads, latent)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(d_ff, d_model), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), keep)
        return x + self.ffn(self.norm2(x))


class PaperMLAModel(nn.Module):
    """``forward(tokens (B, T)) -> logits (B, n_classes)``: dis_gen/mla.py's model (module doc);
    padding is token 0 (the code's attention_mask: tokens != 0)."""

    def __init__(self, vocab: int, n_classes: int, d_model: int, n_heads: int, n_layers: int,
                 d_ff: int, dropout: float, latent: int, max_len: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.pos_embed = nn.Parameter(torch.zeros(1, max_len, d_model))
        self.layers = nn.ModuleList(PaperMLALayer(d_model, n_heads, d_ff, dropout, latent)
                                    for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.fc_out = nn.Linear(d_model, n_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        keep = tokens != 0
        x = self.embedding(tokens) + self.pos_embed[:, :tokens.shape[1]]
        for layer in self.layers:
            x = layer(x, keep)
        w = keep.to(x.dtype)[:, :, None]
        return self.fc_out((self.ln_f(x) * w).sum(1) / w.sum(1))


def code_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """``model``'s parameters under the paper code's names (what its scripts save): the
    baseline's parameter names are the code's; the code's RoPE stores its inverse frequencies as
    the buffers ``position_encoding.inv_freq`` (over d_model) and ``layers.L.rope.inv_freq`` (over
    the head dim), added here for a :class:`PaperModel` with pe ``rope``."""
    sd = {k: v.detach().clone() for k, v in model.named_parameters()}
    if isinstance(model, PaperModel) and model.pe == "rope":
        sd["position_encoding.inv_freq"] = model.inv_freq.clone()
        for l, layer in enumerate(model.layers):
            sd[f"layers.{l}.rope.inv_freq"] = layer.inv_freq.clone()
    return sd
