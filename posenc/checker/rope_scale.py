"""A constant scale of the rotation: ``f(x, p) = s R_p x`` on the rotary dims -- a scaled RoPE's
attention factor (:mod:`posenc.encodings.rope_scaling`: transformers multiplies the cos and sin
tables by s; YaRN's default s = 0.1 ln(factor) + 1, LongRoPE's sqrt(1 + ln factor / ln original)).

Such an f is not orthogonal, and f(x, 0) = s x ≠ x, but it is a rotation times a scale that is
the same at every position: M_pᵀ M_p = diag(g) with g the same for every p, equal to s² on the
scaled dims and 1 on the others.  :func:`constant_scale` recognises that form; the checker then
reads the rotations off ``f / sqrt(g)`` (:class:`ScaledProbe`), so the position, pairing and
frequency properties judge the rotation alone, and :func:`check_scale` is the norm property:
with ``--expect scaling=..`` it passes when s is the expected attention factor; without one it
fails, naming what s looks like (plain RoPE preserves norms; a scale is only right when meant).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .report import FAIL, PASS, Property, fmt
from .rope import TOL, RopeProbe, check_norm


def constant_scale(M: np.ndarray) -> Optional[np.ndarray]:
    """sqrt(g) (dim,) when M_pᵀM_p = diag(g) for every p, g ∈ {1, s²} with s ≠ 1; else None."""
    gram = np.einsum("sda,sdb->sab", M, M)                                  # (S, D, D)
    g = np.diagonal(gram[0]).copy()
    if not (np.all(np.isfinite(g)) and np.all(g > TOL)):
        return None
    if np.abs(gram - np.diag(g)).max() > TOL * max(1.0, float(g.max())):
        return None                         # not diagonal, or not the same at every p
    scaled = np.abs(g - 1) > TOL
    if not scaled.any():
        return None
    s2 = float(g[scaled].mean())
    if np.abs(g[scaled] - s2).max() > TOL * s2:
        return None                         # more than one scale: not an attention factor
    return np.where(scaled, math.sqrt(s2), 1.0)


def scale_value(scale: np.ndarray) -> float:
    """The one s ≠ 1 of a :func:`constant_scale` vector."""
    return float(scale[np.abs(scale - 1) > TOL].mean())


class ScaledProbe(RopeProbe):
    """The user's f divided by the constant scale on each output dim: f / sqrt(g) = R_p."""

    def __init__(self, probe: RopeProbe, scale: np.ndarray) -> None:
        super().__init__(probe.caller, probe.dim)
        self.rank, self.inner, self.scale = probe.rank, probe, scale

    def apply(self, X: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return self.inner.apply(X, positions) / self.scale


def _guess(s: float) -> str:
    """What a constant scale s looks like: YaRN's default 0.1 ln F + 1 when F = e^(10(s−1)) is a
    whole factor (2, 4, 8, ...; to 1e-4), else an attention factor of no named default."""
    factor = math.exp(10 * (s - 1)) if 1 < s < 2 else 0.0
    nice = round(factor)
    if 2 <= nice <= 1024 and abs(factor / nice - 1) < 1e-4:
        return (f"an attention factor s (YaRN's 0.1 ln F + 1 with F = {nice}; pass --expect "
                f"scaling=yarn,factor={nice} if that is meant)?")
    return ("a constant scale of a rotation: an attention factor s (YaRN's 0.1 ln F + 1, "
            "LongRoPE's sqrt(1 + ln F / ln original), or given)?")


def norm_property(M: np.ndarray, positions: np.ndarray, summary: dict,
                  expected_spec: str = "") -> tuple[Property, Optional[np.ndarray]]:
    """The norm property of the maps ``M`` (S, D, D) and the constant scale found (None when
    there is none): norm preservation, or, for a rotation times a constant scale, that scale
    against the expected attention factor (``summary["expected_attention_factor"]``, set by an
    --expect with a scaling) -- :func:`check_scale`."""
    scale = constant_scale(M)
    if scale is None:
        return check_norm(M, positions), None
    return check_scale(scale, positions, summary.get("expected_attention_factor"),
                       expected_spec), scale


def check_scale(scale: np.ndarray, positions: np.ndarray,
                expected_s: Optional[float], expected_spec: str = "") -> Property:
    """The norm property of an f that is a rotation times the constant scale ``scale``."""
    s = scale_value(scale)
    dims = np.flatnonzero(np.abs(scale - 1) > TOL)
    where = "" if len(dims) == len(scale) else f" on dims {dims[0]}..{dims[-1]} (the rest unscaled)"
    found = f"‖f(x,p)‖ = {fmt(s)} ‖x‖{where} at every p in 0..{positions[-1]}"
    cex = f"x = e_{dims[0]}, position 0: f(x,0) = {fmt(s)} x"
    if expected_s is None:
        return Property("norm preservation", FAIL, f"f(·, p) is not orthogonal: {found}: "
                        + _guess(s), cex)
    if abs(s - expected_s) <= TOL * max(1.0, expected_s):
        return Property("norm preservation", PASS, f"{found}: the attention factor s = "
                        f"{fmt(expected_s)} of the expected {expected_spec}")
    return Property("norm preservation", FAIL, f"{found}: an attention factor s = {fmt(s)}, but "
                    f"the expected {expected_spec} has s = {fmt(expected_s)}", cex)
