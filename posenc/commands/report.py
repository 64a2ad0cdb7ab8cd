"""``posenc report DIR``: rebuild the reproduction report from a results store, without training."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("report", help="rebuild report.md from a results store (no training)")
    p.add_argument("store", help="results store folder written by posenc reproduce")
    p.add_argument("--no-theory", action="store_true", help="leave out the theory-claims table")
    p.add_argument("--replica", default=None,
                   help="the store of the same plan on a disjoint seed set (reproduce "
                        "--replicate writes STORE-replicate): both verdicts side by side")
    p.add_argument("--beside", default=None,
                   help="the report.json (or report folder) of the same preset run with the "
                        "other model code (paper-code vs standard), or of another preset (e.g. "
                        "paper-small beside quick): both verdicts side by side")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import PosencError
    from ..report import build_report

    if not Path(args.store).is_dir():
        raise PosencError(f"no results store at {args.store}")
    if args.replica is not None and not Path(args.replica).is_dir():
        raise PosencError(f"no results store at {args.replica}")
    path = build_report(args.store, theory=not args.no_theory, replica=args.replica,
                        beside=args.beside)
    from ..report.build import left_out_text
    note = left_out_text(args.store)
    if note:
        print(note.replace("`", ""))
    print(f"report: {path}")
    return 0
