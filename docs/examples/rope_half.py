"""A correct RoPE with the half-split pairing ("rotate_half", as in GPT-NeoX / Llama code), in torch.

Plane m rotates dims (m, m + d/2).  The cos/sin tables are built in float32 (torch's default),
so on float64 input this function is only float32-accurate at large positions -- `posenc check`
reports that under "float32 drift".

    posenc check docs/examples/rope_half.py:rope
"""

import torch


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(x, positions, base=10000.0):
    """x: (..., seq, dim) tensor; positions: (seq,) integer tensor -> rotated x."""
    dim = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))  # (dim/2,) float32
    freqs = positions.float()[:, None] * inv_freq[None, :]               # (seq, dim/2)
    emb = torch.cat((freqs, freqs), dim=-1)                              # (seq, dim): m and m+d/2
    return x * emb.cos().to(x.dtype) + rotate_half(x) * emb.sin().to(x.dtype)
