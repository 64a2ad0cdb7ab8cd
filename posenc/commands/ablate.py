"""``posenc ablate``: single-head ablation of every head of a trained run, or of a real pretrained
model (``--hf DIR`` / ``--gguf FILE``, offline)."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import PosencError

#: the largest --text file read (the text probes use a few thousand tokens of it)
MAX_TEXT_BYTES = 16 * 2**20


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("ablate", help="ablate every attention head of a trained run or a real model, "
                                       "one at a time",
                        description="Remove each head of each layer in turn (at the heads' output, "
                                    "before the output projection) and report accuracy drops, the "
                                    "deposit index and attention distances: of a run folder written by "
                                    "posenc train, or of a real model in a local folder (--hf DIR) or "
                                    "GGUF file (--gguf FILE), on a probe that needs position.")
    p.add_argument("run_dir", nargs="?", help="a run folder written by posenc train")
    p.add_argument("--hf", metavar="DIR", help="a local Hugging Face model folder (config.json and "
                                               "weights; never fetched from a hub)")
    p.add_argument("--gguf", metavar="FILE", help="a GGUF model file (a path, or a name inside --hf DIR)")
    p.add_argument("--mode", default=None,
                   help="zero (a run's default), mean (a real model's default) or resample: what "
                        "replaces a head's output; latent-columns (MLA runs only): the paper code's "
                        "MLA ablation, which zeroes latent dimensions [w v, w v + w) of the "
                        "up-projections' inputs (w the head width), one variant v per head index")
    p.add_argument("--examples", type=int, help="use only the first N test examples (a run) / the "
                                                "probe's number of examples (a real model)")
    real = p.add_argument_group("real models (--hf / --gguf)")
    real.add_argument("--probe", help="induction (decoders' default), recency, text; masked-induction, "
                                      "masked-text, order (encoders' default)")
    real.add_argument("--unit", default="head", help="head (default) or kv-group: the query heads "
                                                     "that share one key/value head, together")
    real.add_argument("--length", type=int, help="the probe's length: tokens of the repeated "
                                                 "sequence, keys of recency, tokens of a text window")
    real.add_argument("--seed", type=int, default=0, help="the probe's draw (and resample's), default 0")
    real.add_argument("--text", metavar="FILE", help="a UTF-8 text for the text probes (default: the "
                                                     "short text posenc ships)")
    real.add_argument("--layers", help="comma-separated layer indices (default: every layer)")
    real.add_argument("--out", metavar="JSON", help="also write the result as JSON to this file")
    p.add_argument("--plot", help="write a strip plot of per-head accuracy to this PNG/PDF")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument("--threads", type=int, help="torch threads (default: the run's setting)")
    p.set_defaults(func=run)


def _layers(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise PosencError(f"--layers takes comma-separated layer indices; got {text!r}") from None


def _run_pretrained(args: argparse.Namespace) -> int:
    from ..atomic import check_figure_path
    from ..encodings.hf_local import local_model
    from ..encodings.hf_read import read_regular

    where = local_model(args.hf, args.gguf, what="ablate")
    text = None if args.text is None else read_regular(args.text, "ablate --text", MAX_TEXT_BYTES,
                                                        "a probe text is a few KB")
    layers = _layers(args.layers)
    if args.out is not None:
        check_figure_path(args.out, ("json",))
    import torch
    from tqdm import tqdm

    from ..api.pretrained import ablate_pretrained
    from ..empirical.config import check_threads

    if args.threads is not None:
        check_threads(args.threads)
        torch.set_num_threads(args.threads)
    from ..empirical.pretrained.loading import check_supported

    check_supported(where)
    print(f"ablate: loading {where.name} (offline) ...", file=sys.stderr)
    bar = tqdm(total=None, unit="layer", desc="ablate", file=sys.stderr, disable=None)

    def step(done: int, total: int) -> None:
        bar.total = total
        bar.update(1)
        if bar.disable:
            print(f"ablate: {done} of {total} layers done", file=sys.stderr)

    def say(line: str) -> None:
        tqdm.write(f"ablate: {line}", file=sys.stderr)
    try:
        result = ablate_pretrained(where, args.mode, unit=args.unit, probe=args.probe,
                                   examples=args.examples, length=args.length, seed=args.seed,
                                   text=text, layers=layers, progress=step, log=say)
    finally:
        bar.close()
    if args.out is not None:
        result.save(args.out)
    if args.plot:
        from ..empirical.analysis.plots import ablation_strip_plot
        ablation_strip_plot(result.table, args.plot,
                            f"{result.model['model_type']} ({result.model['source']}): {result.mode} "
                            f"ablation per {result.unit}, probe {result.probe['name']}")
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print("\n".join(result.lines()))
    return 0


def run(args: argparse.Namespace) -> int:
    from ..atomic import check_figure_path
    if args.plot is not None:                       # before any work (and before importing torch)
        check_figure_path(args.plot, ("png", "pdf"))
    real = args.hf is not None or args.gguf is not None
    if real == (args.run_dir is not None):
        raise PosencError("ablate: give a run folder, or a real model with --hf DIR / --gguf FILE "
                          "(exactly one)")
    if real:
        return _run_pretrained(args)
    for name in ("probe", "length", "text", "layers", "out"):
        if getattr(args, name) is not None:
            raise PosencError(f"ablate: --{name} is for real models (--hf / --gguf), not a run folder")
    if args.unit != "head" or args.seed != 0:
        raise PosencError("ablate: --unit and --seed are for real models (--hf / --gguf)")

    import torch

    from ..api.experiments import ablate, load_run
    from ..empirical.config import check_threads

    if args.threads is not None:
        check_threads(args.threads)
        torch.set_num_threads(args.threads)
    run = load_run(args.run_dir)
    if args.threads is None and run.config.num_threads is not None:
        torch.set_num_threads(run.config.num_threads)  # as the run was trained
    mode = args.mode or "zero"
    table = ablate(run, mode, examples=args.examples, save=True)
    if args.plot:
        from ..empirical.analysis.plots import ablation_strip_plot
        ablation_strip_plot(table, args.plot, f"{run.config.task.name}, {run.config.model.pe}: "
                                              f"{mode} ablation, {table.n_examples} examples")
    if args.json:
        print(json.dumps(table.to_dict(), indent=2))
        return 0
    print(f"{run.config.task.name} {run.config.model.pe}: baseline accuracy {table.baseline_acc:.4f} "
          f"on {table.n_examples} test examples, {mode} ablation")
    print(f"{'layer':>5} {'worst head':>10} {'acc':>7} {'drop':>7} {'deposit':>8} {'gap':>7}  "
          f"mean |i-j| attended per head")
    for la in table.layers:
        dist = " ".join(f"{d:.1f}" for d in la.mean_distance or ())
        print(f"{la.layer:>5} {la.deposit_head:>10} {la.head_acc[la.deposit_head]:>7.4f} "
              f"{la.largest_drop:>7.4f} {la.deposit_index:>8.3f} {la.runner_up_gap:>7.4f}  {dist}")
    return 0
