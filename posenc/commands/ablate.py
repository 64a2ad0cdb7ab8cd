"""``posenc ablate``: single-head ablation of every head of a trained run."""

from __future__ import annotations

import argparse
import json


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("ablate", help="ablate every attention head of a trained run, one at a time",
                        description="Remove each head of each layer in turn (at hook_z) and report "
                                    "accuracy drops, the deposit index and attention distances.")
    p.add_argument("run_dir", help="a run folder written by posenc train")
    p.add_argument("--mode", default="zero",
                   help="zero (default), mean or resample: what replaces a head's output; "
                        "latent-columns (MLA runs only): the paper code's MLA ablation, which "
                        "zeroes latent dimensions [w v, w v + w) of the up-projections' inputs "
                        "(w the head width), one variant v per head index")
    p.add_argument("--examples", type=int, help="use only the first N test examples")
    p.add_argument("--plot", help="write a strip plot of per-head accuracy to this PNG/PDF")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument("--threads", type=int, help="torch threads (default: the run's setting)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..atomic import check_figure_path
    if args.plot is not None:                       # before any work (and before importing torch)
        check_figure_path(args.plot, ("png", "pdf"))

    import torch

    from ..api.experiments import ablate, load_run
    from ..empirical.config import check_threads

    if args.threads is not None:
        check_threads(args.threads)
        torch.set_num_threads(args.threads)
    run = load_run(args.run_dir)
    if args.threads is None and run.config.num_threads is not None:
        torch.set_num_threads(run.config.num_threads)  # as the run was trained
    table = ablate(run, args.mode, examples=args.examples, save=True)
    if args.plot:
        from ..empirical.analysis.plots import ablation_strip_plot
        ablation_strip_plot(table, args.plot, f"{run.config.task.name}, {run.config.model.pe}: "
                                              f"{args.mode} ablation, {table.n_examples} examples")
    if args.json:
        print(json.dumps(table.to_dict(), indent=2))
        return 0
    print(f"{run.config.task.name} {run.config.model.pe}: baseline accuracy {table.baseline_acc:.4f} "
          f"on {table.n_examples} test examples, {args.mode} ablation")
    print(f"{'layer':>5} {'worst head':>10} {'acc':>7} {'drop':>7} {'deposit':>8} {'gap':>7}  "
          f"mean |i-j| attended per head")
    for la in table.layers:
        dist = " ".join(f"{d:.1f}" for d in la.mean_distance or ())
        print(f"{la.layer:>5} {la.deposit_head:>10} {la.head_acc[la.deposit_head]:>7.4f} "
              f"{la.largest_drop:>7.4f} {la.deposit_index:>8.3f} {la.runner_up_gap:>7.4f}  {dist}")
    return 0
