"""A BUGGY RoPE: half-split rotation with interleaved cos/sin columns (a real-world mix-up).

`rotate_half` pairs dim m with dim m + d/2, but the cos/sin tables are laid out for the
interleaved pairing (theta_0, theta_0, theta_1, theta_1, ...), so the two dims of a plane are
turned by different angles: the map is not a rotation, norms change and the logit depends on
absolute positions.  `posenc check docs/examples/rope_buggy.py:rope` flags it.
"""

import torch


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(x, positions, base=10000.0):
    dim = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = positions.double()[:, None] * inv_freq[None, :]              # (seq, dim/2)
    emb = freqs.repeat_interleave(2, dim=-1)                             # BUG: interleaved layout
    return x * emb.cos().to(x.dtype) + rotate_half(x) * emb.sin().to(x.dtype)
