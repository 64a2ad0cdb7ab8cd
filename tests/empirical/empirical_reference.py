"""Plain-Python / loop references for the empirical layer's tests, written from the
conventions in posenc/encodings/__init__.py's docstring (not from posenc.empirical's code)."""

from __future__ import annotations

import math

import torch

import rope_scaling_reference  # tests/: on the path through its conftest.py

from posenc.encodings import MLA, ALiBi, Custom, Hybrid, KerpleLog, RelativeBias, RoPE, XPos


def alibi_slopes_ref(n: int, schedule: str) -> list[float]:
    if schedule == "exp":
        return [math.exp(-h / n) for h in range(1, n + 1)]
    if schedule == "exp0":  # the paper's code: h = 0..H-1
        return [math.exp(-h / n) for h in range(n)]
    P = 1
    while P * 2 <= n:
        P *= 2
    first = [2.0 ** (-8.0 * h / P) for h in range(1, P + 1)]
    second = [2.0 ** (-8.0 * h / (2 * P)) for h in range(1, 2 * P + 1)]
    return first + [second[i] for i in range(0, 2 * P, 2)][: n - P]


def t5_bucket_ref(rel: int, num_buckets: int, max_distance: int) -> int:
    """T5's bucket of relative position rel = j - i (bidirectional)."""
    half = num_buckets // 2
    out = half if rel > 0 else 0
    n = abs(rel)
    exact = half // 2
    if n < exact:
        return out + n
    val = exact + int(math.log(n / exact) / math.log(max_distance / exact) * (half - exact))
    return out + min(val, half - 1)


def rope_planes_ref(spec: RoPE, head_dim: int, head: int, n_heads: int):
    """[(dim_a, dim_b, theta)] for one head, from the catalogue docstring."""
    r = 2 * int(math.floor(spec.fraction * head_dim / 2 + 1e-9))
    P = r // 2
    kept = max(1, min(P, int(round(spec.keep * P))))
    scaled = rope_scaling_reference.frequencies(spec, r)      # = base^(-2m/r) when unscaled
    out = []
    for m in range(P):
        theta = scaled[m] if m < kept else 0.0
        if spec.heads is not None and head >= spec.heads:
            theta = 0.0
        a, b = (2 * m, 2 * m + 1) if spec.pairing == "interleaved" else (m, m + P)
        out.append((a, b, theta))
    return out


def rotate_ref(vec: torch.Tensor, planes, pos: int) -> torch.Tensor:
    """Rotate a float64 vector by the explicit 2x2 rotation of each plane."""
    R = torch.eye(len(vec), dtype=torch.float64)
    for a, b, theta in planes:
        c, s = math.cos(pos * theta), math.sin(pos * theta)
        R[a, a], R[a, b], R[b, a], R[b, b] = c, -s, s, c
    return R @ vec


