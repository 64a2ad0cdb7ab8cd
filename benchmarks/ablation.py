"""Side by side: all single-head ablations of a 6-layer x 16-head model, batched (one forward
pass per layer, posenc.empirical.analysis.ablation) vs the 96 ablations evaluated one by one.

Two one-by-one baselines: the same gate one head at a time, and the TransformerLens way (a
hook on hook_z that zeroes one head, a full forward pass per head).  All three must give
identical per-head accuracies (checked).  Run:
    python benchmarks/ablation.py [--examples 128] [--threads 1] [--mode zero]
    python benchmarks/ablation.py --device cuda --examples 4096 --batch-size 512

Cost model: one by one does H*L full passes (L layers each); batched does, for each layer l,
layers < l once and layers >= l for H variants, i.e. about H*L*(L+1)/2 layer passes -- a
compute ratio of 2L/(L+1) (1.7 for L = 6) before any gain from larger batches.
"""

from __future__ import annotations

import argparse
import time

import torch

from posenc.empirical.analysis.ablation import ablate
from posenc.empirical.config import ModelConfig, TaskConfig
from posenc.empirical.model.transformer import build_model
from posenc.empirical.tasks import make_split


def hook_one_by_one(model, data, batch_size: int) -> list[list[float]]:
    L, H, N = len(model.blocks), model.cfg.n_heads, len(data)
    dev = next(model.parameters()).device
    acc = []
    for layer in range(L):
        row = []
        for h in range(H):
            def zero(z, hook, h=h):
                z = z.clone()
                z[:, :, h] = 0  # hook_z: (batch, pos, head, d_head)
                return z
            correct = 0
            with torch.inference_mode():
                for s in range(0, N, batch_size):
                    tok = data.tokens[s:s + batch_size].to(dev)
                    logits = model.run_with_hooks(tok, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", zero)])
                    correct += int((logits.argmax(-1).cpu() == data.labels[s:s + batch_size]).sum())
            row.append(correct / N)
        acc.append(row)
    return acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=32, help="rows per forward pass")
    ap.add_argument("--mode", default="zero")
    ap.add_argument("--pe", default="rope")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--expand", choices=("auto", "yes", "no"), default="auto",
                    help="batched pass of batch-size examples x H variants (yes), or of about "
                         "batch-size rows (no); auto: yes on CUDA")
    args = ap.parse_args()
    expand = None if args.expand == "auto" else args.expand == "yes"
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    torch.set_num_threads(args.threads)
    task = TaskConfig(n_samples=max(1000, 4 * args.examples), vocab_size=32, max_left=16, max_gap=30,
                      max_right=16)
    data = make_split(task, 0).test.subset(slice(0, args.examples))
    torch.manual_seed(0)
    cfg = ModelConfig(pe=args.pe, d_model=128, n_heads=16, n_layers=6, d_ff=256)
    model = build_model(cfg, task.vocab_size, task.n_classes, task.length).to(args.device).eval()
    with torch.no_grad():  # a sharper random function, so that removing heads changes answers
        for p in model.parameters():
            p.mul_(2.0)
    bs = args.batch_size
    if args.device.startswith("cuda"):  # warm-up: CUDA context, kernels, allocator
        ablate(model, data.subset(slice(0, 8)), args.mode, batch_size=bs, distances=False)
    sync()
    t0 = time.perf_counter()
    fast = ablate(model, data, args.mode, batch_size=bs, distances=False, expand=expand)
    sync()
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = ablate(model, data, args.mode, batch_size=bs, distances=False, batched=False)
    sync()
    t_slow = time.perf_counter() - t0
    same = fast.to_dict() == slow.to_dict()
    line = (f"ablation of a 6x16 model (d_model 128, seq {task.length}), {args.examples} examples, "
            f"mode {args.mode}, {args.threads} thread(s), {args.device}, {bs} examples per "
            f"one-by-one pass, batched layout expand={args.expand}")
    print(line)
    print(f"  batched (1 pass per layer)   {t_fast:8.2f} s")
    print(f"  one by one, same gate        {t_slow:8.2f} s   ratio {t_slow / t_fast:5.2f}x   "
          f"identical accuracies: {same}")
    if args.mode == "zero":
        t0 = time.perf_counter()
        hooked = hook_one_by_one(model, data, bs)
        sync()
        t_hook = time.perf_counter() - t0
        same_hook = hooked == [list(la.head_acc) for la in fast.layers]
        print(f"  one by one, hook on hook_z   {t_hook:8.2f} s   ratio {t_hook / t_fast:5.2f}x   "
              f"identical accuracies: {same_hook}")
    drops = [d for la in fast.layers for d in la.drops]
    print(f"  heads whose removal changes accuracy: {sum(d != 0 for d in drops)} of {len(drops)}")


if __name__ == "__main__":
    main()
