"""Whether anything watches a model's forward: the fast path's one question about hooks.

Packing changes the layouts a hook would see and skips module calls, so the fast path's door
(:func:`posenc.empirical.fast.forward`) runs the reference whenever something could watch: a hook
function on one of posenc's hook points (:class:`~posenc.empirical.model.hooks.HookPoint`, read
through its public ``active``), or a torch module hook -- forward, forward-pre, backward or
backward-pre, on the model or any submodule, or global
(``torch.nn.modules.module.register_module_forward_hook`` and its kin).  A torch hook on a hook
point itself does not count: the reference calls a point only when it has a hook function.

torch 2.13 registers hooks through public calls (``Module.register_forward_hook`` and the rest,
each returning a ``RemovableHandle``) but offers no public way to ask whether any are registered.
The registries read below are the ones ``Module.__call__`` itself reads to skip its hook logic:
private torch API, which the project keeps inside the fast path (a test holds the rest of posenc
to public torch).
"""

from __future__ import annotations

import weakref
from typing import Optional

from torch import nn

from ..model.hooks import HookPoint

__all__ = ["watcher"]

#: model -> (its hook points, its other modules): a model's module tree is fixed once it is built
_parts: "weakref.WeakKeyDictionary[nn.Module, tuple[list[HookPoint], list[nn.Module]]]" = \
    weakref.WeakKeyDictionary()

_MODULE_REGISTRIES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_GLOBAL_REGISTRIES = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                      "_global_backward_pre_hooks")


def _split(model: nn.Module) -> tuple[list[HookPoint], list[nn.Module]]:
    parts = _parts.get(model)
    if parts is None:
        modules = list(model.modules())
        parts = ([m for m in modules if isinstance(m, HookPoint)],
                 [m for m in modules if not isinstance(m, HookPoint)])
        _parts[model] = parts
    return parts


def watcher(model: nn.Module) -> Optional[str]:
    """What watches ``model``'s forward (``'a hook point'``, ``'a torch module hook'``, ``'a
    global torch module hook'``), or None when nothing does."""
    points, modules = _split(model)
    if any(p.active for p in points):
        return "a hook point"
    registry = nn.modules.module
    if any(getattr(registry, name, None) for name in _GLOBAL_REGISTRIES):
        return "a global torch module hook"
    # not the hook points': the reference calls a point only when it has a hook function
    if any(getattr(m, name, None) for m in modules for name in _MODULE_REGISTRIES):
        return "a torch module hook"
    return None
