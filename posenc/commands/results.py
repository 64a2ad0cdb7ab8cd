"""``posenc results STORE... --out FILE``: the results page from committed reports, no training."""

from __future__ import annotations

import argparse


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("results", help="write the results page (docs/results.md) from stores' "
                                         "reports and paper-size anchors (no training)")
    p.add_argument("sources", nargs="+", metavar="STORE",
                   help="a results store with its report (posenc report), or a paper-size "
                        "anchor folder (scripts/paper_anchor.py); a regime's second store is "
                        "the replication its first names")
    p.add_argument("--out", default="docs/results.md",
                   help="the page (default docs/results.md); its figures go to OUT without .md/")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report.results_page import build_results

    path = build_results(args.sources, args.out)
    print(f"results: {path}")
    return 0
