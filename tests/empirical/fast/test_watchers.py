"""posenc.empirical.fast.watchers: every kind of hook a user can register makes the fast path's
door run the reference (the hook fires and sees the padded layout); with none, the packed forward
runs and the reference is not called.  And the rest of posenc reads no private torch API."""

import ast
from pathlib import Path

import pytest
import torch
from torch.nn.modules import module as torch_module

from posenc.empirical import fast
from posenc.empirical.config import ModelConfig
from posenc.empirical.model.transformer import Transformer, build_model

T = 9
ROOT = Path(__file__).resolve().parents[3]


def _model():
    torch.manual_seed(0)
    cfg = ModelConfig(pe="rope", d_model=16, n_heads=2, n_layers=2, d_ff=24)
    return build_model(cfg, vocab_size=11, n_classes=5, max_len=20)


def _tokens():
    tok = torch.randint(1, 11, (3, T), generator=torch.Generator().manual_seed(1))
    tok[0, 4:] = 0  # padded rows: packing would show a hook other layouts than (3, T, ...)
    tok[2, 2:] = 0
    return tok


def _forward_pre(target, seen):
    return target.register_forward_pre_hook(lambda m, args: seen.append(tuple(args[0].shape)))


def _forward(target, seen):
    return target.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))


def _backward(target, seen):
    return target.register_full_backward_hook(lambda m, gin, gout: seen.append(tuple(gout[0].shape)))


def _backward_pre(target, seen):
    return target.register_full_backward_pre_hook(lambda m, gout: seen.append(tuple(gout[0].shape)))


class _Removable:
    def __init__(self, undo):
        self.remove = undo


def _global(register):
    def attach(model, seen):
        return register(lambda m, *a: seen.append(type(m).__name__))
    return attach


def _hook_point(model, seen):
    model.add_hook("blocks.0.hook_resid_pre", lambda x, hook: seen.append(tuple(x.shape)))
    return _Removable(model.reset_hooks)


def _hook_point_context(model, seen):
    ctx = model.hooks([("blocks.1.attn.hook_z", lambda x, hook: seen.append(tuple(x.shape)))])
    ctx.__enter__()
    return _Removable(lambda: ctx.__exit__(None, None, None))


#: name -> (attach(model, seen) -> handle with .remove(), what `seen` holds when the reference ran)
KINDS = {
    "model forward hook": (lambda m, s: _forward(m, s), [(3, 5)]),
    "model forward pre-hook": (lambda m, s: _forward_pre(m, s), [(3, T)]),
    "submodule forward hook": (lambda m, s: _forward(m.blocks[0].mlp, s), [(3, T, 16)]),
    "submodule forward pre-hook": (lambda m, s: _forward_pre(m.blocks[1].ln2, s), [(3, T, 16)]),
    "submodule backward hook": (lambda m, s: _backward(m.blocks[0].mlp, s), [(3, T, 16)]),
    "submodule backward pre-hook": (lambda m, s: _backward_pre(m.blocks[0].ln1, s), [(3, T, 16)]),
    "global forward hook": (_global(torch_module.register_module_forward_hook), None),
    "global forward pre-hook": (_global(torch_module.register_module_forward_pre_hook), None),
    "global backward hook": (_global(torch_module.register_module_full_backward_hook), None),
    "global backward pre-hook": (_global(torch_module.register_module_full_backward_pre_hook), None),
    "hook point (add_hook)": (_hook_point, [(3, T, 16)]),
    "hook point (hooks context)": (_hook_point_context, [(3, T, 2, 8)]),
}


@pytest.fixture
def packed_calls(monkeypatch):
    """How often the door took the packed forward, and how often the reference forward ran."""
    calls = {"packed": 0, "reference": 0}
    packed, reference = fast.packed_forward, Transformer.forward

    def count_packed(*a, **k):
        calls["packed"] += 1
        return packed(*a, **k)

    def count_reference(self, *a, **k):
        calls["reference"] += 1
        return reference(self, *a, **k)

    monkeypatch.setattr(fast, "packed_forward", count_packed)
    monkeypatch.setattr(Transformer, "forward", count_reference)
    return calls


def _train_step(model):
    model.zero_grad()
    fast.forward(model, _tokens()).square().sum().backward()


def test_without_hooks_the_door_packs(packed_calls):
    model = _model()
    assert fast.watchers.watcher(model) is None and fast.why_not(model, _tokens()) is None
    _train_step(model)
    assert packed_calls == {"packed": 1, "reference": 0}


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # no input needs a gradient
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_of_hook_takes_the_reference(kind, packed_calls):
    model = _model()
    attach, expected = KINDS[kind]
    seen: list = []
    handle = attach(model, seen)
    try:
        assert fast.watchers.watcher(model) is not None
        _train_step(model)
    finally:
        handle.remove()
    assert packed_calls == {"packed": 0, "reference": 1}
    if expected is None:  # a global hook: every module it is called on, the whole model first
        assert {"Transformer", "LayerNorm", "Sequential"} <= set(seen), seen
    else:
        assert seen == expected
    seen.clear()
    _train_step(model)  # removed: packed again, and the hook fires no more
    assert packed_calls == {"packed": 1, "reference": 1} and seen == []


def test_a_torch_hook_on_a_hook_point_alone_leaves_packing_on(packed_calls):
    """The reference never calls a hook point without a hook function, so its torch hooks never
    fire there either: packing loses nothing."""
    model = _model()
    seen: list = []
    handle = _forward(model.blocks[0].hook_resid_pre, seen)
    try:
        assert fast.watchers.watcher(model) is None
        assert torch.equal(model(_tokens()), model(_tokens())) and seen == []
    finally:
        handle.remove()


def _private_torch_reads(tree: ast.AST) -> list[str]:
    """torch.<_x>, nn.<...>._x, F._x chains and reads of nn.Module's private hook registries."""
    registries = {"_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                  "_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                  "_global_backward_pre_hooks", "_has_any_global_hook"}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        private = node.attr.startswith("_") and not node.attr.startswith("__")
        root = node.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if node.attr in registries or (private and isinstance(root, ast.Name)
                                       and root.id in ("torch", "nn", "F")):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_finds_a_private_read():
    assert _private_torch_reads(ast.parse("g = nn.modules.module._global_forward_hooks"))
    assert _private_torch_reads(ast.parse("m._forward_pre_hooks or torch._softmax(x)"))
    assert not _private_torch_reads(ast.parse("torch.nn.modules.module.register_module_forward_hook"))


def test_private_torch_api_only_in_the_fast_path():
    fast_dir = ROOT / "posenc" / "empirical" / "fast"
    bad = {}
    for path in sorted((ROOT / "posenc").rglob("*.py")):
        if fast_dir in path.parents:
            continue
        found = _private_torch_reads(ast.parse(path.read_text(), str(path)))
        if found:
            bad[str(path.relative_to(ROOT))] = found
    assert not bad, bad
