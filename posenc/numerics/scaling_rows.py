"""Scaled RoPE beside the unscaled one in ``posenc bound``: the kernel's spectrum and its
long-range decay, at each length n, for the scaled spec and for the same RoPE without scaling.

A scaled RoPE's positional matrix is RoPE's Toeplitz kernel at the rescaled frequencies theta'_m,
with each rotary plane weighted by s^2 (s the attention factor: YaRN's temperature):
``K(k) = w_0 + sum_m (2 s^2 / d) cos(theta'_m k)``.  Rescaling slows the low planes, so K
decorrelates more slowly with the distance k; the rows measure that at the original context L
and the extended one L * factor (given as lengths n, e.g. ``--n 4096,16384``):

``far_max``   max_{n/2 <= k < n} |K(k)| / K(0): the largest kernel value in the far half
``far_mean``  mean_{n/2 <= k < n} |K(k)| / K(0): its typical size there

with the extreme eigenvalues and the norm of the n x n kernel (Lanczos on the FFT matvec above
n = 512: nothing n x n is formed, n up to 131072 and beyond).

``scaling_table(spec, ns, method, kw) -> ScalingReport | None`` (None for a spec without a
scaled RoPE); ``decay_envelope(spec, n, kw, bins) -> (k, scaled, unscaled)`` for the plot.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Optional

import numpy as np

from ..encodings import Hybrid, PESpec, RoPE
from . import conventions as cv
from .kernels import Kernel, _kernel
from .spectra import spectrum


@dataclass(frozen=True)
class ScalingRow:
    """The kernel of the scaled RoPE, or of the same RoPE unscaled, at one length n."""

    n: int
    kernel: str                 # "scaled" | "unscaled"
    spec: str
    lam_max: float
    lam_min: Optional[float]
    norm: float
    diagonal: float             # K(0) = w_0 + s^2 r / d
    far_max: float              # max |K(k)| / K(0) over n/2 <= k < n
    far_mean: float             # mean |K(k)| / K(0) over n/2 <= k < n
    method: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ScalingReport:
    """What ``bound`` adds for a scaled RoPE: its context lengths and the rows."""

    spec: str
    unscaled: str
    scaling: str
    original: int
    extended: int               # original * factor
    attention_factor: float
    rows: tuple[ScalingRow, ...]

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "rows"}
        out["rows"] = [r.to_dict() for r in self.rows]
        return out


def scaled_rope(spec: PESpec) -> Optional[RoPE]:
    """The scaled RoPE of ``spec`` (itself or a hybrid's), or None."""
    rope = spec.rope if isinstance(spec, Hybrid) else spec
    return rope if isinstance(rope, RoPE) and rope.scaled else None


def _far(column: np.ndarray) -> tuple[float, float]:
    n = column.size
    tail = np.abs(column[n // 2:]) / column[0]
    return float(tail.max()), float(tail.mean())


def _row(n: int, which: str, kern: Kernel, method: str) -> ScalingRow:
    t0 = time.perf_counter()
    sp = spectrum(kern.operator, method=method, psd=kern.psd, rank_bound=kern.rank_bound)
    far_max, far_mean = _far(kern.column)
    return ScalingRow(n=n, kernel=which, spec=kern.spec.to_string(), lam_max=float(sp.lambda_max),
                      lam_min=None if sp.lambda_min is None else float(sp.lambda_min),
                      norm=float(sp.sigma_max), diagonal=float(kern.column[0]), far_max=far_max,
                      far_mean=far_mean, method=sp.method, seconds=time.perf_counter() - t0)


def scaling_table(spec: PESpec, ns: list[int], method: str, kw: dict[str, Any]
                  ) -> Optional[ScalingReport]:
    """The scaled and the unscaled RoPE kernel at each n (``kw``: head, n_heads, head_dim, ...)."""
    rope = scaled_rope(spec)
    if rope is None:
        return None
    plain = rope.unscaled()
    rows = []
    for n in ns:
        rows.append(_row(n, "scaled", _kernel(rope, n, **kw), method))
        rows.append(_row(n, "unscaled", _kernel(plain, n, **kw), method))
    return ScalingReport(spec=rope.to_string(), unscaled=plain.to_string(), scaling=rope.scaling,
                         original=rope.original, extended=int(round(rope.original * rope.factor)),
                         attention_factor=cv.rope_attention_factor(rope), rows=tuple(rows))


def decay_envelope(spec: PESpec, n: int, kw: dict[str, Any], bins: int = 160
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """max |K(k)| / K(0) over log-spaced bins of k in [1, n), for the scaled and the unscaled
    kernel: (bin ends k, scaled, unscaled)."""
    rope = scaled_rope(spec)
    if rope is None:
        raise ValueError("decay_envelope needs a scaled RoPE")
    cols = [np.abs(_kernel(r, n, **kw).column) for r in (rope, rope.unscaled())]
    edges = np.unique(np.geomspace(1, n, bins).astype(int))
    ends = edges[1:]
    out = [np.array([c[a:b].max() / c[0] for a, b in zip(edges[:-1], ends)]) for c in cols]
    return ends, out[0], out[1]
