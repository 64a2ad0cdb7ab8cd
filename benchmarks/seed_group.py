"""Side by side, one sitting: training throughput (examples / s) of seed-batched training
(posenc.empirical.training.seed_group) vs six single runs of the default training step.

Arms, each in fresh worker processes (spawn), interleaved A/B/C per round, ``--rounds`` rounds:

* ``single``: six single runs of the default step (``TrainConfig.step``'s default, the train.py
  loop body: its forward, cross-entropy, zero_grad, backward, clip_grad_norm_, its optimiser) on 2
  single-thread worker processes, 2 at a time (each worker trains 3 seeds one after another).
* ``group6``: one 6-seed :class:`SeedGroup` (``train_step``: forward, backward, per-seed clip,
  AdamW) in one process with 2 threads.
* ``group3x2``: two 3-seed groups on 2 single-thread workers at once (the sweep's layout).
* ``wide3x2`` (the bound): two single-thread workers, each training ONE model at batch 3 x 16
  -- the arithmetic of a 3-seed group with none of the per-seed cost (one set of weights).  A
  seed group does the same FLOPs plus its bookkeeping, so on this machine no group of 3 seeds
  per worker can beat ``wide3x2``: its ratio to ``single`` bounds what seed batching can gain.

Every arm times ``--steps`` training steps per run (after ``--warmup`` untimed steps) on the
first batches of each seed's own epoch-0 order; the batches are built before timing, so data
generation is excluded, and so is evaluation.  A worker's throughput is its examples over its
timed seconds; an arm's is the sum over its workers (they run at the same time).  The ratio is
group / single.  The sizes are pinned below (the quick preset of 2026-12-01: distance, gaps
1..40, 9,000 examples; d_model 64, 8 heads, 4 layers, d_ff 128; batch 16), not read from the
preset, which may change.

python benchmarks/seed_group.py [--pe rope,alibi,mla] [--rounds 3] [--steps 30] [--warmup 3]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time

PINNED = {"task.n_samples": 9000, "task.vocab_size": 32, "task.max_left": 8, "task.max_gap": 40,
          "task.max_right": 8, "model.d_model": 64, "model.n_heads": 8, "model.n_layers": 4,
          "model.d_ff": 128, "batch_size": 16, "lr": 1e-3, "epochs": 2, "grad_clip": 1.0}


def _configs(pe: str, seeds):
    from posenc.empirical.config import preset
    return [preset("quick", task="distance", pe=pe, seed=s, **PINNED) for s in seeds]


def _batches(config, steps: int):
    from posenc.empirical.training.runs import dataset_for
    from posenc.empirical.training.seed_group import epoch_order
    data = dataset_for(config).train
    order = epoch_order(config.seed, 0, len(data))
    bs = config.batch_size
    return [(data.tokens[order[b * bs:(b + 1) * bs]], data.labels[order[b * bs:(b + 1) * bs]])
            for b in range(steps)]


def _time_single_run(config, steps: int, warmup: int) -> float:
    """Seconds of ``steps`` training steps (train.py's step) of ``config``'s single run, after
    ``warmup`` untimed ones, on the first batches of its epoch-0 order."""
    import torch
    import torch.nn.functional as F

    from posenc.empirical.training.runs import model_for
    from posenc.empirical.training.train import make_optimizer, step_forward
    batches = _batches(config, warmup + steps)
    torch.manual_seed(config.seed)
    model = model_for(config)
    opt = make_optimizer(model, config)
    forward = step_forward(config.step)
    model.train()
    for i, (tok, lab) in enumerate(batches):
        if i == warmup:
            t0 = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = config.lr
        logits = forward(model, tok).float()
        loss = F.cross_entropy(logits, lab)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        opt.step()
        float(loss.detach())
    return time.perf_counter() - t0


def single_worker(pe: str, seeds, steps: int, warmup: int, threads: int) -> tuple[int, float]:
    """Train each seed's single run for warmup + steps steps (train.py's step); (examples, s)."""
    import torch
    torch.set_num_threads(threads)
    examples, seconds = 0, 0.0
    for config in _configs(pe, seeds):
        seconds += _time_single_run(config, steps, warmup)
        examples += steps * config.batch_size
    return examples, seconds


def wide_worker(pe: str, seeds, steps: int, warmup: int, threads: int) -> tuple[int, float]:
    """One model of seed ``seeds[0]`` at batch len(seeds) x 16 (train.py's step); (examples, s)."""
    import torch
    torch.set_num_threads(threads)
    config = _configs(pe, seeds[:1])[0]
    config = config.replace(batch_size=config.batch_size * len(seeds))
    return steps * config.batch_size, _time_single_run(config, steps, warmup)


def group_worker(pe: str, seeds, steps: int, warmup: int, threads: int) -> tuple[int, float]:
    """One group of ``seeds`` for warmup + steps steps (SeedGroup.train_step); (examples, s)."""
    import torch

    from posenc.empirical.training.seed_group import SeedGroup, stack_batches
    torch.set_num_threads(threads)
    configs = _configs(pe, seeds)
    per_seed = [_batches(c, warmup + steps) for c in configs]
    stacked = []
    for b in range(warmup + steps):
        toks = [per_seed[s][b][0] for s in range(len(configs))]
        labs = [per_seed[s][b][1] for s in range(len(configs))]
        stacked.append(stack_batches(toks, labs, [torch.arange(len(t)) for t in toks], torch.device("cpu")))
    group = SeedGroup(configs)
    group.train()
    S = len(configs)
    for i, (tok, lab, w) in enumerate(stacked):
        if i == warmup:
            t0 = time.perf_counter()
        losses, _, _ = group.train_step(tok, lab, w, [configs[0].lr] * S, [True] * S, configs[0])
        float(losses.sum())
    return steps * configs[0].batch_size * S, time.perf_counter() - t0


def run_arm(fn, jobs) -> float:
    """Run ``jobs`` (argument tuples) of ``fn`` on that many worker processes at once; summed
    examples / s of the workers."""
    ctx = mp.get_context("spawn")
    with ctx.Pool(len(jobs)) as pool:
        results = pool.starmap(fn, jobs)
    return sum(e / s for e, s in results)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pe", default="rope,alibi,mla")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    import torch
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()}")
    print(f"sizes (pinned): {PINNED}; {args.steps} timed steps per run after {args.warmup} "
          f"untimed; examples/s summed over a phase's workers")
    seeds = list(range(6))
    summary = {}
    for pe in args.pe.split(","):
        rows = {"single": [], "group6": [], "group3x2": [], "wide3x2": []}
        for r in range(args.rounds):
            a = run_arm(single_worker, [(pe, seeds[0::2], args.steps, args.warmup, 1),
                                        (pe, seeds[1::2], args.steps, args.warmup, 1)])
            b = run_arm(group_worker, [(pe, seeds, args.steps, args.warmup, 2)])
            c = run_arm(group_worker, [(pe, seeds[:3], args.steps, args.warmup, 1),
                                       (pe, seeds[3:], args.steps, args.warmup, 1)])
            d = run_arm(wide_worker, [(pe, seeds[:3], args.steps, args.warmup, 1),
                                      (pe, seeds[3:], args.steps, args.warmup, 1)])
            rows["single"].append(a)
            rows["group6"].append(b)
            rows["group3x2"].append(c)
            rows["wide3x2"].append(d)
            print(f"{pe} round {r + 1}: six single runs on 2 workers {a:7.0f} ex/s | one 6-seed "
                  f"group, 2 threads {b:7.0f} ex/s ({b / a:.2f}x) | two 3-seed groups on 2 "
                  f"workers {c:7.0f} ex/s ({c / a:.2f}x) | bound: two models at batch 48 "
                  f"{d:7.0f} ex/s ({d / a:.2f}x)", flush=True)
        med = {k: statistics.median(v) for k, v in rows.items()}
        summary[pe] = med
        print(f"{pe} median: single {med['single']:.0f} ex/s, group6 {med['group6']:.0f} "
              f"({med['group6'] / med['single']:.2f}x), group3x2 {med['group3x2']:.0f} "
              f"({med['group3x2'] / med['single']:.2f}x), bound wide3x2 {med['wide3x2']:.0f} "
              f"({med['wide3x2'] / med['single']:.2f}x)", flush=True)
    print("ratio group / six single runs (median over rounds; target >= 2.00):")
    for pe, med in summary.items():
        print(f"  {pe:8s} group6 {med['group6'] / med['single']:.2f}x  "
              f"group3x2 {med['group3x2'] / med['single']:.2f}x  "
              f"bound wide3x2 {med['wide3x2'] / med['single']:.2f}x")
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
