"""A BUGGY ALiBi: the head index runs 0..H-1 instead of 1..H (an off-by-one).

Head 0 gets slope 2^0 = 1 instead of 2^(-8/H): the bias is still Toeplitz and symmetric, so
only the slope schedule gives it away.  `posenc check docs/examples/alibi_off_by_one.py:alibi`
flags it.
"""

import numpy as np


def alibi(n_heads, n):
    slopes = 2.0 ** (-8.0 * np.arange(n_heads) / n_heads)           # BUG: h = 0..H-1
    pos = np.arange(n)
    distance = np.abs(pos[:, None] - pos[None, :])
    return -slopes[:, None, None] * distance[None]
