"""Reference attention logits by explicit loops, written independently of posenc.theory.

Implements the catalogue conventions (docstring of posenc/encodings/__init__.py) from
scratch with numpy and the math module -- one query/key pair at a time -- so
that agreement with the lambdified sympy forms is evidence.  ALiBi slopes use
the ALiBi repository's ``get_slopes``; T5 buckets use the float formula of
T5 / HF ``_relative_position_bucket``.
"""

from __future__ import annotations

import math

import numpy as np

import rope_scaling_reference  # tests/: on the path through its conftest.py

from posenc.encodings import (ALiBi, Custom, Hybrid, KerpleLog, LearnedAbsolute, MLA, NoPE,
                              RelativeBias, RoPE, Sinusoidal, XPos)


def alibi_slopes(n: int) -> list[float]:
    """Press et al.'s get_slopes (ALiBi repository)."""
    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n - closest]


def t5_bucket(relative: int, num_buckets: int, max_distance: int) -> int:
    """T5 / HF bidirectional bucket of relative = j - i (float formula)."""
    num_buckets //= 2
    ret = num_buckets if relative > 0 else 0
    n = abs(relative)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    large = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact)
                            * (num_buckets - max_exact))
    return ret + min(large, num_buckets - 1)


def sinusoidal_table(n: int, width: int, base: float = 10000.0,
                     layout: str = "interleaved") -> np.ndarray:
    """``half``: sines at dims m, cosines at dims width/2 + m (the paper code's rope table)."""
    pe = np.zeros((n, width))
    for p in range(n):
        for m in range(width // 2):
            a, b = (2 * m, 2 * m + 1) if layout == "interleaved" else (m, width // 2 + m)
            pe[p, a] = math.sin(p / base ** (2 * m / width))
            pe[p, b] = math.cos(p / base ** (2 * m / width))
    return pe


def rope_planes(spec: RoPE, d: int) -> list[tuple[int, int, float]]:
    r = 2 * int(math.floor(spec.fraction * d / 2 + 1e-9))
    planes = r // 2
    kept = max(1, min(planes, int(round(spec.keep * planes))))
    scaled = rope_scaling_reference.frequencies(spec, r)      # = base^(-2m/r) when unscaled
    out = []
    for m in range(planes):
        theta = scaled[m] if m < kept else 0.0
        a, b = (2 * m, 2 * m + 1) if spec.pairing == "interleaved" else (m, m + r // 2)
        out.append((a, b, theta))
    return out


def rotate(v: np.ndarray, planes, pos: int) -> np.ndarray:
    out = v.copy()
    for a, b, theta in planes:
        c, s = math.cos(pos * theta), math.sin(pos * theta)
        out[a] = v[a] * c - v[b] * s
        out[b] = v[a] * s + v[b] * c
    return out


def logits(spec, values: dict, n: int, n_heads: int, head_dim: int, scale: float) -> np.ndarray:
    """(H, n, n): scale * <q_i, k_j> + bias, one (h, i, j) at a time."""
    x = np.asarray(values["x"], dtype=float)[:n]
    width = x.shape[1]
    additive, rope, planes_fn = spec, None, None
    if isinstance(spec, Hybrid):
        additive, rope = spec.additive, spec.rope
    elif isinstance(spec, RoPE):
        rope = spec
        additive = Sinusoidal() if spec.add_absolute else NoPE()
    elif isinstance(spec, MLA):
        additive = {"none": NoPE(), "learned": LearnedAbsolute(),
                    "sinusoidal": Sinusoidal()}[spec.absolute]
    if rope is not None:
        planes_fn = lambda h: rope_planes(rope, head_dim) if rope.applies_to(h, n_heads) else []  # noqa: E731
    if isinstance(spec, Custom) and spec.frequencies is not None:
        freqs = spec.frequencies
        planes_fn = lambda h: [(2 * m, 2 * m + 1, f) for m, f in enumerate(freqs)]  # noqa: E731
    pe = np.zeros_like(x)
    if isinstance(additive, Sinusoidal):
        pe = sinusoidal_table(n, width, additive.base, additive.layout)
    elif isinstance(additive, LearnedAbsolute):
        pe = np.asarray(values["P"], dtype=float)[:n]
    inp = x + pe
    slopes = None
    if isinstance(additive, ALiBi):
        slopes = (alibi_slopes(n_heads) if additive.slopes == "press"
                  else [math.exp(-h / n_heads) for h in range(1, n_heads + 1)]
                  if additive.slopes == "exp" else [math.exp(-h / n_heads) for h in range(n_heads)])
    out = np.zeros((n_heads, n, n))
    for h in range(n_heads):
        planes = planes_fn(h) if planes_fn else []
        for i in range(n):
            for j in range(n):
                if isinstance(spec, MLA):
                    qk = _mla_qk(spec, values, h, inp[i], inp[j], i, j, head_dim)
                elif isinstance(spec, XPos):
                    q = rotate(values["W_q"][h] @ inp[i], xpos_planes(spec, head_dim), i)
                    k = rotate(values["W_k"][h] @ inp[j], xpos_planes(spec, head_dim), j)
                    qk = float((q * xpos_scale(spec, head_dim, i)) @ (k / xpos_scale(spec, head_dim, j)))
                else:
                    q = rotate(values["W_q"][h] @ inp[i], planes, i)
                    k = rotate(values["W_k"][h] @ inp[j], planes, j)
                    if rope is not None and planes:    # scaled RoPE: s on q and k's rotary dims
                        s = rope_scaling_reference.attention_factor(rope)
                        for a, b, _ in planes:
                            q[a], q[b], k[a], k[b] = s * q[a], s * q[b], s * k[a], s * k[b]
                    qk = float(q @ k)
                out[h, i, j] = scale * qk + _bias(additive, values, slopes, h, i, j)
    return out


def xpos_planes(spec: XPos, d: int) -> list[tuple[int, int, float]]:
    return [(2 * m, 2 * m + 1, spec.base ** (-2 * m / d)) for m in range(d // 2)]


def xpos_scale(spec: XPos, d: int, pos: int) -> np.ndarray:
    """zeta_m^(pos/scale_base) on dims 2m, 2m+1 (Sun et al. 2022: zeta_m = (2m/d + gamma)/(1+gamma))."""
    zeta = [(2 * m / d + spec.gamma) / (1 + spec.gamma) for m in range(d // 2)]
    return np.repeat([z ** (pos / spec.scale_base) for z in zeta], 2)


def _mla_qk(spec: MLA, values: dict, h: int, xi, xj, i: int, j: int, head_dim: int) -> float:
    r = spec.rope_dim or 2 * max(1, head_dim // 4)
    planes = [(2 * m, 2 * m + 1, spec.base ** (-2 * m / r)) for m in range(r // 2)]
    cq, ckv = values["W_dq"] @ xi, values["W_dkv"] @ xj
    content = (values["W_uq"][h] @ cq) @ (values["W_uk"][h] @ ckv)
    w_kr = values["W_kr"] if values["W_kr"].ndim == 2 else values["W_kr"][h]
    qr = rotate(values["W_qr"][h] @ cq, planes, i)
    kr = rotate(w_kr @ xj, planes, j)
    return float(content + qr @ kr)


def _bias(additive, values: dict, slopes, h: int, i: int, j: int) -> float:
    if isinstance(additive, ALiBi):
        if additive.direction == "symmetric":
            return -slopes[h] * abs(i - j)
        return -slopes[h] * (i - j) if j <= i else 0.0
    if isinstance(additive, RelativeBias):
        if additive.mode == "t5":
            return float(values["bias"][h, t5_bucket(j - i, additive.num_buckets,
                                                       additive.max_distance)])
        md = additive.max_distance
        return float(values["bias"][h, max(-md, min(md, i - j)) + md])
    if isinstance(additive, Custom) and additive.kernel is not None:
        fns = {"abs": abs, "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "sin": math.sin,
               "cos": math.cos, "tanh": math.tanh, "sign": lambda v: float(np.sign(v)),
               "min": min, "max": max}
        return float(additive.kernel.evaluate(i - j, fns))
    if isinstance(additive, KerpleLog):
        return -additive.r1 * math.log(1 + additive.r2 * abs(i - j))
    return 0.0
