"""AdamW with torch's fused kernel and a cheaper step on a CPU.

``torch.optim.AdamW(fused=True)`` keeps one step-count tensor per parameter and, every step,
regroups all tensors by device and dtype and increments the counts with ``torch._foreach_add_`` --
which on a CPU loops over the 0-dim tensors one by one.  For the quick model (49 parameter tensors)
that bookkeeping measured about as long as the fused update itself (~0.25 ms of a 13-20 ms step).

:class:`FusedAdamW` steps a group whose parameters all have gradients with one shared step-count
tensor (the value torch keeps one copy of per parameter: they step together), incremented once,
and calls the same kernel, ``torch._fused_adamw_``, on the group's tensor lists.  The update is
torch's, bit for bit (a test compares the parameters and the state after several steps); the
state dict has the same entries.  Anything else -- a closure, a parameter without a gradient, a
GPU, amsgrad / maximize / capturable / differentiable, a tensor learning rate, a torch without
the kernel -- takes torch's own step.
"""

from __future__ import annotations

from typing import Optional

import torch


class FusedAdamW(torch.optim.AdamW):
    """``torch.optim.AdamW(params, ..., fused=True)`` with the CPU step described above."""

    def __init__(self, params, **kwargs):
        super().__init__(params, fused=True, **kwargs)
        self._states: dict[int, tuple] = {}  # group index -> (self.state, its params, states)

    def _group_states(self, i: int, group: dict, grads: list) -> Optional[list]:
        """The state dicts of group ``i``'s parameters when the fused CPU step applies to it this
        step (every parameter on a CPU with a dense gradient -- ``grads``, no flag the kernel
        call below does not pass, a float learning rate, the state created), else None.  The list
        is cached per group while ``self.state`` and the group's parameter list are the same
        objects (torch replaces ``self.state`` on ``load_state_dict``): looking a Parameter up in
        the state dict calls its Python ``__hash__``, 49 times per step for the quick model."""
        params = group["params"]
        if any(g is None or not g.is_cpu or g.is_sparse for g in grads):
            return None
        if (group["amsgrad"] or group["maximize"] or group["capturable"] or group["differentiable"]
                or not isinstance(group["lr"], float)):
            return None
        cached = self._states.get(i)
        if cached is not None and cached[0] is self.state and cached[1] is params \
                and len(cached[2]) == len(params):
            return cached[2]
        states = [self.state.get(p) for p in params]
        if not all(states) or not all(p.is_cpu for p in params):
            return None  # the first step creates the state
        self._states[i] = (self.state, params, states)
        return states

    def _torch_step(self, closure):
        """torch's AdamW step without its hook wrapper: this step's wrapper already ran the
        optimiser-step hooks once."""
        step = torch.optim.AdamW.step
        if getattr(step, "hooked", False):
            step = step.__wrapped__
        return step(self, closure)

    def state_dict(self) -> dict:
        """torch's state dict, with one step-count tensor per parameter: another optimiser (torch's
        own AdamW) loads it and increments each count once per step, as it expects; shared, one
        tensor would count every parameter's increment."""
        sd = super().state_dict()
        sd["state"] = {k: {**v, "step": v["step"].clone()} if "step" in v else v
                       for k, v in sd["state"].items()}
        return sd

    def _unshare(self) -> None:
        """One step-count tensor per parameter again (what torch's own step increments)."""
        seen: set[int] = set()
        for state in self.state.values():
            if "step" in state:
                if id(state["step"]) in seen:
                    state["step"] = state["step"].clone()
                seen.add(id(state["step"]))

    @torch.no_grad()
    def step(self, closure=None):
        plan = None
        grads = [[p.grad for p in g["params"]] for g in self.param_groups]
        if closure is None and hasattr(torch, "_fused_adamw_"):
            plan = [self._group_states(i, g, gs) for i, (g, gs) in enumerate(zip(self.param_groups, grads))]
        if plan is None or any(states is None for states in plan):
            self._unshare()  # torch's step counts each parameter's tensor
            return self._torch_step(closure)  # also the first step: it creates the state
        for states in plan:
            step = states[0]["step"]
            if any(s["step"] is not step for s in states):  # e.g. after load_state_dict
                if any(not torch.equal(s["step"], step) for s in states):
                    self._unshare()
                    return self._torch_step(None)
                for s in states:
                    s["step"] = step  # one shared count
        for group, states, group_grads in zip(self.param_groups, plan, grads):
            params = group["params"]
            step = states[0]["step"]
            step.add_(1)
            beta1, beta2 = group["betas"]
            torch._fused_adamw_(params, group_grads, [s["exp_avg"] for s in states],
                                [s["exp_avg_sq"] for s in states], [], [step] * len(params),
                                amsgrad=False, lr=group["lr"], beta1=beta1, beta2=beta2,
                                weight_decay=group["weight_decay"], eps=group["eps"],
                                maximize=False, grad_scale=None, found_inf=None)
        return None

    def zero_grad(self, set_to_none: bool = True) -> None:
        """torch's ``zero_grad``; with ``set_to_none`` (the default) a plain loop, without the
        profiler range torch opens around it (~20 us of a step)."""
        if not set_to_none:
            return super().zero_grad(set_to_none=False)
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None
