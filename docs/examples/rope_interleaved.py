"""A correct RoPE (Su et al. 2021) with the interleaved pairing, in numpy.

Plane m rotates dims (2m, 2m+1) by the angle p * theta_m, theta_m = base^(-2m/d):
(a, b) -> (a cos - b sin, a sin + b cos).  Check it with

    posenc check docs/examples/rope_interleaved.py:rope
"""

import numpy as np


def rope(x, positions, base=10000.0):
    """x: (..., seq, dim) array; positions: (seq,) integers -> rotated x, same shape."""
    x = np.asarray(x)
    dim = x.shape[-1]
    theta = base ** (-np.arange(0, dim, 2) / dim)                  # (dim/2,)
    angle = np.asarray(positions)[:, None] * theta[None, :]        # (seq, dim/2)
    cos, sin = np.cos(angle), np.sin(angle)
    a, b = x[..., 0::2], x[..., 1::2]                              # (..., seq, dim/2)
    out = np.empty(np.broadcast_shapes(x.shape, x.shape), dtype=np.result_type(x, np.float32))
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out
