"""Interleaved A/B of the training step's optimiser (issue: measure before keeping):
posenc's :class:`~posenc.empirical.fast.FusedAdamW` against ``torch.optim.AdamW(fused=True)``,
the optimiser a user would otherwise take, in the quick preset's full training step (the fast
forward, backward, clipping as training does it, the optimiser step).

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

import torch
import torch.nn.functional as F

from posenc.empirical import fast
from posenc.empirical.config import preset
from posenc.empirical.training.runs import dataset_for, model_for


def variants(cfg, model_a, model_b):
    kw = dict(lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    return {"posenc FusedAdamW": (model_a, fast.FusedAdamW(model_a.parameters(), **kw)),
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
