"""Thin adapters that let `posenc check` test real third-party PE code (the `thirdparty` extra:
`python3 -m pip install torch==2.13.0 -e ".[test,thirdparty]"`).

    posenc check docs/examples/thirdparty.py:rope_rotary_embedding_torch --expect base=10000
    posenc check docs/examples/thirdparty.py:rope_x_transformers --dim 128
    posenc check docs/examples/thirdparty.py:alibi_x_transformers --expect slopes=press,direction=symmetric

Each library is imported inside its adapter, so this file imports without them.
"""


def rope_rotary_embedding_torch(x, positions):
    """lucidrains/rotary-embedding-torch: interleaved pairs, base 10000.  x: (..., seq, dim)."""
    from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb

    freqs = RotaryEmbedding(dim=x.shape[-1])(positions)          # (seq, dim): the given positions
    return apply_rotary_emb(freqs, x)


def rope_x_transformers(x, positions):
    """x-transformers' RotaryEmbedding: its tables are (1, seq, dim), so x needs >= 3 axes
    (posenc tries 2, 3 and 4 and keeps the first whose output keeps the shape of x)."""
    from x_transformers.x_transformers import RotaryEmbedding, apply_rotary_pos_emb

    freqs, scale = RotaryEmbedding(x.shape[-1])(positions)
    return apply_rotary_pos_emb(x, freqs, scale)


def alibi_x_transformers(n_heads, n):
    """x-transformers' AlibiPositionalBias: (heads, n, n) = −slope·|i − j|, press slopes."""
    from x_transformers.x_transformers import AlibiPositionalBias

    return AlibiPositionalBias(heads=n_heads)(n, n)
