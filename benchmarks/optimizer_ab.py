"""Interleaved A/B of the training step's optimiser (issue: measure before keeping):
posenc's former ``FusedAdamW`` (kept below as :class:`SharedStepAdamW`, the class this benchmark
measured) against ``torch.optim.AdamW(fused=True)``, the optimiser a user would otherwise take,
in the quick preset's full training step (the fast forward, backward, clipping as training does
it, the optimiser step).  Result (benchmarks/results/optimizer_ab_cpu_2026-12-02.txt): the
optimiser step 1.65x faster, the whole step 0.96-1.04x -- under the 3% bar, so training uses
torch's class and the package no longer has this one.

Both variants train copies of the same model on the same batches; every round runs each variant
for ``--steps`` steps in turn (the order alternates between rounds), so drift in the machine's
speed hits both alike.  Per variant the round's median step time is kept; the ratio
torch / posenc per round and its median over rounds are printed (> 1: posenc's is faster), with
the optimiser step alone timed the same way.  Keep the custom class only where the whole step is
more than 3% faster.  Run:
python benchmarks/optimizer_ab.py [--pe rope,alibi,sinusoidal] [--threads 1] [--rounds 20]
[--steps 20] [--task distance]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Optional

import torch
import torch.nn.functional as F

from posenc.empirical import fast
from posenc.empirical.config import preset
from posenc.empirical.training.runs import dataset_for, model_for


class SharedStepAdamW(torch.optim.AdamW):
    """``torch.optim.AdamW(params, ..., fused=True)`` with a cheaper CPU step: one shared step
    count per group (torch keeps and increments one 0-dim tensor per parameter, in a Python-level
    loop on a CPU) and cached state lookups; torch's update bit for bit."""

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


def variants(cfg, model_a, model_b):
    kw = dict(lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    return {"posenc SharedStepAdamW": (model_a, SharedStepAdamW(model_a.parameters(), **kw)),
            "torch AdamW(fused=True)": (model_b, torch.optim.AdamW(model_b.parameters(),
                                                                   fused=True, **kw))}


def step(model, opt, tokens, labels, clip):
    """One training step as train.py takes it; returns (whole step, optimiser step) seconds."""
    t0 = time.perf_counter()
    loss = F.cross_entropy(fast.forward(model, tokens).float(), labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    t1 = time.perf_counter()
    opt.step()
    t2 = time.perf_counter()
    return t2 - t0, t2 - t1


def measure(pe: str, args) -> None:
    cfg = preset("quick", args.task, pe)
    data = dataset_for(cfg).train
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(0))
    batches = [(data.tokens[i], data.labels[i]) for i in order[:args.batches * cfg.batch_size]
               .split(cfg.batch_size)]
    torch.manual_seed(0)
    a = model_for(cfg)
    b = model_for(cfg)
    b.load_state_dict(a.state_dict())
    vs = variants(cfg, a, b)
    names = list(vs)
    for name in names:  # warm-up: the optimiser state exists, caches are hot
        for tok, lab in batches[:3]:
            step(*vs[name], tok, lab, cfg.grad_clip)
    per_round: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            times = [step(*vs[name], *batches[(r * args.steps + i) % len(batches)],
                          cfg.grad_clip) for i in range(args.steps)]
            per_round[name].append((statistics.median(t for t, _ in times),
                                    statistics.median(o for _, o in times)))
    ours, theirs = (per_round[n] for n in names)
    whole = [t[0] / o[0] for o, t in zip(ours, theirs)]
    opt_only = [t[1] / o[1] for o, t in zip(ours, theirs)]
    print(f"{pe}: step ms posenc {1e3 * statistics.median(o[0] for o in ours):.2f}, torch "
          f"{1e3 * statistics.median(t[0] for t in theirs):.2f}; optimiser ms posenc "
          f"{1e3 * statistics.median(o[1] for o in ours):.3f}, torch "
          f"{1e3 * statistics.median(t[1] for t in theirs):.3f}")
    print(f"  ratio torch / posenc, whole step: median {statistics.median(whole):.3f} "
          f"(rounds {min(whole):.3f}..{max(whole):.3f}); optimiser step: median "
          f"{statistics.median(opt_only):.3f} (rounds {min(opt_only):.3f}..{max(opt_only):.3f})")
    diff = max(abs(p - q).max().item() for p, q in zip(a.parameters(), b.parameters()))
    print(f"  parameters after {3 + args.rounds * args.steps} steps each differ by at most "
          f"{diff:.2e} (the same update up to float rounding)", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pe", default="rope,alibi,sinusoidal")
    p.add_argument("--task", default="distance")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batches", type=int, default=40)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"# benchmarks/optimizer_ab.py, torch {torch.__version__}, {os.cpu_count()} CPUs, "
          f"{args.threads} thread(s), load average {os.getloadavg()}; quick preset, "
          f"{args.task}; {args.rounds} rounds x {args.steps} steps per variant")
    for pe in args.pe.split(","):
        measure(pe, args)


if __name__ == "__main__":
    main()
