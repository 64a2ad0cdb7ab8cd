"""The kinds of PE function ``posenc check`` checks, and the one check of a ``--kind``.

Its own module because both entry points read it: the in-process checks (:mod:`posenc.checker`)
and the isolated one (:mod:`.isolation`), which the package imports.
"""

from __future__ import annotations

from typing import Any

from ..coerce import is_int
from ..errors import PosencError
from .rope import GRID

IMPL_KINDS = ("rope", "bias", "xpos", "t5", "rope-qk")
#: what each kind is, as the messages name it
SIGNATURES = {"rope": "rotary function f(x, positions)", "bias": "bias function g(n_heads, n)",
              "xpos": "xPos function f(q, k, positions)",
              "t5": "T5 bucket function b(n) -> (n, n) buckets of query i, key j",
              "rope-qk": "rotary function of q and k f(q, k, positions) -> (q, k)"}


def check_kind(kind: Any) -> None:
    """``kind`` is None (detect it) or one of :data:`IMPL_KINDS`; else one PosencError line."""
    if kind is not None and kind not in IMPL_KINDS:
        raise PosencError(f"--kind must be one of {', '.join(IMPL_KINDS)}; got {kind!r}")


def check_max_positions(max_positions: Any) -> None:
    """None, or an int in [GRID, 10^9]: the checker reads positions 0..GRID-1 in any case."""
    if max_positions is not None and (not is_int(max_positions) or not
                                      GRID <= max_positions <= 10**9):
        raise PosencError(f"--max-positions must be an integer in [{GRID}, 10^9]; "
                          f"got {max_positions!r}")
