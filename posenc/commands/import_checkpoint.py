"""``posenc import-checkpoint``: a state_dict saved by the paper's scripts, as a posenc run folder."""

from __future__ import annotations

import argparse


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser(
        "import-checkpoint", help="turn a state_dict saved by the paper's code into a run folder",
        description="Read a model.pth written by the paper's scripts (Qihuai27/Deposit-Pattern-"
                    "Research: torch.save(model.state_dict(), ...)), check it against the paper "
                    "code's model of --pe, and write a paper-code run folder that posenc ablate, "
                    "the probe and posenc.load_run read like a trained run.")
    p.add_argument("file", help="the state_dict file (model.pth)")
    p.add_argument("--paper-code", action="store_true", required=True,
                   help="required: the checkpoint is the paper code's model (the only kind imported)")
    p.add_argument("--pe", required=True,
                   help="the paper's model: nope, absolute, alibi, relative, random, rope "
                        "(dis_gen/trans.py), partialrope:K (count_gen/partialrope.py, K heads "
                        "rotated) or mla (dis_gen/mla.py)")
    p.add_argument("--task", required=True, choices=("distance", "count"),
                   help="the task it was trained on (its data is what ablate and probe use)")
    p.add_argument("--out", required=True, help="the run folder to write (must not exist)")
    p.add_argument("--heads", type=int, default=16,
                   help="number of attention heads (default 16, the paper's; read from the "
                        "weights for relative and mla)")
    p.add_argument("--preset", default="paper",
                   help="task sizes: paper (default), quick or smoke; the vocabulary is the "
                        "checkpoint's")
    p.add_argument("--seq-len", type=int, default=None, help="padded sequence length of the task")
    which = p.add_mutually_exclusive_group()  # one of them is required: trigger_vocab says so,
    # with the line the Python API gives
    which.add_argument("--trigger-ids", default=None, metavar="ID,ID[,...]",
                       help="the token ids the model's triggers had: distance A,B; count every "
                            "trigger (the paper's scripts pick random trigger words, so its "
                            "tokenizer decides the ids)")
    which.add_argument("--triggers", default=None, metavar="WORD,WORD[,...]",
                       help="the trigger words, looked up in --vocab")
    p.add_argument("--vocab", default=None, metavar="FILE",
                   help="with --triggers: the tokenizer's vocabulary ({token: id} JSON, or its "
                        "tokenizer.json)")
    p.set_defaults(func=run)


def parse_ids(text: str) -> list[int]:
    """``--trigger-ids``: integers separated by commas."""
    from ..errors import PosencError
    from ..limits import parse_int
    out = []
    for part in text.split(","):
        try:
            out.append(parse_int(part.strip(), "--trigger-ids"))
        except PosencError:
            raise PosencError(f"--trigger-ids must be token ids separated by commas; got "
                              f"{part.strip()!r}") from None
    return out


def run(args: argparse.Namespace) -> int:
    from ..api.experiments import import_checkpoint

    run = import_checkpoint(
        args.file, args.pe, args.task, args.out, heads=args.heads, preset=args.preset,
        seq_len=args.seq_len,
        trigger_ids=None if args.trigger_ids is None else parse_ids(args.trigger_ids),
        vocab=args.vocab,
        triggers=None if args.triggers is None else [w.strip() for w in args.triggers.split(",")])
    m = run.config.model
    print(f"imported {args.file} as {run.run_dir}: paper-code {m.pe}, {m.n_layers} layers, "
          f"{m.n_heads} heads, d_model {m.d_model}, task {run.config.task.name}, trigger ids "
          f"{','.join(map(str, run.config.task.triggers))}")
    return 0
