"""Thin adapters that let `posenc check` test real third-party PE code (the `thirdparty` extra:
`python3 -m pip install torch==2.13.0 -e ".[train,test,thirdparty]"`).

    posenc check docs/examples/thirdparty.py:rope_rotary_embedding_torch --expect base=10000
    posenc check docs/examples/thirdparty.py:rope_x_transformers --head-dim 128
    posenc check docs/examples/thirdparty.py:alibi_x_transformers --expect slopes=press,direction=symmetric
    posenc check docs/examples/thirdparty.py:rope_transformer_lens --expect base=10000,pairing=half
    posenc check docs/examples/thirdparty.py:rope_torchtune --expect base=10000,pairing=interleaved
    posenc check docs/examples/thirdparty.py:rope_torchtune_llama3_1 \
        --expect base=500000,scaling=llama3,factor=8,original=8192

Each library is imported inside its adapter, so this file imports without them.
"""

import functools


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


# --- transformer-lens (3.x: HookedTransformer's attention; 4.0 removed it) ----------------------

@functools.lru_cache(maxsize=None)
def _transformer_lens_attention(d_head, rotary_dim, n_ctx, adjacent_pairs, base):
    from transformer_lens import HookedTransformerConfig
    from transformer_lens.components import Attention

    cfg = HookedTransformerConfig(n_layers=1, d_model=d_head, d_head=d_head, n_heads=1, n_ctx=n_ctx,
                                  act_fn="gelu", attn_only=True, positional_embedding_type="rotary",
                                  rotary_dim=rotary_dim, rotary_adjacent_pairs=adjacent_pairs,
                                  rotary_base=base)
    return Attention(cfg).eval()


def transformer_lens_apply(attention, x, positions):
    """``attention.apply_rotary`` (its ``calculate_sin_cos_rotary`` table of ``n_ctx`` rows,
    ``rotate_every_two``, the first ``rotary_dim`` dims) at the given positions.  apply_rotary
    takes no position ids, only ``past_kv_pos_offset`` (and an attention mask): each token is
    one call at its offset, as in KV-cache decoding.  x: (..., seq, d_head)."""
    import torch

    x, positions = torch.as_tensor(x), torch.as_tensor(positions)
    shape = x.shape
    x4 = x.reshape(-1, shape[-2], 1, shape[-1])                  # (batch, pos, head, d_head)
    with torch.no_grad():
        out = [attention.apply_rotary(x4[:, i:i + 1], past_kv_pos_offset=int(p))
               for i, p in enumerate(positions)]
    return torch.cat(out, 1).reshape(shape)


def transformer_lens_rope(n_ctx=2048, rotary_fraction=1.0, adjacent_pairs=False, base=10000):
    """``f(x, positions)`` of a transformer-lens attention of this config: by default
    HookedTransformerConfig's (``rotary_adjacent_pairs=False``: NeoX's half pairing)."""
    def f(x, positions):
        d = x.shape[-1]
        attention = _transformer_lens_attention(d, int(d * rotary_fraction), n_ctx, adjacent_pairs,
                                                base)
        return transformer_lens_apply(attention, x, positions)
    return f


#: HookedTransformerConfig's defaults, n_ctx 2048: every dim rotates, half pairing.
rope_transformer_lens = transformer_lens_rope()
#: GPT-NeoX / Pythia as transformer-lens loads them: rotary_dim = d_head/4, half pairing.
rope_transformer_lens_neox = transformer_lens_rope(rotary_fraction=0.25)
#: GPT-J as transformer-lens loads it: rotary_dim = d_head/4, rotary_adjacent_pairs=True.
rope_transformer_lens_gptj = transformer_lens_rope(rotary_fraction=0.25, adjacent_pairs=True)


# --- torchtune ----------------------------------------------------------------------------------

def torchtune_apply(rope, x, positions):
    """A torchtune rotary module on x (..., seq, dim) at ``input_pos=positions``."""
    import torch

    x, positions = torch.as_tensor(x), torch.as_tensor(positions)
    shape = x.shape
    x4 = x.reshape(-1, shape[-2], 1, shape[-1])                  # (b, s, n_h, h_d)
    return rope(x4, input_pos=positions[None]).reshape(shape)


@functools.lru_cache(maxsize=None)
def _torchtune_rope(dim, max_seq_len, base):
    from torchtune.modules import RotaryPositionalEmbeddings

    return RotaryPositionalEmbeddings(dim, max_seq_len=max_seq_len, base=base)


@functools.lru_cache(maxsize=None)
def _torchtune_llama3_1_rope(dim, max_seq_len, base, scale_factor):
    from torchtune.models.llama3_1 import Llama3ScaledRoPE

    return Llama3ScaledRoPE(dim, max_seq_len=max_seq_len, base=base, scale_factor=scale_factor)


def rope_torchtune(x, positions):
    """torchtune.modules.RotaryPositionalEmbeddings, its defaults: a cache of max_seq_len = 4096
    rows, base 10000, interleaved pairs."""
    return torchtune_apply(_torchtune_rope(x.shape[-1], 4096, 10000), x, positions)


def rope_torchtune_llama3_1(x, positions):
    """torchtune's Llama3ScaledRoPE as its llama3_1 builders make it: base 500000, scale_factor 8
    (low/high freq factors 1 and 4, old_context_len 8192: the class defaults), max_seq_len
    131072.  State the scaling: ``--expect base=500000,scaling=llama3,factor=8,original=8192``."""
    return torchtune_apply(_torchtune_llama3_1_rope(x.shape[-1], 131072, 500000, 8), x, positions)
