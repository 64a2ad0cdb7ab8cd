"""Scaled RoPE frequencies and attention factor in numpy (float64).

Written from the conventions in :mod:`posenc.encodings.rope_scaling` (transformers'
``ROPE_INIT_FUNCTIONS``), independently of the symbolic and torch layers.

``scaled_frequencies(spec, theta, r) -> (r/2,)``  the unscaled ``theta_m = base^(-2m/r)`` scaled
``attention_factor(spec) -> float``               s: the cos/sin tables are multiplied by s, so
                                                   each rotary plane's logit term by s^2
"""

from __future__ import annotations

import math

import numpy as np

from ..encodings import RoPE


def _base_change(spec: RoPE, r: int, ratio: float) -> float:
    """The base of NTK-aware scaling: base * ratio^(r/(r-2))."""
    return spec.base * ratio ** (r / (r - 2))


def _yarn(spec: RoPE, theta: np.ndarray, r: int) -> np.ndarray:
    def correction_dim(rotations: float) -> float:
        return r * math.log(spec.original / (rotations * 2 * math.pi)) / (2 * math.log(spec.base))

    low = max(math.floor(correction_dim(spec.beta_fast)), 0)
    high = min(math.ceil(correction_dim(spec.beta_slow)), r - 1)
    if low == high:
        high += 0.001
    gamma = np.clip((np.arange(r // 2) - low) / (high - low), 0.0, 1.0)   # 1: interpolated
    return theta * (1.0 - gamma) + theta / spec.factor * gamma


def _llama3(spec: RoPE, theta: np.ndarray) -> np.ndarray:
    lo, hi, f, L = spec.low_freq_factor, spec.high_freq_factor, spec.factor, spec.original
    wavelength = 2 * np.pi / theta
    if hi == lo:            # Llama 4: no band between (rope_scaling's docstring)
        return np.where(wavelength > L / lo, theta / f, theta)
    smooth = (L / wavelength - lo) / (hi - lo)
    mid = (1 - smooth) * theta / f + smooth * theta
    return np.where(wavelength < L / hi, theta, np.where(wavelength > L / lo, theta / f, mid))


def scaled_frequencies(spec: RoPE, r: int) -> np.ndarray:
    """theta'_m, m = 0 .. r/2 - 1, of the spec's scaling (before any p-RoPE mask)."""
    kind, m = spec.scaling, np.arange(r // 2)
    if kind == "ntk":
        base = _base_change(spec, r, spec.factor)
    elif kind == "dynamic":
        n = max(spec.seq_len, spec.original)
        base = _base_change(spec, r, spec.factor * n / spec.original - (spec.factor - 1))
    else:
        base = spec.base
    theta = base ** (-2.0 * m / r)
    if kind in ("none", "ntk", "dynamic"):
        return theta
    if kind == "linear":
        return theta / spec.factor
    if kind == "yarn":
        return _yarn(spec, theta, r)
    if kind == "llama3":
        return _llama3(spec, theta)
    if kind == "longrope":
        long = spec.seq_len is not None and spec.seq_len > spec.original
        return theta / np.asarray(spec.long_factor if long else spec.short_factor, dtype=float)
    raise ValueError(f"no numeric formula for rope scaling {kind!r}")  # pragma: no cover


def attention_factor(spec: RoPE) -> float:
    """s (1 but for yarn and longrope): given, or the kind's default from ``factor``."""
    if spec.scaling not in ("yarn", "longrope"):
        return 1.0
    if spec.attention_factor is not None:
        return float(spec.attention_factor)
    if spec.factor <= 1:
        return 1.0
    if spec.scaling == "yarn":
        return 0.1 * math.log(spec.factor) + 1.0
    return math.sqrt(1 + math.log(spec.factor) / math.log(spec.original))
