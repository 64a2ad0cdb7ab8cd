"""Scaled RoPE frequencies and attention factor in plain Python ``math``, for the test references
of every layer (tests/theory/theory_reference.py, tests/empirical/empirical_reference.py,
tests/numerics/test_kernels.py).  Written from transformers' ``ROPE_INIT_FUNCTIONS``
(``modeling_rope_utils``, 5.x), one plane at a time; tests/test_rope_scaling_transformers.py
holds it against transformers itself."""

from __future__ import annotations

import math


def frequencies(spec, r: int) -> list[float]:
    """theta'_m, m = 0 .. r/2 - 1, before any p-RoPE mask."""
    kind, f, L = spec.scaling, spec.factor, spec.original
    base = spec.base
    if kind == "ntk":
        base = base * f ** (r / (r - 2))
    if kind == "dynamic":
        n = max(spec.seq_len, L)
        base = base * ((f * n / L) - (f - 1)) ** (r / (r - 2))
    out = []
    for m in range(r // 2):
        theta = 1.0 / base ** (2 * m / r)
        if kind == "linear":
            theta = theta / f
        elif kind == "yarn":
            def dim(rot):
                return (r * math.log(L / (rot * 2 * math.pi))) / (2 * math.log(spec.base))
            low = max(math.floor(dim(spec.beta_fast)), 0)
            high = min(math.ceil(dim(spec.beta_slow)), r - 1)
            if low == high:
                high += 0.001
            ramp = min(max((m - low) / (high - low), 0.0), 1.0)
            extrapolation = 1 - ramp
            theta = (theta / f) * (1 - extrapolation) + theta * extrapolation
        elif kind == "llama3":
            wavelen = 2 * math.pi / theta
            if wavelen > L / spec.low_freq_factor:
                theta = theta / f
            elif wavelen >= L / spec.high_freq_factor and spec.high_freq_factor > spec.low_freq_factor:
                smooth = (L / wavelen - spec.low_freq_factor) / (
                    spec.high_freq_factor - spec.low_freq_factor)
                theta = (1 - smooth) * theta / f + smooth * theta
        elif kind == "longrope":
            ext = spec.long_factor if spec.seq_len and spec.seq_len > L else spec.short_factor
            theta = theta / ext[m]
        out.append(theta)
    return out


def attention_factor(spec) -> float:
    if spec.scaling not in ("yarn", "longrope"):
        return 1.0
    if spec.attention_factor is not None:
        return spec.attention_factor
    if spec.factor <= 1:
        return 1.0
    if spec.scaling == "yarn":
        return 0.1 * math.log(spec.factor) + 1.0
    return math.sqrt(1 + math.log(spec.factor) / math.log(spec.original))


def scaled_specs(planes: int) -> list[str]:
    """Scaled RoPE specs for the cross-layer tests, for heads with ``planes`` rotary planes (the
    LongRoPE lists need one entry per plane).  Small original contexts and bases put planes on
    both sides of YaRN's ramp and of Llama 3's band at a head dim of 4 or 8; one spec has an
    attention factor with partial heads and half pairing, one with p-RoPE inside a hybrid."""
    short = ";".join(f"{1 + 0.25 * m:g}" for m in range(planes))
    long = ";".join(f"{2 + 1.5 * m:g}" for m in range(planes))
    return [
        "rope:scaling=linear,factor=4",
        "rope:scaling=ntk,factor=3",
        "rope:scaling=dynamic,factor=2,original=16,seq_len=40",
        "rope:scaling=yarn,factor=4,original=64",
        "rope:pairing=half,heads=1,scaling=yarn,factor=8,original=2048,beta_fast=16,beta_slow=2,"
        "attention_factor=1.3",
        "rope:base=100,scaling=llama3,factor=8,original=64",
        f"rope:scaling=longrope,factor=4,original=64,seq_len=100,short_factor={short},"
        f"long_factor={long}",
        "hybrid:additive=alibi,keep=0.5,scaling=yarn,factor=2,original=64",
    ]
