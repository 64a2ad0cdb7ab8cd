"""A correct ALiBi bias (Press et al. 2022), in numpy: B[h, i, j] = -slope_h * |i - j|.

Slopes 2^(-8h/H) for heads h = 1..H; for H not a power of two, the slopes of the largest power
of two P < H followed by every other slope of 2P (the reference `get_slopes`).

    posenc check docs/examples/alibi.py:alibi
    posenc check docs/examples/alibi.py:alibi_causal
"""

import math

import numpy as np


def get_slopes(n_heads):
    def power_of_two(p):
        start = 2.0 ** (-8.0 / p)
        return [start ** (h + 1) for h in range(p)]
    if math.log2(n_heads).is_integer():
        return power_of_two(n_heads)
    p = 2 ** math.floor(math.log2(n_heads))
    return power_of_two(p) + get_slopes(2 * p)[0::2][: n_heads - p]


def alibi(n_heads, n):
    """(n_heads, n, n) symmetric bias for bidirectional attention."""
    slopes = np.array(get_slopes(n_heads))                          # (H,)
    pos = np.arange(n)
    distance = np.abs(pos[:, None] - pos[None, :])                  # (n, n)
    return -slopes[:, None, None] * distance[None]


def alibi_causal(n_heads, n):
    """(n_heads, n, n) causal bias: -slope * (i - j) for j <= i, 0 above the diagonal."""
    slopes = np.array(get_slopes(n_heads))
    pos = np.arange(n)
    rel = pos[:, None] - pos[None, :]                               # i - j
    return -slopes[:, None, None] * np.where(rel >= 0, rel, 0)[None]
