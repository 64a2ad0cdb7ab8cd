"""TransformerLens-style hook points: named identity modules that analyses can read or edit.

The calling convention is TransformerLens's: a hook function is called as
``fn(activation, hook=hook_point)`` and may return a replacement tensor (or
None to keep the activation).  ``hook.name`` is the point's full name, e.g.
``blocks.0.attn.hook_z``.  :class:`Hooked` gives a model ``hook_dict``,
``hook_points()``, ``add_hook`` / ``reset_hooks``, ``hooks(...)`` (a context
manager), ``run_with_hooks(*args, fwd_hooks=[(name or filter, fn)])`` and
``run_with_cache(*args, names_filter=...) -> (output, cache)``; the cache is a
dict keyed by full names that also accepts TransformerLens's short keys
(``cache["pattern", 0]`` is ``cache["blocks.0.attn.hook_pattern"]``).

Modules call a point through :func:`run_hook`, which skips it entirely when no
function is attached, and check ``hook.active`` to decide whether to
materialise something costly (the attention scores, on a kernel that does not
form them, are computed explicitly only when a hook asks for them).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable, Iterator, Optional, Union

import torch
from torch import nn

HookFn = Callable[..., Any]  # fn(activation, hook=HookPoint) -> replacement or None
NameFilter = Union[None, str, Iterable[str], Callable[[str], bool]]

# TransformerLens's short activation names (utils.get_act_name) -> our full names.
_ATTN = ("q", "k", "v", "z", "rot_q", "rot_k", "attn_scores", "pattern", "q_in", "kv_in")
_BLOCK = ("resid_pre", "resid_mid", "resid_post", "attn_out", "mlp_out")
_ALIASES = {"attn": "pattern", "scores": "attn_scores"}


def act_name(name: str, layer: Optional[int] = None) -> str:
    """Full hook name of a TransformerLens short name: ``act_name("z", 1)`` ->
    ``blocks.1.attn.hook_z``; ``act_name("embed")`` -> ``hook_embed``."""
    name = _ALIASES.get(name, name)
    if layer is None:
        return name if name.startswith(("hook_", "blocks.")) else f"hook_{name}"
    if name in _ATTN:
        return f"blocks.{layer}.attn.hook_{name}"
    if name in _BLOCK:
        return f"blocks.{layer}.hook_{name}"
    raise KeyError(f"no per-layer activation named {name!r}")


class ActivationCache(dict):
    """``{full hook name: tensor}``; ``cache[short, layer]`` reads TransformerLens's short keys."""

    def __getitem__(self, key: Any) -> torch.Tensor:
        if isinstance(key, tuple):
            key = act_name(*key)
        elif isinstance(key, str) and not dict.__contains__(self, key):
            key = act_name(key)
        return dict.__getitem__(self, key)


class HookPoint(nn.Module):
    """Identity unless functions are attached; each may return a replacement."""

    def __init__(self) -> None:
        super().__init__()
        self.fns: list[HookFn] = []
        self.name = ""
        self.ctx: dict[Any, Any] = {}  # scratch space for hook functions, as in TransformerLens

    @property
    def active(self) -> bool:
        return bool(self.fns)

    def add_hook(self, fn: HookFn, dir: str = "fwd") -> None:
        if dir != "fwd":
            raise NotImplementedError("only forward hooks are supported")
        self.fns.append(fn)

    def remove_hooks(self, dir: str = "fwd") -> None:
        self.fns.clear()
        self.ctx.clear()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for fn in self.fns:
            out = fn(x, hook=self)
            if out is not None:
                x = out
        return x


def run_hook(point: HookPoint, x: torch.Tensor) -> torch.Tensor:
    """``point(x)``, without the module-call overhead when nothing is attached."""
    return point(x) if point.fns else x


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

    @property
    def hook_dict(self) -> dict[str, HookPoint]:
        return self.hook_points()

    def _resolve(self, names: NameFilter) -> list[HookPoint]:
        points = self.hook_points()
        if isinstance(names, str) and names not in points:
            raise KeyError(f"no hook point named {names!r}")
        match = _matcher(names)
        return [p for n, p in points.items() if match(n)]

    def add_hook(self, name: NameFilter, fn: HookFn, dir: str = "fwd") -> None:
        """Attach ``fn`` until :meth:`reset_hooks` (TransformerLens's ``model.add_hook``)."""
        for p in self._resolve(name):
            p.add_hook(fn, dir)

    def reset_hooks(self) -> None:
        for p in self.hook_points().values():
            p.remove_hooks()

    @contextlib.contextmanager
    def hooks(self, fwd_hooks: Iterable[tuple[NameFilter, HookFn]]) -> Iterator[None]:
        added: list[tuple[HookPoint, HookFn]] = []
        try:
            for names, fn in fwd_hooks:
                for p in self._resolve(names):
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
                       **kwargs: Any) -> tuple[Any, ActivationCache]:
        """Run and return ``(output, ActivationCache {hook name: detached tensor})``."""
        cache = ActivationCache()

        def save(x: torch.Tensor, hook: HookPoint) -> None:
            cache[hook.name] = x.detach()

        with self.hooks([(names_filter, save)]):
            out = self(*args, **kwargs)
        return out, cache
