"""Absolute position embeddings added to the token embeddings.

* Sinusoidal (Vaswani et al. 2017): ``PE[p, 2m] = sin(p / base^(2m/D))``,
  ``PE[p, 2m+1] = cos(p / base^(2m/D))`` for model width D (an odd D ends with
  a sin column); computed in float64, then cast.  ``layout="half"``: all sines,
  then all cosines (``PE[p, m]``, ``PE[p, D/2 + m]``), the paper code's rope table.
* Learned absolute (GPT-2, BERT): a table of ``max_len`` learned vectors.

``forward(seq, offset)`` returns the (seq, D) embedding of positions
``offset .. offset + seq - 1``.
"""

from __future__ import annotations

import torch
from torch import nn

from ....errors import PosencError
from .table_cache import TableCache


def sinusoidal_table(positions: torch.Tensor, d_model: int, base: float,
                     layout: str = "interleaved") -> torch.Tensor:
    """(len(positions), d_model) float64 sinusoidal embedding (``half``: sines, then cosines)."""
    p = positions.to(torch.float64)[:, None]
    m = torch.arange(0, d_model, 2, dtype=torch.float64, device=positions.device)  # 2m
    angle = p / torch.tensor(float(base), dtype=torch.float64) ** (m / d_model)  # (T, ceil(D/2))
    if layout == "half":
        if d_model % 2:
            raise PosencError(f"sinusoidal:layout=half needs an even model width; got {d_model}")
        return torch.cat([angle.sin(), angle.cos()], dim=1)
    out = torch.empty(len(positions), d_model, dtype=torch.float64, device=positions.device)
    out[:, 0::2] = angle.sin()
    out[:, 1::2] = angle.cos()[:, : d_model // 2]
    return out


class SinusoidalAbsolute(nn.Module):
    learned = False

    def __init__(self, d_model: int, base: float = 10000.0, layout: str = "interleaved"):
        super().__init__()
        self.d_model, self.base, self.layout = d_model, base, layout
        self.register_buffer("_probe", torch.zeros(0), persistent=False)
        self._cache = TableCache()

    def forward(self, seq: int, offset: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        def make() -> torch.Tensor:
            pos = torch.arange(offset, offset + seq, device=self._probe.device)
            return sinusoidal_table(pos, self.d_model, self.base, self.layout).to(dtype)
        return self._cache.get((seq, offset, dtype), make, self._probe)


class LearnedAbsolute(nn.Module):
    learned = True

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.max_len = max_len
        self.weight = nn.Parameter(torch.randn(max_len, d_model))  # N(0, 1), as nn.Embedding

    def forward(self, seq: int, offset: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        if offset < 0 or offset + seq > self.max_len:
            raise PosencError(f"learned absolute PE has max_len {self.max_len}; positions "
                              f"{offset}..{offset + seq - 1} do not fit")
        return self.weight[offset: offset + seq].to(dtype)
