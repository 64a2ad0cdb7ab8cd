"""An independent re-implementation of the forward pass of the paper's public code.

Written from reading Qihuai27/Deposit-Pattern-Research (``dis_gen/trans.py``,
``count_gen/partialrope.py``, ``dis_gen/mla.py``), not copied from it: plain
per-head loops and explicit formulas, no posenc code.  Parameter and buffer names
are the paper code's, so ``state_dict()`` of these modules has the key names of a
checkpoint saved by its scripts (``torch.save(model.state_dict(), ...)``).

:func:`mlavis_logits` is the MLA ablation of ``dis_gen/mlavis.py`` read the same way.

``deviation`` switches on one deliberate departure from the code, to show that the
parity tests detect it: ``ln_kv`` (LayerNorm on the key/value input), ``slope_from_1``
(ALiBi slopes exp(-h/H) for h = 1..H), ``true_rotation`` (MLA with a real rotation),
``final_ln`` (a final LayerNorm before pooling), ``masked_pool`` (padding left out of
the pooling), ``interleaved_table`` (the rope model's table interleaved).
"""

from __future__ import annotations

import math

import torch
from torch import nn

TRANS_PES = ("nope", "absolute", "alibi", "relative", "random", "rope")


class _TransLayer(nn.Module):
    """One layer of trans.py / partialrope.py: Q from LN(x), K and V from the embeddings."""

    def __init__(self, d, heads, d_ff, max_len, pe, rope_heads, deviation):
        super().__init__()
        self.h, self.dh, self.pe, self.k, self.dev = heads, d // heads, pe, rope_heads, deviation
        for name in ("q_linear", "k_linear", "v_linear", "out_linear"):
            setattr(self, name, nn.Linear(d, d))
        self.ffn = nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Linear(d_ff, d))
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        if pe == "relative":
            self.relative_bias_table = nn.Parameter(torch.randn(2 * max_len - 1, heads) * 0.02)
        self.max_len = max_len
        if pe == "rope":  # trans.py keeps inv_freq as a (persistent) buffer of its RoPE module
            self.rope = nn.Module()
            self.rope.register_buffer(
                "inv_freq", 1.0 / 10000 ** (torch.arange(0, self.dh, 2).float() / self.dh))
        elif pe == "partial":  # partialrope.py caches interleaved cos / sin tables as buffers
            half = self.dh // 2
            ang = torch.arange(max_len).float()[:, None] / 10000 ** (torch.arange(half).float() / half)
            self.rope = nn.Module()
            self.rope.register_buffer("cos", ang.cos().repeat_interleave(2, dim=1))
            self.rope.register_buffer("sin", ang.sin().repeat_interleave(2, dim=1))

    def _rotate(self, v, n):  # v (n, dh) for positions 0..n-1: plane m = dims (2m, 2m+1)
        out = v.clone()
        for m in range(self.dh // 2):
            th = 10000.0 ** (-2.0 * m / self.dh)
            for p in range(n):
                c, s = math.cos(p * th), math.sin(p * th)
                a, b = v[p, 2 * m], v[p, 2 * m + 1]
                out[p, 2 * m], out[p, 2 * m + 1] = a * c - b * s, a * s + b * c
        return out

    def forward(self, x, memory):
        B, n, _ = x.shape
        kv_in = self.norm1(memory) if self.dev == "ln_kv" else memory
        q, k, v = self.q_linear(self.norm1(x)), self.k_linear(kv_in), self.v_linear(kv_in)
        heads_out = []
        for h in range(self.h):
            sl = slice(h * self.dh, (h + 1) * self.dh)
            qh, kh, vh = q[..., sl], k[..., sl], v[..., sl]
            rotate = self.pe == "rope" or (self.pe == "partial" and h < self.k)
            if rotate:
                qh = torch.stack([self._rotate(qh[b], n) for b in range(B)])
                kh = torch.stack([self._rotate(kh[b], n) for b in range(B)])
            s = qh @ kh.transpose(1, 2) / math.sqrt(self.dh)
            i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
            if self.pe == "alibi":
                slope = math.exp(-(h + (1 if self.dev == "slope_from_1" else 0)) / self.h)
                s = s - slope * (i - j).abs()
            elif self.pe == "relative":
                s = s + self.relative_bias_table[(j - i) + self.max_len - 1, h]
            heads_out.append(torch.softmax(s, dim=-1) @ vh)
        x = x + self.out_linear(torch.cat(heads_out, dim=-1))
        return x + self.ffn(self.norm2(x))


class TransformerDecoder(nn.Module):
    """trans.py's model (``pe`` in TRANS_PES) or partialrope.py's (``pe='partial'``,
    ``rope_heads`` heads rotated, nothing added to the input)."""

    def __init__(self, vocab, d, heads, layers, d_ff, max_len, pe, rope_heads=0, deviation=None):
        super().__init__()
        self.pe, self.dev, self.d, self.max_len = pe, deviation, d, max_len
        self.embedding = nn.Embedding(vocab, d)
        if pe == "random":
            self.position_encoding = nn.Module()
            self.position_encoding.position_embeddings = nn.Embedding(max_len, d)
        elif pe == "rope":
            self.position_encoding = nn.Module()
            self.position_encoding.register_buffer(
                "inv_freq", 1.0 / 10000 ** (torch.arange(0, d, 2).float() / d))
        self.layers = nn.ModuleList(_TransLayer(d, heads, d_ff, max_len, pe, rope_heads, deviation)
                                    for _ in range(layers))
        self.fc_out = nn.Linear(d, vocab)
        if deviation == "final_ln":
            self.extra_ln = nn.LayerNorm(d)

    def position_table(self, n):
        p = torch.arange(n, dtype=torch.float64)[:, None]
        d = self.d
        if self.pe == "absolute":  # sin at even dims, cos at odd dims, omega_m = 10000^(-2m/d)
            w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
            t = torch.zeros(n, d, dtype=torch.float64)
            t[:, 0::2], t[:, 1::2] = torch.sin(p * w), torch.cos(p * w)
            return t.float()
        if self.pe == "rope":  # trans.py's rope model: [sin(p w_0..), cos(p w_0..)] added
            w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
            if self.dev == "interleaved_table":
                t = torch.zeros(n, d, dtype=torch.float64)
                t[:, 0::2], t[:, 1::2] = torch.sin(p * w), torch.cos(p * w)
                return t.float()
            return torch.cat([torch.sin(p * w), torch.cos(p * w)], dim=1).float()
        if self.pe == "random":
            return self.position_encoding.position_embeddings.weight[:n]
        return torch.zeros(n, d)

    def forward(self, tokens):
        x = self.embedding(tokens) + self.position_table(tokens.shape[1])
        memory = x
        for layer in self.layers:
            x = layer(x, memory)
        if self.dev == "final_ln":
            x = self.extra_ln(x)
        if self.dev == "masked_pool":
            keep = (tokens != 0).float()[..., None]
            return self.fc_out((x * keep).sum(1) / keep.sum(1))
        return self.fc_out(x.mean(dim=1))


class _MLAAttn(nn.Module):
    def __init__(self, d, heads, latent, max_len, deviation):
        super().__init__()
        self.h, self.dh, self.dev = heads, d // heads, deviation
        self.W_DKV, self.W_DQ = nn.Linear(d, latent, bias=False), nn.Linear(d, latent, bias=False)
        self.W_UK = nn.Linear(latent, d, bias=False)
        self.W_UV = nn.Linear(latent, d, bias=False)
        self.W_UQ = nn.Linear(latent, d, bias=False)
        self.W_KR = nn.Linear(d, self.dh, bias=False)
        self.W_QR = nn.Linear(latent, self.dh, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)

    def _code_rope(self, v):
        """The code's "RoPE" on v (B, n, dh): entries 2m / 2m+1 of [sin(p f), cos(p f)] are used
        as the sine / cosine of pair m, and the output is [first of each pair; second of each]."""
        _, n, r = v.shape
        f = [10000.0 ** (-2.0 * m / r) for m in range(r // 2)]
        out = torch.empty_like(v)
        for p in range(n):
            row = [math.sin(p * fm) for fm in f] + [math.cos(p * fm) for fm in f]
            for m in range(r // 2):
                a, b = v[:, p, 2 * m], v[:, p, 2 * m + 1]
                if self.dev == "true_rotation":
                    s, c = math.sin(p * f[m]), math.cos(p * f[m])
                else:
                    s, c = row[2 * m], row[2 * m + 1]
                out[:, p, m], out[:, p, r // 2 + m] = a * c - b * s, a * s + b * c
        return out

    def forward(self, x, keep):
        c_kv, c_q = self.W_DKV(x), self.W_DQ(x)
        k_c, v_c, q_c = self.W_UK(c_kv), self.W_UV(c_kv), self.W_UQ(c_q)
        k_r, q_r = self._code_rope(self.W_KR(x)), self._code_rope(self.W_QR(c_q))  # one per model
        outs = []
        for h in range(self.h):
            sl = slice(h * self.dh, (h + 1) * self.dh)
            s = (q_c[..., sl] @ k_c[..., sl].transpose(1, 2) + q_r @ k_r.transpose(1, 2)) \
                / math.sqrt(2 * self.dh)
            s = s.masked_fill(~keep[:, None, :], float("-inf"))
            outs.append(torch.softmax(s, dim=-1) @ v_c[..., sl])
        return self.out_proj(torch.cat(outs, dim=-1))


class _MLALayer(nn.Module):
    def __init__(self, d, heads, d_ff, latent, max_len, deviation):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = _MLAAttn(d, heads, latent, max_len, deviation)
        self.ffn = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Dropout(0.0), nn.Linear(d_ff, d),
                                 nn.Dropout(0.0))

    def forward(self, x, keep):
        x = x + self.attn(self.norm1(x), keep)
        return x + self.ffn(self.norm2(x))


class MLATransformerDecoder(nn.Module):
    """mla.py's model: learned absolute table, padding masked in attention and pooling."""

    def __init__(self, vocab, d, heads, layers, d_ff, max_len, latent=128, deviation=None):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d)
        self.pos_embed = nn.Parameter(torch.randn(1, max_len, d) * 0.02)
        self.layers = nn.ModuleList(_MLALayer(d, heads, d_ff, latent, max_len, deviation)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.fc_out = nn.Linear(d, vocab)

    def forward(self, tokens):
        keep = tokens != 0
        x = self.embedding(tokens) + self.pos_embed[:, : tokens.shape[1]]
        for layer in self.layers:
            x = layer(x, keep)
        x = self.ln_f(x)
        w = keep.float()[..., None]
        return self.fc_out((x * w).sum(1) / w.sum(1))


#: deliberate departures of :func:`mlavis_logits` from mlavis.py: ``rows`` zeroes the output rows
#: [16h, 16h+16) (head h's own query, key and value) instead of the input columns; ``with_qr``
#: zeroes the same columns of W_QR too
MLAVIS_DEVIATIONS = ("rows", "with_qr")


@torch.no_grad()
def mlavis_logits(model, tokens, restore=False, deviation=None):
    """mlavis.py's loop on an :class:`MLATransformerDecoder`: per layer, keep copies of W_UQ, W_UK
    and W_UV; for each h in 0..num_heads-1 copy them back, set ``weight[:, h*d_head:(h+1)*d_head]``
    to zero in all three (d_head = d_model // num_heads; a slice past the latent's end keeps what
    is inside it, possibly nothing) and evaluate.  The copies are not put back after the last h
    (as mlavis.py: its next layer runs with this one's last h still applied) unless ``restore``.
    Returns per layer the (num_heads, batch, vocab) logits.  Edits ``model`` in place."""
    heads = model.layers[0].attn.h
    d_head = model.embedding.embedding_dim // heads
    out = []
    for layer in model.layers:
        attn = layer.attn
        ups = (attn.W_UQ, attn.W_UK, attn.W_UV) + ((attn.W_QR,) if deviation == "with_qr" else ())
        kept = [m.weight.clone() for m in ups]
        rows = []
        for h in range(heads):
            cut = slice(h * d_head, (h + 1) * d_head)
            for m, w in zip(ups, kept):
                m.weight.copy_(w)
                if deviation == "rows":
                    m.weight[cut, :] = 0.0
                else:
                    m.weight[:, cut] = 0.0
            rows.append(model(tokens))
        out.append(torch.stack(rows))
        if restore:
            for m, w in zip(ups, kept):
                m.weight.copy_(w)
    return out
