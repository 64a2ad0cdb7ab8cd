"""Scaled RoPE frequencies and attention factor in torch (float64).

Written from the conventions in :mod:`posenc.encodings.rope_scaling` (transformers'
``ROPE_INIT_FUNCTIONS``), independently of the symbolic and numeric layers.

``scaled_frequencies(spec, r) -> (r/2,) float64``  theta'_m of the spec's scaling
``attention_factor(spec) -> float``               s (multiplies the cos and sin tables)
"""

from __future__ import annotations

import math

import torch

from ....encodings import RoPE


def _yarn_ramp(spec: RoPE, r: int) -> torch.Tensor:
    """gamma_m in [0, 1]: 0 keeps theta_m (fast planes), 1 interpolates it to theta_m / factor."""
    def plane_of(rotations: float) -> float:  # the plane that turns ``rotations`` times in L
        return r * math.log(spec.original / (2 * math.pi * rotations)) / (2 * math.log(spec.base))

    low = max(math.floor(plane_of(spec.beta_fast)), 0)
    high = min(math.ceil(plane_of(spec.beta_slow)), r - 1)
    width = (high - low) if high != low else 0.001
    m = torch.arange(r // 2, dtype=torch.float64)
    return ((m - low) / width).clamp(0.0, 1.0)


def scaled_frequencies(spec: RoPE, r: int) -> torch.Tensor:
    """theta'_m, m = 0 .. r/2 - 1 (before any p-RoPE mask)."""
    kind, f = spec.scaling, float(spec.factor)
    base = float(spec.base)
    if kind == "ntk":
        base *= f ** (r / (r - 2))
    elif kind == "dynamic":
        length = max(spec.seq_len, spec.original)
        base *= (f * length / spec.original - (f - 1)) ** (r / (r - 2))
    theta = torch.tensor(base, dtype=torch.float64) ** (
        -torch.arange(0, r, 2, dtype=torch.float64) / r)
    if kind == "linear":
        theta = theta / f
    elif kind == "yarn":
        ramp = _yarn_ramp(spec, r)
        theta = torch.lerp(theta, theta / f, ramp)
    elif kind == "llama3":
        wave = 2 * math.pi / theta
        lo_wave, hi_wave = spec.original / spec.low_freq_factor, spec.original / spec.high_freq_factor
        span = spec.high_freq_factor - spec.low_freq_factor   # 0 (Llama 4): no band between
        a = (spec.original / wave - spec.low_freq_factor) / span if span else torch.ones_like(wave)
        middle = (1 - a) * theta / f + a * theta
        theta = torch.where(wave > lo_wave, theta / f, torch.where(wave < hi_wave, theta, middle))
    elif kind == "longrope":
        use_long = spec.seq_len is not None and spec.seq_len > spec.original
        ext = torch.tensor(spec.long_factor if use_long else spec.short_factor, dtype=torch.float64)
        theta = theta / ext
    return theta


def attention_factor(spec: RoPE) -> float:
    """s: YaRN 0.1 ln f + 1, LongRoPE sqrt(1 + ln f / ln L) (1 for f <= 1), unless given; 1 for
    the other kinds."""
    if spec.scaling == "yarn" or spec.scaling == "longrope":
        if spec.attention_factor is not None:
            return float(spec.attention_factor)
        f = float(spec.factor)
        if f <= 1.0:
            return 1.0
        if spec.scaling == "yarn":
            return 1.0 + 0.1 * math.log(f)
        return math.sqrt(1.0 + math.log(f) / math.log(spec.original))
    return 1.0