def paper_mix_ref(vec: torch.Tensor, base: float, pos: int) -> torch.Tensor:
    """The paper code's MLA "RoPE" of a float64 vector, from the catalogue docstring: the table
    [sin(p f_0) .. sin(p f_{r/2-1}), cos(p f_0) .. cos(p f_{r/2-1})] read at 2m as s_m and at
    2m+1 as c_m; out[m] = a_m c_m - b_m s_m, out[r/2 + m] = a_m s_m + b_m c_m."""
    r = len(vec)
    f = [base ** (-2.0 * m / r) for m in range(r // 2)]
    table = [math.sin(pos * w) for w in f] + [math.cos(pos * w) for w in f]
    out = torch.zeros(r, dtype=torch.float64)
    for m in range(r // 2):
        a, b, s, c = vec[2 * m], vec[2 * m + 1], table[2 * m], table[2 * m + 1]
        out[m], out[r // 2 + m] = a * c - b * s, a * s + b * c
    return out


def sinusoidal_ref(T: int, D: int, base: float = 10000.0, offset: int = 0) -> torch.Tensor:
    out = torch.zeros(T, D, dtype=torch.float64)
    for p in range(T):
        for m in range((D + 1) // 2):
            ang = (p + offset) / base ** (2 * m / D)
            out[p, 2 * m] = math.sin(ang)
            if 2 * m + 1 < D:
                out[p, 2 * m + 1] = math.cos(ang)
    return out


MATH = {"abs": abs, "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "sin": math.sin,
        "cos": math.cos, "tanh": math.tanh, "sign": lambda x: float((x > 0) - (x < 0)),
        "min": min, "max": max}


def bias_ref(spec, attn, h: int, i: int, j: int, n_heads: int) -> float:
    """B[h, i, j] of an additive-bias spec; learned values read from the layer's table."""
    if isinstance(spec, Hybrid):
        spec = spec.additive
    if isinstance(spec, ALiBi):
        slope = alibi_slopes_ref(n_heads, spec.slopes)[h]
        d = abs(i - j) if spec.direction == "symmetric" else max(i - j, 0)
        return -slope * d
    if isinstance(spec, RelativeBias):
        w = attn.bias.weight.detach().double()
        if spec.mode == "t5":
            return float(w[h, t5_bucket_ref(j - i, spec.num_buckets, spec.max_distance)])
        md = spec.max_distance
        return float(w[h, max(-md, min(md, i - j)) + md])
    if isinstance(spec, Custom) and spec.kernel is not None:
        return float(spec.kernel.evaluate(float(i - j), MATH))
    if isinstance(spec, KerpleLog):     # learned r1, r2 > 0 per head, stored as their logs
        r1, r2 = (math.exp(float(v)) for v in attn.bias.log_r.detach()[:, h])
        return -r1 * math.log(1 + r2 * abs(i - j))
    return 0.0


def xpos_scale_ref(spec, head_dim: int, pos: int) -> torch.Tensor:
    """zeta_m^(pos/scale_base) on dims (2m, 2m+1), zeta_m = (2m/d + gamma)/(1 + gamma)."""
    out = torch.ones(head_dim, dtype=torch.float64)
    for m in range(head_dim // 2):
        zeta = (2 * m / head_dim + spec.gamma) / (1 + spec.gamma)
        out[2 * m] = out[2 * m + 1] = zeta ** (pos / spec.scale_base)
    return out


def planes_for(spec, head_dim: int, head: int, n_heads: int):
    if isinstance(spec, Hybrid):
        spec = spec.rope
    if isinstance(spec, RoPE):
        return rope_planes_ref(spec, head_dim, head, n_heads)
    if isinstance(spec, Custom) and spec.frequencies is not None:
        return [(2 * m, 2 * m + 1, f) for m, f in enumerate(spec.frequencies)]
    if isinstance(spec, XPos):
        return [(2 * m, 2 * m + 1, spec.base ** (-2.0 * m / head_dim)) for m in range(head_dim // 2)]
    return []


def scores_ref(spec, attn, x: torch.Tensor, y: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Pre-softmax scores (H, T, T) of one example by loops: x, y (T, D) normed inputs."""
    W = {k: v.double() for k, v in attn.head_weights().items()}
    H, T = W["W_q"].shape[0], x.shape[0]
    x, y = x.double(), y.double()
    out = torch.zeros(H, T, T, dtype=torch.float64)
    for h in range(H):
        if isinstance(spec, MLA):
            r = W["W_qr"].shape[1]
            mla_planes = [(2 * m, 2 * m + 1, spec.base ** (-2.0 * m / r)) for m in range(r // 2)]
            scale = 1.0 / math.sqrt(W["W_q"].shape[1] + r)
        else:
            planes = planes_for(spec, W["W_q"].shape[1], h, H)
            scale = 1.0 / math.sqrt(W["W_q"].shape[1])
        for i in range(T):
            for j in range(T):
                q, k = W["W_q"][h] @ x[i], W["W_k"][h] @ y[j]
                if isinstance(spec, MLA) and spec.rope == "paper_code":
                    s = q @ k + paper_mix_ref(W["W_qr"][h] @ x[i], spec.base, i + offset) @ \
                        paper_mix_ref(W["W_kr"][h] @ y[j], spec.base, j + offset)
                elif isinstance(spec, MLA):
                    s = q @ k + rotate_ref(W["W_qr"][h] @ x[i], mla_planes, i + offset) @ \
                        rotate_ref(W["W_kr"][h] @ y[j], mla_planes, j + offset)
                elif isinstance(spec, XPos):
                    d = q.shape[0]
                    s = (rotate_ref(q, planes, i + offset) * xpos_scale_ref(spec, d, i + offset)) @ \
                        (rotate_ref(k, planes, j + offset) / xpos_scale_ref(spec, d, j + offset))
                else:
                    s = rotate_ref(q, planes, i + offset) @ rotate_ref(k, planes, j + offset)
                    rope = spec.rope if isinstance(spec, Hybrid) else spec
                    if isinstance(rope, RoPE) and rope.applies_to(h, H):  # scaled RoPE: s^2 on
                        f = rope_scaling_reference.attention_factor(rope) ** 2  # the rotary dims
                        rq, rk = rotate_ref(q, planes, i + offset), rotate_ref(k, planes, j + offset)
                        dims = [c for a, b, _ in planes for c in (a, b)]
                        s = s + (f - 1) * (rq[dims] @ rk[dims])
                out[h, i, j] = s * scale + bias_ref(spec, attn, h, i + offset, j + offset, H)
    return out


def _rotate_old(x: torch.Tensor, rot, offset: int) -> torch.Tensor:
    """The pre-speed-up rotation, (B, H, T, d): real cos/sin formula on strided slices."""
    T = x.shape[-2]
    ang = torch.arange(offset, offset + T, dtype=torch.float64)[None, :, None] * \
        rot.thetas.double()[:, None, :]  # (H or 1, T, P)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    r = rot.rotary_dims
    if rot.pairing == "interleaved":
        a, b = x[..., 0:r:2], x[..., 1:r:2]
        out = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
    else:
        a, b = x[..., : r // 2], x[..., r // 2: r]
        out = torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    return out if r == x.shape[-1] else torch.cat([out, x[..., r:]], dim=-1)


def old_model_logits(model, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Logits of ``model``'s weights computed the way the model did before the fast step: three
    Q, K, V slices of the fused weight, RoPE by the real formula, SDPA with one additive mask per
    layer (bias + padding + causal), masked mean pooling.  Not for MLA (its attention differs)."""
    import torch.nn.functional as F
    cfg = model.cfg
    B, T = tokens.shape
    D, H = cfg.d_model, cfg.n_heads
    dh = D // H
    x0 = model.embed(tokens)
    if model.pos_embed is not None:
        x0 = x0 + model.pos_embed(T, offset, x0.dtype)
    keep = tokens != 0
    h = x0
    for blk in model.blocks:
        attn = blk.attn
        a = blk.ln1(h)
        kv = blk.ln1(x0) if cfg.kv_source == "input" else a
        Wq, Wk, Wv = attn.qkv.weight.split(D, dim=0)
        q, k, v = (F.linear(inp, W).view(B, T, H, dh).transpose(1, 2)
                   for inp, W in ((a, Wq), (kv, Wk), (kv, Wv)))
        if attn.rotary is not None:
            q, k = _rotate_old(q, attn.rotary, offset), _rotate_old(k, attn.rotary, offset)
        mask = torch.zeros(B, H, T, T, dtype=q.dtype)
        if attn.bias is not None:
            mask = mask + attn.bias(T, offset, q.dtype)[None]
        if cfg.mask_padding:
            mask = mask.masked_fill(~keep[:, None, None, :], float("-inf"))
        if cfg.causal:
            mask = mask.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, T, dh)
        h = h + attn.out(z.transpose(1, 2).reshape(B, T, D))
        h = h + blk.mlp(blk.ln2(h))
    h = model.ln_f(h)
    w = keep.to(h.dtype)[:, :, None] if cfg.mask_padding else torch.ones(B, T, 1, dtype=h.dtype)
    return model.classifier((h * w).sum(1) / w.sum(1).clamp(min=1))
