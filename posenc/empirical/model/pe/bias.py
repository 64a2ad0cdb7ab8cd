"""Additive attention biases B[h, i, j] (query i, key j), as torch modules.

* ALiBi (Press et al. 2022): slopes ``press`` -- 2^(-8h/H), h = 1..H; for H not
  a power of two, the slopes of the nearest lower power of two P followed by
  every other slope of 2P (the first H - P of them) -- or ``exp`` -- exp(-h/H),
  or ``exp0`` -- exp(-h/H) for h = 0..H-1, the paper's code.  ``symmetric``: B = -slope |i - j|; ``causal``:
  B = -slope (i - j) for j <= i and 0 above the diagonal.
* T5 relative buckets (Raffel et al. 2020) of the relative position ``j - i``:
  bidirectional, half the buckets per sign (positive j - i in the upper half),
  exact below num_buckets/4, log-spaced up to max_distance, one learned scalar
  per bucket and head.  The log is taken in float64.
* Per-offset table (the paper's code): one learned scalar per head and offset
  ``i - j`` clipped to [-max_distance, max_distance].
* Custom kernel g(k), k = i - j, the same for every head; evaluated with torch
  float64 functions through :meth:`posenc.encodings.expression.Expr.evaluate`.

Each module's ``forward(seq, offset)`` returns the bias for positions
``offset .. offset + seq - 1``: (heads, seq, seq), or (1, seq, seq) for the
head-independent custom kernel.  Learned tables are ``nn.Parameter`` ``weight``
of shape (heads, num_buckets) or (heads, 2 * max_distance + 1).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ....errors import PosencError
from .table_cache import TableCache
from ....encodings.expression import Expr


def alibi_slopes(n_heads: int, schedule: str) -> list[float]:
    """ALiBi slope of each head h = 1..n_heads (Python floats); ``exp0``: exp(-h/H) for
    h = 0..H-1 (the paper's code: head 0 has slope 1)."""
    if schedule in ("exp", "exp0"):
        first = 0 if schedule == "exp0" else 1
        return [math.exp(-h / n_heads) for h in range(first, first + n_heads)]

    def power_of_two(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    p = 2 ** int(math.floor(math.log2(n_heads)))
    if p == n_heads:
        return power_of_two(n_heads)
    return power_of_two(p) + power_of_two(2 * p)[0::2][: n_heads - p]


def _offsets(seq: int, offset: int, device=None) -> torch.Tensor:
    """(seq, seq) long matrix of i - j for absolute positions offset + index."""
    pos = torch.arange(offset, offset + seq, device=device)
    return pos[:, None] - pos[None, :]


def t5_buckets(relative: torch.Tensor, num_buckets: int, max_distance: int) -> torch.Tensor:
    """T5 bucket of each relative position ``j - i`` (bidirectional)."""
    half = num_buckets // 2
    max_exact = half // 2
    if max_distance <= max_exact:
        raise PosencError(f"relative_bias: t5 needs max_distance > num_buckets/4 = {max_exact}; "
                          f"got {max_distance}")
    bucket = (relative > 0).to(torch.long) * half
    n = relative.abs()
    scaled = torch.log(n.to(torch.float64).clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = max_exact + (scaled * (half - max_exact)).to(torch.long)
    large = large.clamp(max=half - 1)
    return bucket + torch.where(n < max_exact, n, large)


class _Cached(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self._cache = TableCache()

    def _cached(self, key: tuple, make, source: torch.Tensor) -> torch.Tensor:
        return self._cache.get(key, make, source)


class AlibiBias(_Cached):
    learned = False

    def __init__(self, n_heads: int, schedule: str = "press", direction: str = "symmetric"):
        super().__init__()
        self.direction = direction
        self.register_buffer("slopes", torch.tensor(alibi_slopes(n_heads, schedule),
                                                    dtype=torch.float64), persistent=False)

    def forward(self, seq: int, offset: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        def make() -> torch.Tensor:
            k = _offsets(seq, offset, self.slopes.device).to(torch.float64)  # (T, T) i - j
            dist = k.abs() if self.direction == "symmetric" else k.clamp(min=0)
            return (-self.slopes[:, None, None] * dist).to(dtype)  # (H, T, T)
        return self._cached((seq, offset, dtype), make, self.slopes)


class T5Bias(_Cached):
    learned = True

    def __init__(self, n_heads: int, num_buckets: int = 32, max_distance: int = 128):
        super().__init__()
        self.num_buckets, self.max_distance = num_buckets, max_distance
        t5_buckets(torch.zeros(1, dtype=torch.long), num_buckets, max_distance)  # validate
        self.weight = nn.Parameter(torch.randn(n_heads, num_buckets) * 0.02)

    def index(self, seq: int, offset: int = 0) -> torch.Tensor:
        """(seq, seq) bucket index of each (i, j)."""
        return self._cached((seq, offset), lambda: t5_buckets(
            -_offsets(seq, offset, self.weight.device), self.num_buckets, self.max_distance), self.weight)

    def forward(self, seq: int, offset: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return self.weight[:, self.index(seq, offset)].to(dtype)  # (H, T, T)


class TableBias(_Cached):
    learned = True

    def __init__(self, n_heads: int, max_distance: int = 128):
        super().__init__()
        self.max_distance = max_distance
        self.weight = nn.Parameter(torch.randn(n_heads, 2 * max_distance + 1) * 0.02)

    def used_columns(self, seq_len: int) -> slice:
        """The columns of the offsets a sequence of ``seq_len`` tokens reaches,
        |k| <= min(max_distance, seq_len - 1)."""
        md = self.max_distance
        reach = min(md, max(seq_len - 1, 0))
        return slice(md - reach, md + reach + 1)

    def index(self, seq: int, offset: int = 0) -> torch.Tensor:
        """(seq, seq) table index of each (i, j): clip(i - j) + max_distance."""
        md = self.max_distance
        return self._cached((seq, offset), lambda: _offsets(seq, offset, self.weight.device)
                            .clamp(-md, md) + md, self.weight)

    def forward(self, seq: int, offset: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return self.weight[:, self.index(seq, offset)].to(dtype)  # (H, T, T)


def _torch_fn(fn):
    return lambda *args: fn(*[torch.as_tensor(a, dtype=torch.float64) for a in args])


TORCH_FUNCTIONS = {
    "abs": _torch_fn(torch.abs), "exp": _torch_fn(torch.exp), "log": _torch_fn(torch.log),
    "sqrt": _torch_fn(torch.sqrt), "sin": _torch_fn(torch.sin), "cos": _torch_fn(torch.cos),
    "tanh": _torch_fn(torch.tanh), "sign": _torch_fn(torch.sign),
    "min": _torch_fn(torch.minimum), "max": _torch_fn(torch.maximum),
}


class KernelBias(_Cached):
    learned = False

    def __init__(self, kernel: Expr):
        super().__init__()
        self.kernel = kernel
        self.register_buffer("_probe", torch.zeros(0), persistent=False)  # tracks the device

    def forward(self, seq: int, offset: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        def make() -> torch.Tensor:
            k = _offsets(seq, offset, self._probe.device).to(torch.float64)
            g = torch.as_tensor(self.kernel.evaluate(k, TORCH_FUNCTIONS, number=float),
                                dtype=torch.float64)
            g = g.expand(seq, seq)
            if not torch.isfinite(g).all():
                bad = k[~torch.isfinite(g)][0]
                raise PosencError(f"custom kernel {self.kernel.text!r} is not finite at k = {int(bad)}")
            return g.to(dtype)[None]  # (1, T, T)
        return self._cached((seq, offset, dtype), make, self._probe)


class KerpleLogBias(nn.Module):
    """KERPLE-log (Chi et al. 2022): B[h, i, j] = -r1_h log(1 + r2_h |i - j|), r1_h, r2_h > 0
    learned per head, parametrised as exp of ``log_r`` (2, heads) so they stay positive."""

    learned = True

    def __init__(self, n_heads: int, r1: float = 1.0, r2: float = 1.0):
        super().__init__()
        init = torch.log(torch.tensor([[r1], [r2]], dtype=torch.float32)).expand(2, n_heads)
        self.log_r = nn.Parameter(init.clone())

    def forward(self, seq: int, offset: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        k = _offsets(seq, offset, self.log_r.device).abs().to(self.log_r.dtype)  # (T, T)
        r1, r2 = torch.exp(self.log_r)                                          # (H,), (H,)
        return (-r1[:, None, None] * torch.log1p(r2[:, None, None] * k)).to(dtype)  # (H, T, T)


#: bias part kind (posenc.encodings.parts) -> (part spec, n_heads) -> module.
BIAS_FORMULAS = {
    "alibi": lambda b, n_heads: AlibiBias(n_heads, b.slopes, b.direction),
    "t5": lambda b, n_heads: T5Bias(n_heads, b.num_buckets, b.max_distance),
    "table": lambda b, n_heads: TableBias(n_heads, b.max_distance),
    "kernel": lambda b, n_heads: KernelBias(b.kernel),
    "kerple_log": lambda b, n_heads: KerpleLogBias(n_heads, b.r1, b.r2),
}
