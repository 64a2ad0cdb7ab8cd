"""The tables a PE module derives from its spec (phasors, biases, sinusoids), cached per sequence
length, offset, dtype and device.

A training run meets one table per distinct batch length (a batch is trimmed to its longest
example): an epoch of the quick distance task has 19 (40..58 tokens), so a cache of 8 that
emptied itself when full rebuilt a table on most steps.  ``MAX_ENTRIES`` holds every length up
to a few hundred tokens; past it the least recently used table goes.  Tables are built outside
autograd and inference mode (plain tensors, usable in both).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable

import torch

MAX_ENTRIES = 256


class TableCache:
    """``get(key, make)``: the cached ``make()`` for ``key``, least recently used evicted past
    ``MAX_ENTRIES``; ``clear()`` when the module moves devices or dtypes."""

    def __init__(self) -> None:
        self._tables: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        table = self._tables.get(key)
        if table is None:
            with torch.inference_mode(False), torch.no_grad():
                table = make()
            self._tables[key] = table
            if len(self._tables) > MAX_ENTRIES:
                self._tables.popitem(last=False)
        else:
            self._tables.move_to_end(key)
        return table

    def clear(self) -> None:
        self._tables.clear()

    def __len__(self) -> int:
        return len(self._tables)
