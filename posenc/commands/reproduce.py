"""``posenc reproduce``: run the paper's experiments and write a report with verdicts."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from typing import Any

from ..training_presets import preset_help
from . import add_set_option, parse_sets


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("reproduce", help="run the reproduction sweep and write report.md with verdicts")
    p.add_argument("--preset", default="quick", help=preset_help())
    p.add_argument("--backend", default="local", help="local (default) | ray")
    p.add_argument("--out", default=None, help="results store folder (default posenc-out/PRESET)")
    p.add_argument("--seeds", type=int, default=None,
                   help="seeds per (task, PE); default: the preset's (the first log line says how many)")
    p.add_argument("--count-seeds", type=int, default=None,
                   help="seeds of the count task alone (default: --seeds)")
    p.add_argument("--first-seed", type=int, default=0,
                   help="run seeds FIRST, FIRST+1, ... (default 0; calibrate on seeds the report "
                        "never uses, e.g. --first-seed 1000 into another --out)")
    p.add_argument("--workers", type=int, default=2, help="local worker processes (default 2)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per worker (default 1)")
    p.add_argument("--ray-address", default=None, help="Ray cluster HOST:PORT (default: local runtime)")
    p.add_argument("--device", default=None, choices=("cpu", "cuda", "auto"),
                   help="training device (default auto: CUDA when available)")
    p.add_argument("--roles", default=None,
                   help="only these PE roles, comma-separated, each on every task of the sweep "
                        "(nope, absolute, relative, alibi, rope, mla, absolute+rope, rope-1head, "
                        "rope-2heads; unnamed, count runs the first six)")
    p.add_argument("--tasks", default=None, help="only these tasks, comma-separated (distance, count)")
    add_set_option(p, "every run")
    p.add_argument("--wait", action="store_true",
                   help="if another sweep is writing the store, wait for it instead of stopping")
    p.add_argument("--until-decided", action="store_true",
                   help="after the first seeds, add seeds a batch at a time to the (task, PE) runs "
                        "of claims still inconclusive, until each is decided or has --max-seeds")
    p.add_argument("--max-seeds", type=int, default=None,
                   help="with --until-decided: at most this many seeds per (task, PE)")
    p.add_argument("--seed-batch", type=int, default=None,
                   help="with --until-decided: seeds added per round (default 2)")
    p.add_argument("--replicate", action="store_true",
                   help="also run the same plan on a disjoint seed set (default FIRST+2000) into "
                        "OUT-replicate; the report sets both verdicts of each claim side by side "
                        "(decided only where they agree)")
    p.add_argument("--replicate-first-seed", type=int, default=None,
                   help="with --replicate: the replication's first seed (default FIRST+2000)")
    p.add_argument("--keep-checkpoints", action="store_true",
                   help="keep each run's checkpoint.pt and per-step trace.jsonl (default: "
                        "dropped once the run's ablation, probe and dynamics are done; the store "
                        "keeps its results and resumes without them)")
    p.add_argument("--retrain-incomplete", action="store_true",
                   help="train again the runs of this plan whose folder lacks a file a finished "
                        "run keeps (result.json, config.json, run.json, ...), replacing the "
                        "folder (default: such a folder is refused, naming it and the file)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--paper-code", dest="paper_code", action="store_true", default=None,
                      help="run the paper code's models exactly (the paper preset's default; "
                           "default store posenc-out/PRESET-paper-code)")
    mode.add_argument("--standard", dest="paper_code", action="store_false",
                      help="posenc's own model even with --preset paper")
    p.add_argument("--no-theory", action="store_true",
                   help="leave the theory-claims table out of the report (saves about a minute)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..empirical.pipeline.interrupt import EXIT_INTERRUPTED, SweepInterrupted

    try:
        path = _reproduce(args)
    except KeyboardInterrupt as exc:  # the runs in flight stopped (posenc.empirical.pipeline.interrupt)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C ends the process at once
        where = str(exc) if isinstance(exc, SweepInterrupted) else "no report written yet"
        sys.stdout.flush()
        print(f"posenc: interrupted: {where}; resume with: {resume_command(args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"report: {path}")
    return 0


def resume_command(args: argparse.Namespace) -> str:
    """The command line that resumes this one: the same command (its finished runs are skipped,
    its stopped ones resume from their checkpoints), as the shell would read it."""
    words = getattr(args, "command_line", None)
    if words is None:
        words = sys.argv[1:]
    return shlex.join(["posenc", *words])


def _reproduce(args: argparse.Namespace) -> Any:
    from ..reproduction import ReproduceOptions, reproduce

    # the one options value of this reproduction, built from the flags and handed down whole
    return reproduce(ReproduceOptions.from_command(args, parse_sets(args.overrides)))
