"""PE code written the way the libraries write it (GPT-J, GPT-NeoX/Llama ``rotate_half``,
transformer-lens, torchtune, Bloom, MPT, Falcon, T5), correct and with the bugs real code has,
as small torch functions in the signatures ``posenc check`` takes.  Used by test_bug_set.py.

Nothing here imports posenc: these are the users' side of the check."""

from __future__ import annotations

import math

import torch

# --- rotary: tables and rotations ------------------------------------------------------------


def inv_freq(d: int, base: float = 10000.0, r: int | None = None) -> torch.Tensor:
    r = r or d
    return 1.0 / (base ** (torch.arange(0, r, 2, dtype=torch.int64).float() / r))


def rotate_half(x: torch.Tensor) -> torch.Tensor:          # GPT-NeoX / Llama
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:     # GPT-J / transformer-lens
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def neox(x, positions, base=10000.0, angle_dtype=None, table_dtype=None, pos_dtype=None,
         r=None, last_slice=False, shift=0, drop_sin=False, sign=1.0, slip=False):
    """GPT-NeoX/Llama RoPE, half-split, optionally partial (rotary_pct) and with the slips:
    angles or tables in half precision, positions in float16, the wrong slice, position ids
    shifted, the sin term dropped, the rotation reversed, the arange(d/2)/d indexing slip."""
    d = x.shape[-1]
    r = r or d
    freqs = (1.0 / (base ** (torch.arange(r // 2).float() / r)) if slip else inv_freq(d, base, r))
    p = (positions + shift).to(pos_dtype) if pos_dtype is not None else (positions + shift).float()
    if angle_dtype is not None:
        ang = (p[:, None].to(angle_dtype) * freqs[None].to(angle_dtype)).float()
    else:
        ang = p.float()[:, None] * freqs[None]
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    if table_dtype is not None:
        cos, sin = cos.to(table_dtype), sin.to(table_dtype)
    cos, sin = cos.to(x.dtype), sign * sin.to(x.dtype)
    if last_slice:
        x_pass, x_rot = x[..., : d - r], x[..., d - r:]
    else:
        x_rot, x_pass = x[..., :r], x[..., r:]
    out = x_rot * cos + (0.0 if drop_sin else rotate_half(x_rot) * sin)
    return torch.cat((x_pass, out), -1) if last_slice else torch.cat((out, x_pass), -1)


def create_sinusoidal_positions(num_pos: int, dim: int, base: float = 10000.0) -> torch.Tensor:
    """GPT-J's table: sin | cos of every position up to num_pos."""
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(num_pos, dtype=torch.int64).float(),
                                inv_freq(dim, base)).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


_TABLES: dict = {}


def _table(n: int, d: int) -> torch.Tensor:
    if (n, d) not in _TABLES:
        _TABLES[n, d] = create_sinusoidal_positions(n, d)
    return _TABLES[n, d]


def gptj(x, positions, num_pos=2048, wrap=False, half_table=False):
    """GPT-J: a table of num_pos positions indexed by the position ids, interleaved pairs."""
    d = x.shape[-1]
    idx = positions % num_pos if wrap else positions
    sincos = _table(num_pos, d)[idx]
    sin, cos = torch.split(sincos, d // 2, dim=-1)
    sin = torch.repeat_interleave(sin, 2, -1)
    cos = torch.repeat_interleave(cos, 2, -1)
    if half_table:
        sin, cos = sin.half(), cos.half()
    return x * cos.to(x.dtype) + rotate_every_two(x) * sin.to(x.dtype)


def gptj_2048(x, positions):
    return gptj(x, positions)


def gptj_wrapped(x, positions):            # positions taken modulo the table: a wrapped table
    return gptj(x, positions, wrap=True)


def transformer_lens(x, positions, n_ctx=2048, rotary_dim=None):
    """transformer-lens' calculate_sin_cos_rotary (n_ctx rows) + apply_rotary, rotating the
    first rotary_dim dims, interleaved: its GPT-J configuration (rotary_adjacent_pairs=True; the
    config's default is half pairing).  test_check_transformer_lens_torchtune.py holds this equal
    to transformer-lens 3.9.0's own code."""
    d = x.shape[-1]
    r = rotary_dim or d
    key = ("tl", n_ctx, r)
    if key not in _TABLES:
        pos = torch.arange(n_ctx, dtype=torch.float32)
        dim = torch.arange(r // 2, dtype=torch.float32)
        freq = 10000.0 ** (dim / (r / 2))
        freq = freq.repeat_interleave(2)            # einops repeat "d -> (d 2)"
        angles = pos[:, None] / freq[None, :]
        _TABLES[key] = (torch.sin(angles), torch.cos(angles))
    sin, cos = _TABLES[key]
    x_rot, x_pass = x[..., :r], x[..., r:]
    out = x_rot * cos[positions].to(x.dtype) + rotate_every_two(x_rot) * sin[positions].to(x.dtype)
    return torch.cat((out, x_pass), -1)


def transformer_lens_partial(x, positions):
    return transformer_lens(x, positions, rotary_dim=x.shape[-1] // 4)


def torchtune(x, positions, max_seq_len=4096, base=10000.0):
    """torchtune's RotaryPositionalEmbeddings: a cache of max_seq_len rows [cos, sin], x
    reshaped to (..., d/2, 2), indexed by input_pos (held equal to torchtune 0.6.1's own in
    test_check_transformer_lens_torchtune.py)."""
    d = x.shape[-1]
    key = ("tt", max_seq_len, d)
    if key not in _TABLES:
        theta = 1.0 / (base ** (torch.arange(0, d, 2)[: (d // 2)].float() / d))
        idx_theta = torch.einsum("i, j -> ij", torch.arange(max_seq_len, dtype=theta.dtype), theta)
        _TABLES[key] = torch.stack([torch.cos(idx_theta), torch.sin(idx_theta)], dim=-1)
    cache = _TABLES[key][positions]                                         # (s, d/2, 2)
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    out = torch.stack([xs[..., 0] * cache[..., 0] - xs[..., 1] * cache[..., 1],
                       xs[..., 1] * cache[..., 0] + xs[..., 0] * cache[..., 1]], -1)
    return out.flatten(-2).type_as(x)


def dynamic_ntk(x, positions, max_pos=2048, factor=2.0, base=10000.0):
    """transformers' dynamic NTK rule: the base grows once the call's length passes max_pos."""
    d = x.shape[-1]
    seq_len = int(positions.max()) + 1
    if seq_len > max_pos:
        base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (d / (d - 2))
    return neox(x, positions, base=base)


def dynamic_ntk_never_updates(x, positions, max_pos=2048, factor=2.0, base=10000.0):
    """inv_freq computed once for seq_len = max_pos (the init call) and never again."""
    seq_len = max_pos
    base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (x.shape[-1] / (x.shape[-1] - 2))
    return neox(x, positions, base=base)


def dynamic_ntk_chunk_length(x, positions, max_pos=2048, factor=2.0, base=10000.0):
    """Sized by the length of the call (x.shape[-2]), not by the largest position + 1."""
    d, seq_len = x.shape[-1], x.shape[-2]
    if seq_len > max_pos:
        base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (d / (d - 2))
    return neox(x, positions, base=base)


class DynamicNTKNoReset:
    """A cached dynamic NTK that grows past max_pos and never goes back to the original base."""

    def __init__(self, max_pos=2048, factor=2.0, base=10000.0):
        self.max_pos, self.factor, self.base0, self.cached = max_pos, factor, base, max_pos

    def __call__(self, x, positions):
        d, seq_len = x.shape[-1], int(positions.max()) + 1
        self.cached = max(self.cached, seq_len)
        scale = (self.factor * self.cached / self.max_pos) - (self.factor - 1)
        return neox(x, positions, base=self.base0 * scale ** (d / (d - 2)))


def linear_truncated(x, positions, factor=2.0):
    """Position interpolation with the positions floored: (positions / factor).long()."""
    return neox(x, (positions.float() / factor).long())


def rope_twice_q(q, k, positions):                 # q rotated twice (once in the model, once here)
    cos, sin = cos_sin(positions, q.shape[-1])
    q1 = q * cos + rotate_half(q) * sin
    return q1 * cos + rotate_half(q1) * sin, k * cos + rotate_half(k) * sin


def rope_arange(x, positions):          # rotates by 0..seq-1 whatever the positions
    return neox(x, torch.arange(x.shape[-2]))


def rope_no_rotation(x, positions):
    return neox(x, positions * 0)


def rope_sin_cos_swapped(x, positions):
    d = x.shape[-1]
    emb = torch.cat([positions.float()[:, None] * inv_freq(d)[None]] * 2, -1)
    return x * emb.sin().to(x.dtype) + rotate_half(x) * emb.cos().to(x.dtype)


def rope_mixed_tables(x, positions):    # an interleaved (GPT-J) table with NeoX's rotate_half
    d = x.shape[-1]
    ang = positions.float()[:, None] * inv_freq(d)[None]
    cos = torch.repeat_interleave(ang.cos(), 2, -1).to(x.dtype)
    sin = torch.repeat_interleave(ang.sin(), 2, -1).to(x.dtype)
    return x * cos + rotate_half(x) * sin


def rope_exponent_slip(x, positions):   # theta = base^(-2m/(d-2)): the last plane at 1/base
    d = x.shape[-1]
    ang = positions.float()[:, None] * (10000.0 ** (-torch.arange(0, d, 2).float() / (d - 2)))[None]
    emb = torch.cat((ang, ang), -1)
    return x * emb.cos().to(x.dtype) + rotate_half(x) * emb.sin().to(x.dtype)


# --- rotary of q and k -----------------------------------------------------------------------

def cos_sin(positions, d, base=10000.0, interleaved=False):
    ang = positions.float()[:, None] * inv_freq(d, base)[None]
    emb = torch.repeat_interleave(ang, 2, -1) if interleaved else torch.cat((ang, ang), -1)
    return emb.cos(), emb.sin()


def apply_rotary_pos_emb(q, k, cos, sin):          # Llama's, as transformers writes it
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def llama_qk(q, k, positions):
    cos, sin = cos_sin(positions, q.shape[-1])
    return apply_rotary_pos_emb(q, k, cos.to(q.dtype), sin.to(q.dtype))


def kv_cache_offset(q, k, positions, past_len=5):
    """decoding with a cache: the new queries are rotated from past_len, and so are the keys
    -- but here the keys were rotated from 0 (the cache position was not passed)."""
    cq, sq = cos_sin(positions + past_len, q.shape[-1])
    ck, sk = cos_sin(positions, q.shape[-1])
    return q * cq + rotate_half(q) * sq, k * ck + rotate_half(k) * sk


def kv_cache_offset_keys(q, k, positions, past_len=9):
    cq, sq = cos_sin(positions, q.shape[-1])
    ck, sk = cos_sin(positions + past_len, q.shape[-1])
    return q * cq + rotate_half(q) * sq, k * ck + rotate_half(k) * sk


def qk_mixed_pairing(q, k, positions):
    cos, sin = cos_sin(positions, q.shape[-1])
    ci, si = cos_sin(positions, q.shape[-1], interleaved=True)
    return q * cos + rotate_half(q) * sin, k * ci + rotate_every_two(k) * si


def qk_mixed_base(q, k, positions):
    cos, sin = cos_sin(positions, q.shape[-1])
    c5, s5 = cos_sin(positions, q.shape[-1], base=500000.0)
    return q * cos + rotate_half(q) * sin, k * c5 + rotate_half(k) * s5


# --- xPos (the catalogue's convention: q scaled by zeta^(p/scale_base), k by its inverse) ------

def xpos(q, k, positions, base=10000.0, gamma=0.4, scale_base=512.0, ignore=False, key_sign=-1.0):
    d = q.shape[-1]
    pos = torch.arange(q.shape[-2]) if ignore else positions
    ang = pos.double()[:, None] * (base ** (-torch.arange(0, d, 2).double() / d))[None]
    zeta = (torch.arange(0, d, 2).double() / d + gamma) / (1 + gamma)
    scale = zeta[None] ** (pos.double()[:, None] / scale_base)
    cos, sin = (torch.repeat_interleave(t, 2, -1) for t in (ang.cos(), ang.sin()))
    sq, sk = (torch.repeat_interleave(t, 2, -1) for t in (scale, scale ** key_sign))
    rq = (q * cos + rotate_every_two(q) * sin) * sq
    rk = (k * cos + rotate_every_two(k) * sin) * sk
    return rq.to(q.dtype), rk.to(k.dtype)


def xpos_arange(q, k, positions):
    return xpos(q, k, positions, ignore=True)


def xpos_key_like_query(q, k, positions):
    return xpos(q, k, positions, key_sign=1.0)


# --- ALiBi -----------------------------------------------------------------------------------

def get_slopes(n_heads: int) -> list[float]:
    """Press et al.'s reference (also Bloom's and MPT's rule)."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n_heads).is_integer():
        return power_of_2(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return power_of_2(closest) + get_slopes(2 * closest)[0::2][: n_heads - closest]


def slopes_naive(n_heads):              # 2^(-8h/H) for every H: the rule for H = 2^k only
    return [2 ** (-8 * h / n_heads) for h in range(1, n_heads + 1)]


def slopes_no_stride(n_heads):          # the extra heads from 2p heads in a row ([0::2] forgotten)
    closest = 2 ** math.floor(math.log2(n_heads))
    return get_slopes(closest) + get_slopes(2 * closest)[: n_heads - closest]


def causal_mask(n):
    return torch.full((n, n), float("-inf")).triu(1)


def bloom_style(H, n, slopes=get_slopes):
    """Bloom's build_alibi_tensor: slope·j in every row, plus the causal mask."""
    s = torch.tensor(slopes(H))
    return s[:, None, None] * torch.arange(n)[None, None, :].float() + causal_mask(n)


def mpt_style(H, n, full=True, slopes=get_slopes):
    """MPT's build_alibi_bias: full=True is −s·|i−j| (bidirectional)."""
    s = torch.tensor(slopes(H))
    bias = torch.arange(1 - n, 1, dtype=torch.float32).view(1, 1, n)
    if full:
        bias = bias - torch.arange(1 - n, 1, dtype=torch.float32).view(1, n, 1)
        bias = bias.abs().mul(-1)
    return bias * s.view(H, 1, 1) + (0.0 if full else causal_mask(n))


def alibi_sign_flipped_bidirectional(H, n):     # -s*(j-i) without abs: +s*(i-j)
    s = torch.tensor(get_slopes(H))
    k = torch.arange(n)
    return -s[:, None, None] * (k[None, :] - k[:, None]).float()[None]


def alibi_no_abs(H, n):                         # -s*(i-j) without abs
    s = torch.tensor(get_slopes(H))
    k = torch.arange(n)
    return -s[:, None, None] * (k[:, None] - k[None, :]).float()[None]


def alibi_sign_flipped_causal(H, n):            # -s*(j-i) under a causal mask
    return alibi_sign_flipped_bidirectional(H, n) + causal_mask(n)


def alibi_mask_wrong_side(H, n):                # triu(1) mask on the past: tril(-1)
    s = torch.tensor(get_slopes(H))
    k = torch.arange(n)
    dist = (k[None, :] - k[:, None]).abs().float()
    mask = torch.full((n, n), float("-inf")).tril(-1)
    return -s[:, None, None] * dist[None] + mask


def alibi_naive_slopes(H, n):
    return mpt_style(H, n, slopes=slopes_naive)


def alibi_no_stride(H, n):
    return mpt_style(H, n, slopes=slopes_no_stride)


def alibi_head_from_zero(H, n):                 # h = 0..H-1: head 0 gets slope 1
    return mpt_style(H, n, slopes=lambda H: [2 ** (-8 * h / H) for h in range(H)])


def alibi_heads_plus_one(H, n):                 # slopes built for H + 1 heads
    return mpt_style(H + 1, n)[:H]


def alibi_paper_exp(H, n):                      # exp(-h/H), h = 1..H
    return mpt_style(H, n, slopes=lambda H: [math.exp(-h / H) for h in range(1, H + 1)])


def alibi_plus_inf_mask(H, n):
    return mpt_style(H, n, full=False).nan_to_num(neginf=float("inf"))


def alibi_absolute(H, n):                       # slope·i·j: depends on absolute positions
    s = torch.tensor(get_slopes(H))
    k = torch.arange(n).float()
    return -s[:, None, None] * (k[:, None] * k[None, :])[None] / n


def falcon_style(H, n, heads=None):
    """Falcon's build_alibi_tensor: bfloat16(slopes) · j in bfloat16, plus the causal mask."""
    s = torch.tensor(get_slopes(heads or H))[:H]
    alibi = s[:, None].bfloat16() * torch.arange(n)[None, :]
    return alibi.float()[:, None, :] + causal_mask(n)


def falcon_heads_plus_one(H, n):
    return falcon_style(H, n, heads=H + 1)


# --- T5 buckets ------------------------------------------------------------------------------

def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
                             max_distance=128):
    """T5's _relative_position_bucket, as the reference implementation writes it."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact) * (num_buckets - max_exact)).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def t5_buckets(n, bidirectional=True, swap=False, shift=0, num_buckets=32, max_distance=128):
    """compute_bias's buckets: relative_position = memory_position − context_position."""
    context_position = torch.arange(n)[:, None]
    memory_position = torch.arange(n)[None, :]
    rel = (context_position - memory_position) if swap else (memory_position - context_position)
    return relative_position_bucket(rel + shift, bidirectional, num_buckets, max_distance)


def t5_encoder(n):
    return t5_buckets(n)


def t5_decoder(n):
    return t5_buckets(n, bidirectional=False)


def t5_transposed(n):
    return t5_buckets(n, swap=True)


def t5_off_by_one(n):
    return t5_buckets(n, shift=1)


def t5_decoder_bidirectional(n):                # a decoder that kept the encoder's setting
    return t5_buckets(n, bidirectional=True)


def t5_max_distance_64(n):
    return t5_buckets(n, max_distance=64)


def t5_16_buckets(n):
    return t5_buckets(n, num_buckets=16)


# --- learned relative bias over T5 buckets (g(n_heads, n), a table of num_buckets per head) ----

def t5_learned(H, n, swap=False, shift=0, bidirectional=True):
    """A learned bias table[h, bucket(j − i)], the table fixed (seeded) for the check."""
    table = torch.randn(H, 32, generator=torch.Generator().manual_seed(H))
    return table[:, t5_buckets(n, bidirectional=bidirectional, swap=swap, shift=shift)]


def t5_learned_transposed(H, n):
    return t5_learned(H, n, swap=True)


def t5_learned_off_by_one(H, n):
    return t5_learned(H, n, shift=1)


# --- the second bug set's shapes ----------------------------------------------------------------

def rope_reversed_freqs(x, positions):            # inv_freq.flip(0): the slowest plane first
    d = x.shape[-1]
    ang = positions.float()[:, None] * inv_freq(d).flip(0)[None]
    emb = torch.cat((ang, ang), dim=-1)
    return x * emb.cos().to(x.dtype) + rotate_half(x) * emb.sin().to(x.dtype)


def rope_applied_twice(x, positions):             # once in the layer, once more in the block
    return neox(neox(x, positions), positions)


def rope_periodic(x, positions, period=64):       # positions % period: a ring buffer's slot ids
    return neox(x, positions % period)


def linear_inverted(x, positions, factor=2.0):    # position interpolation as p * F, not p / F
    d = x.shape[-1]
    ang = (positions.float() * factor)[:, None] * inv_freq(d)[None]
    emb = torch.cat((ang, ang), dim=-1)
    return x * emb.cos().to(x.dtype) + rotate_half(x) * emb.sin().to(x.dtype)


def qk_key_reversed(q, k, positions):             # k rotated by −p: sin's sign flipped on k only
    return neox(q, positions), neox(k, positions, sign=-1.0)


def alibi_reversed_slopes(H, n):                  # slopes[::-1]: the steepest slope on the last head
    return bloom_style(H, n, slopes=lambda h: get_slopes(h)[::-1])
