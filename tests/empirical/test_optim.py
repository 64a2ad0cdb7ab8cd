"""FusedAdamW (posenc.empirical.fast.optim): torch's fused AdamW update bit for bit -- parameters and
state over several steps, after a state-dict round trip, and when it must fall back."""

import copy

import torch

from posenc.empirical.fast.optim import FusedAdamW


def _params(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(*s, generator=g)) for s in [(5, 3), (3,), (7,), (2, 2)]]


def _run(opt_cls, params, steps, start=0, lr_decay=True, **kw):
    opt = opt_cls(params, lr=1e-2, betas=(0.9, 0.98), weight_decay=0.1, **kw)
    for t in range(start, start + steps):
        g = torch.Generator().manual_seed(100 + t)
        for p in params:
            p.grad = torch.randn(p.shape, generator=g)
        if lr_decay:
            for group in opt.param_groups:
                group["lr"] = 1e-2 / (1 + t)  # a schedule, as train() sets it
        opt.step()
    return opt


def _continue(runs, steps, seed, lr=None):
    """Step each (optimizer, params) of ``runs`` through the same random gradients."""
    for opt, ps in runs:
        for step in steps:
            g = torch.Generator().manual_seed(seed + step)
            for p in ps:
                p.grad = torch.randn(p.shape, generator=g)
            if lr is not None:
                opt.param_groups[0]["lr"] = lr(step)
            opt.step()


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def test_the_update_is_torchs_fused_adamw_bit_for_bit():
    ours, theirs = _params(), _params()
    o = _run(FusedAdamW, ours, 6)
    t = _run(torch.optim.AdamW, theirs, 6, fused=True)
    assert _same(ours, theirs)
    for p, q in zip(ours, theirs):
        so, st = o.state[p], t.state[q]
        assert set(so) == set(st)
        assert all(torch.equal(so[k], st[k]) for k in st)
    assert not _same(ours, _params())  # the parameters moved


def test_a_state_dict_round_trip_keeps_the_update(tmp_path):
    ours, theirs = _params(), _params()
    o = _run(FusedAdamW, ours, 3)
    torch.save(o.state_dict(), tmp_path / "o.pt")
    o2 = FusedAdamW(ours, lr=1e-2, betas=(0.9, 0.98), weight_decay=0.1)
    o2.load_state_dict(torch.load(tmp_path / "o.pt"))
    t = _run(torch.optim.AdamW, theirs, 3, fused=True)
    _continue(((o2, ours), (t, theirs)), range(3, 6), 100, lr=lambda step: 1e-2 / (1 + step))
    assert _same(ours, theirs)
    assert all(float(o2.state[p]["step"]) == 6 for p in ours)


def test_a_parameter_without_a_gradient_takes_torchs_step():
    ours, theirs = _params(), _params()
    o = _run(FusedAdamW, ours, 2)
    t = _run(torch.optim.AdamW, theirs, 2, fused=True)
    for opt, ps in ((o, ours), (t, theirs)):
        ps[1].grad = None
        for p in (ps[0], ps[2], ps[3]):
            p.grad = torch.ones_like(p)
        opt.step()
    assert _same(ours, theirs)
    assert float(o.state[ours[1]]["step"]) == 2 and float(o.state[ours[0]]["step"]) == 3


def test_step_hooks_run_once_per_step_on_either_path():
    from torch.optim.optimizer import register_optimizer_step_pre_hook
    calls, grad_modes = [], []
    handle = register_optimizer_step_pre_hook(
        lambda opt, a, k: calls.append(1) or grad_modes.append(torch.is_grad_enabled()))
    try:
        params = _params()
        _run(FusedAdamW, params, 3)  # first step: torch's (creates the state); then the fast one
        params[0].grad = None
        opt = FusedAdamW(params, lr=1e-2)
        opt.step()  # torch's step again (a parameter without a gradient)
    finally:
        handle.remove()
    assert len(calls) == 4 and all(grad_modes)  # hooks see the caller's grad mode


def test_loading_a_state_into_the_same_optimizer_takes_the_loaded_state():
    """The fast step caches each group's state dicts; load_state_dict replaces them, and the
    next steps must update from the loaded moments (not the cached, stale ones)."""
    ours, theirs = _params(), _params()
    o = _run(FusedAdamW, ours, 3)  # the cache now holds this run's states
    donor = _run(FusedAdamW, _params(seed=1), 5)
    t = _run(torch.optim.AdamW, theirs, 3, fused=True)
    t.load_state_dict(copy.deepcopy(donor.state_dict()))  # load_state_dict keeps the tensors
    o.load_state_dict(copy.deepcopy(donor.state_dict()))
    _continue(((o, ours), (t, theirs)), range(3, 6), 200)
    assert _same(ours, theirs)
    assert all(float(o.state[p]["step"]) == 8 for p in ours)


def test_zero_grad_sets_none_or_zeros_as_torchs():
    params = _params()
    opt = FusedAdamW(params, lr=1e-2)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in params)
    opt.zero_grad()
    assert all(p.grad is None for p in params)


def test_torchs_adamw_loads_our_state_dict_and_counts_each_step_once():
    """Our state dict has one step count per parameter (the fast step shares one tensor), so
    torch's AdamW, which increments each parameter's count, continues with torch's update."""
    ours, theirs = _params(), _params()
    o = _run(FusedAdamW, ours, 3)
    _run(torch.optim.AdamW, theirs, 3, fused=True)
    t = torch.optim.AdamW(theirs, lr=1e-2, fused=True)
    t.load_state_dict(copy.deepcopy(o.state_dict()))  # load_state_dict keeps the tensors
    _continue(((o, ours), (t, theirs)), range(3, 5), 300)
    assert _same(ours, theirs)
    assert all(float(t.state[p]["step"]) == 5 for p in theirs)
    assert all(float(o.state[p]["step"]) == 5 for p in ours)
