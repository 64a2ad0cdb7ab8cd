"""Paired A/B of posenc's paper-code training step on a loaded machine: per batch the two arms
take one step each, in alternating order, and the ratio of their CPU times (``time.process_time``)
is averaged over the pairs (mean +- standard error), so background load hits both alike.

* ``--ab door`` (default): the fast path's door (``fast.forward``) against the reference forward
  ``model(tokens)``, the same weights and fused AdamW in both;
* ``--ab chunks``: the door with the packed attention in chunks of rows (the default
  ``packed_attention.CHUNK_ABOVE``) against the door in one pass.

The config is train_step.py's (``--paper-code`` always; ``--preset``, ``--set``), e.g.
python benchmarks/paper_code_ab.py --pe rope,alibi,nope --rounds 6 --set task.vocab_size=574
--set task.max_left=25 --set task.max_gap=70 --set task.max_right=25 --set task.seq_len=128
"""

from __future__ import annotations

import argparse
import os
import statistics

import torch
import train_step as ts

from posenc.empirical import fast
from posenc.empirical.fast import packed_attention
from posenc.empirical.training.runs import dataset_for, model_for
from posenc.empirical.training.train import make_optimizer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pe", default="rope,alibi,nope", help="comma list of the paper code's PEs")
    ap.add_argument("--ab", default="door", choices=["door", "chunks"])
    ap.add_argument("--rounds", type=int, default=6, help="passes over the batches")
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--batch-size", type=int, help="override the preset's batch size")
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    ns = argparse.Namespace(set=args.set, heads=None, d_model=None, samples=None, paper_code=True,
                            preset=args.preset, task="distance")
    torch.set_num_threads(1)
    default = packed_attention.CHUNK_ABOVE
    for pe in args.pe.split(","):
        cfg = ts.make_config(ns, pe)
        B = args.batch_size or cfg.batch_size
        data = dataset_for(cfg).train
        order = torch.randperm(len(data.tokens), generator=torch.Generator().manual_seed(0))
        batches = [(data.tokens[i], data.labels[i]) for i in order[:args.batches * B].split(B)]
        a_model, _ = ts.paper_code_pair(cfg, pe, "cpu")
        b_model = model_for(cfg)
        b_model.load_state_dict(a_model.state_dict())
        chunks = args.ab == "chunks"
        a_step = ts.make_step(lambda t: fast.forward(a_model, t), a_model, batches,
                              opt=make_optimizer(a_model, cfg))
        b_step = ts.make_step((lambda t: fast.forward(b_model, t)) if chunks else b_model, b_model,
                              batches, opt=make_optimizer(b_model, cfg))

        def arm(step, one_pass: bool, i: int) -> float:
            packed_attention.CHUNK_ABOVE = 1 << 62 if one_pass else default
            return step(i)[1]
        for i in range(2):  # warm-up
            arm(a_step, False, i), arm(b_step, chunks, i)
        a_cpu, b_cpu, ratios = [], [], []
        for r in range(args.rounds):
            for i in range(len(batches)):
                if (r + i) % 2:
                    a = arm(a_step, False, i)
                    b = arm(b_step, chunks, i)
                else:
                    b = arm(b_step, chunks, i)
                    a = arm(a_step, False, i)
                a_cpu.append(a), b_cpu.append(b), ratios.append(b / a)
        packed_attention.CHUNK_ABOVE = default
        names = ("chunks", "one pass") if chunks else ("door", "reference")
        print(f"{pe}, batch {B} x {batches[0][0].shape[1]}: CPU ms/step {names[0]} median "
              f"{1000 * statistics.median(a_cpu):.1f} (min {1000 * min(a_cpu):.1f}), {names[1]} median "
              f"{1000 * statistics.median(b_cpu):.1f} (min {1000 * min(b_cpu):.1f}); {names[1]} / "
              f"{names[0]} per pair {statistics.mean(ratios):.3f} +- "
              f"{statistics.stdev(ratios) / len(ratios) ** 0.5:.3f} (n = {len(ratios)}); "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
