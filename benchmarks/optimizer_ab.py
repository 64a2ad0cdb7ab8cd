"""Interleaved A/B of the training step's optimiser (measured before keeping): the two
AdamWs training makes (``posenc.empirical.training.train.make_optimizer``) -- torch's fused
kernel (``AdamW(fused=True)``, what ``step='fast'`` takes) against its default implementation
(what ``step='reference'`` takes) -- in the quick preset's full training step (the fast forward,
backward, clipping as training does it, the optimiser step).  The fused kernel is a speed
choice of the fast path, kept only while the whole step gains at least 3%.

An earlier version compared posenc's own optimiser (``FusedAdamW``, a shared step count per
group on the private ``torch._fused_adamw_``) against torch's fused AdamW: its optimiser step was
1.65x faster, the whole step 0.96-1.04x (benchmarks/results/optimizer_ab_cpu_2026-12-02.txt),
under the 3% bar, so the package and this benchmark no longer have it.

Both variants train copies of the same model on the same batches; every round runs each variant
for ``--steps`` steps in turn (the order alternates between rounds), so drift in the machine's
speed hits both alike.  Per variant the round's median step time is kept; the ratio
default / fused per round and its median over rounds are printed (> 1: the fused one is
faster), with the optimiser step alone timed the same way.  Run:
python benchmarks/optimizer_ab.py [--pe rope,alibi,sinusoidal] [--threads 1] [--rounds 20]
[--steps 20] [--task distance]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time

import torch
import torch.nn.functional as F

from posenc.empirical import fast
from posenc.empirical.config import preset
from posenc.empirical.training.runs import dataset_for, model_for
from posenc.empirical.training.train import make_optimizer


def variants(cfg, model_a, model_b):
    """The two optimisers training makes (``train.make_optimizer``): with ``step='fast'`` torch's
    fused AdamW, with ``step='reference'`` its default (a for-loop over the parameters on a CPU)."""
    return {"fused AdamW (step=fast)": (model_a, make_optimizer(model_a, cfg)),
            "default AdamW (step=reference)": (model_b, make_optimizer(
                model_b, dataclasses.replace(cfg, step="reference")))}


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
    fused, default = (per_round[n] for n in names)
    whole = [d[0] / f[0] for f, d in zip(fused, default)]
    opt_only = [d[1] / f[1] for f, d in zip(fused, default)]
    print(f"{pe}: step ms fused {1e3 * statistics.median(f[0] for f in fused):.2f}, default "
          f"{1e3 * statistics.median(d[0] for d in default):.2f}; optimiser ms fused "
          f"{1e3 * statistics.median(f[1] for f in fused):.3f}, default "
          f"{1e3 * statistics.median(d[1] for d in default):.3f}")
    print(f"  ratio default / fused, whole step: median {statistics.median(whole):.3f} "
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
