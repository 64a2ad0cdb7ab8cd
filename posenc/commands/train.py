"""``posenc train``: train a Transformer with a catalogue PE on a synthetic task."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import PosencError
from ..training_presets import preset_help
from . import add_set_option, hf_option, parse_sets

if TYPE_CHECKING:  # the catalogue is imported only when the command runs
    from ..encodings import PESpec


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("train", help="train a small Transformer with a PE on a synthetic task",
                        description="Train a pre-LN encoder with the given PE on the distance "
                                    "(position-sensitive) or count (position-agnostic) task.")
    p.add_argument("--task", default="distance", help="distance or count (default distance)")
    p.add_argument("--pe", default=None,
                   help="PE spec, e.g. rope, alibi:slopes=exp, paper-rope (default rope)")
    hf_option.add(p, " in place of --pe; the model keeps the preset's sizes (its head dim, not "
                     "the config's)")
    p.add_argument("--preset", default="quick", help=preset_help())
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="run folder (default runs/<task>_<pe>_<preset>_s<seed>_<hash>)")
    p.add_argument("--config", help="a config JSON (as written into a run folder) instead of a preset")
    p.add_argument("--epochs", type=int, help="override the preset's number of epochs")
    p.add_argument("--samples", type=int, help="override the number of generated examples")
    p.add_argument("--threads", type=int, help="torch threads for this run")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), help="default auto (CUDA if available)")
    p.add_argument("--precision", choices=("float32", "bfloat16"),
                   help="forward passes in float32 (default) or under bfloat16 autocast (GPU)")
    p.add_argument("--paper-code", action="store_true",
                   help="the paper code's model for --pe, exactly (e.g. --pe paper-alibi): keys/"
                        "values from the raw input embeddings, ReLU, no final LayerNorm, padding "
                        "pooled and unmasked, biased projections, vocabulary-sized classifier "
                        "(its MLA: mla.py's own conventions); see docs/methods.md")
    p.add_argument("--patience", type=int,
                   help="early stopping: stop after N epochs without a better validation accuracy "
                        "(--epochs is then the maximum; default: no early stopping)")
    p.add_argument("--val-frac", type=float,
                   help="early stopping: fraction of the training split held out for validation "
                        "(default 0.1)")
    p.add_argument("--stop-on", choices=("accuracy", "accuracy_or_loss"),
                   help="early stopping: what counts as progress -- a better validation accuracy "
                        "(default), or also a lower validation loss")
    add_set_option(p, "the run", "; a flag such as --epochs wins")
    p.add_argument("--restart", action="store_true", help="start over instead of resuming")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api.experiments import train
    from ..empirical.config import check_overrides

    # refused in --set's words (posenc.train's would say "overrides"), before a config is read
    sets = check_overrides(parse_sets(args.overrides), "--set")
    if args.from_hf is not None and args.config is not None:
        raise PosencError("train: --config holds its own PE; give --config or --from-hf, not both")
    pe, info = hf_option.resolve(args.pe, args.from_hf, "train", "--pe SPEC",
                                  layers=args.hf_layers)
    pe = "rope" if pe is None else pe
    if info is not None:
        _fits_preset(pe, args)
    stopping = {k: v for k, v in (("patience", args.patience), ("val_frac", args.val_frac),
                                  ("stop_on", args.stop_on)) if v is not None}
    run = train(args.task, pe, preset=args.preset, seed=args.seed, out=args.out,
                config=args.config, epochs=args.epochs, samples=args.samples,
                threads=args.threads, device=args.device, precision=args.precision,
                paper_code=args.paper_code, overrides={**sets, **stopping} or None,
                resume=not args.restart)
    result, cfg = run.training, run.config
    last, stop = result.metrics[-1], result.early_stopping
    state = "already finished" if result.skipped else f"{result.seconds:.1f} s on {result.device}"
    kept = "" if stop is None else (f" (early stopping: best validation accuracy "
                                    f"{stop['best_val_acc']:.4f} at epoch {stop['best_epoch']}, "
                                    f"whose weights are kept)")
    print(f"{cfg.task.name} {cfg.model.pe} ({cfg.preset}, seed {cfg.seed}): test accuracy "
          f"{result.final_test_acc:.4f} after {last['epoch']} epochs{kept}, {result.n_params} "
          f"parameters, {state} -> {result.run_dir}")
    return 0


def _fits_preset(spec: PESpec, args: argparse.Namespace) -> None:
    """A config's RoPE at the preset's head dim (a LongRoPE factor list is per plane of the
    config's head), refused before the run folder is written."""
    from ..empirical.config import preset

    if not hasattr(spec, "rotary_dims"):
        return
    head_dim = preset(args.preset, task=args.task, pe=spec, seed=args.seed).model.head_dim
    try:
        spec.rotary_dims(head_dim)
    except PosencError as exc:
        raise PosencError(f"train --from-hf: the preset {args.preset!r} has head dim {head_dim}: "
                          f"{exc}") from None
