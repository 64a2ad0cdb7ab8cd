"""TransformerLens-style hook points: named identity modules that analyses can read or edit.

A :class:`HookPoint` returns its input unchanged unless functions are attached;
each function ``fn(tensor, hook)`` may return a replacement tensor.  Modules
check ``hook.active`` to decide whether to materialise something costly (the
attention scores are computed explicitly only when a hook asks for them).
:class:`Hooked` adds ``hook_points()``, ``hooks(...)`` (a context manager),
``run_with_hooks`` and ``run_with_cache`` to a model.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable, Iterator, Union

import torch
from torch import nn

HookFn = Callable[[torch.Tensor, "HookPoint"], Any]
NameFilter = Union[None, str, Iterable[str], Callable[[str], bool]]


class HookPoint(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fns: list[HookFn] = []
        self.name = ""

    @property
    def active(self) -> bool:
        return bool(self.fns)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for fn in self.fns:
            out = fn(x, self)
            if out is not None:
                x = out
        return x


def _matcher(names: NameFilter) -> Callable[[str], bool]:
    if names is None:
        return lambda n: True
    if isinstance(names, str):
        return lambda n: n == names
    if callable(names):
        return names
    wanted = set(names)
    return lambda n: n in wanted


class Hooked(nn.Module):
    """Mix-in for a model whose sub-modules contain :class:`HookPoint` instances."""

    def name_hooks(self) -> None:
        for name, mod in self.named_modules():
            if isinstance(mod, HookPoint):
                mod.name = name

    def hook_points(self) -> dict[str, HookPoint]:
        return {n: m for n, m in self.named_modules() if isinstance(m, HookPoint)}

    @contextlib.contextmanager
    def hooks(self, fwd_hooks: Iterable[tuple[NameFilter, HookFn]]) -> Iterator[None]:
        points = self.hook_points()
        added: list[tuple[HookPoint, HookFn]] = []
        try:
            for names, fn in fwd_hooks:
                match = _matcher(names)
                hits = [p for n, p in points.items() if match(n)]
                if isinstance(names, str) and not hits:
                    raise KeyError(f"no hook point named {names!r}")
                for p in hits:
                    p.fns.append(fn)
                    added.append((p, fn))
            yield
        finally:
            for p, fn in added:
                p.fns.remove(fn)

    def run_with_hooks(self, *args: Any, fwd_hooks: Iterable[tuple[NameFilter, HookFn]] = (),
                       **kwargs: Any) -> Any:
        with self.hooks(fwd_hooks):
            return self(*args, **kwargs)

    def run_with_cache(self, *args: Any, names_filter: NameFilter = None,
                       **kwargs: Any) -> tuple[Any, dict[str, torch.Tensor]]:
        """Run and return ``(output, {hook name: detached tensor})``."""
        cache: dict[str, torch.Tensor] = {}

        def save(x: torch.Tensor, hook: HookPoint) -> None:
            cache[hook.name] = x.detach()

        with self.hooks([(names_filter, save)]):
            out = self(*args, **kwargs)
        return out, cache
