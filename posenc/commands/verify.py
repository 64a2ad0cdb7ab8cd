"""``posenc verify``: check the registry's claims (symbolic proof, numeric checks, counterexamples).

Prints one row per claim -- claim, source, symbolic status, examples checked, counterexamples
expected/found, seconds, verdict -- then the minimal counterexample of every variant on which
one was found.  Exit status 1 if a claim that should hold fails, or a counterexample that should
exist is not found; 2 for an unknown claim id or profile.
"""

from __future__ import annotations

import argparse
import json


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("verify", help="check the theorems: symbolic proofs, numeric checks, "
                                       "counterexamples where an assumption is dropped")
    p.add_argument("claims", nargs="*", metavar="CLAIM", help="claim ids (default: all)")
    p.add_argument("--examples", type=int, default=None, metavar="N",
                   help="inputs drawn per search (default: the profile's)")
    p.add_argument("--profile", default="ci", choices=("ci", "thorough"),
                   help="ci: 25 derandomised examples per search; thorough: 400 random ones")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--list", action="store_true", help="list the claim ids and statements")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api.claims import iter_verify
    from ..proofs.registry import all_claims, get

    if args.list:
        for c in ([get(c) for c in args.claims] if args.claims else all_claims()):
            print(f"{c.id:<26} {c.statement}")
        return 0
    results = []
    for result in iter_verify(args.claims or None, profile=args.profile, examples=args.examples):
        results.append(result.to_dict())
        if not args.json:
            _row(results[-1], header=len(results) == 1)
    if args.json:
        print(json.dumps({"profile": args.profile, "results": results}, indent=2,
                         ensure_ascii=False))
    else:
        _details(results)
    return 0 if all(r["ok"] for r in results) else 1


_COLS = "{:<26} {:<30} {:<15} {:>8} {:>9} {:>8}  {}"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _row(r: dict, header: bool) -> None:
    from ..proofs.runner import counterexamples_summary

    if header:
        print(_COLS.format("claim", "source", "symbolic", "examples", "cex e/f", "seconds",
                           "result"))
    expected, found = counterexamples_summary(r)
    verdict = "ok" if r["ok"] else "FAIL"
    print(_COLS.format(r["claim"], _short(r["source"], 30), r["symbolic"]["status"],
                       r["examples"], f"{expected}/{found}", f"{r['seconds']:.2f}", verdict),
          flush=True)


def _details(results: list[dict]) -> None:
    lines = []
    for r in results:
        if r["error"]:
            lines.append(f"{r['claim']}: error: {r['error']}")
        if r["symbolic"]["status"] == "failed":
            lines.append(f"{r['claim']}: symbolic proof failed: {r['symbolic']['detail']}")
        if not r["holds"] and r["counterexample"]:
            lines.append(f"{r['claim']}: COUNTEREXAMPLE to the claim: {r['counterexample']}"
                         f"  -- {r.get('counterexample_message')}")
        for v in r["variants"]:
            label = "without" if v["kind"] == "drops assumption" else "false variant:"
            if v["found"]:
                mark = "" if v["expected"] else "  (UNEXPECTED)"
                lines.append(f"{r['claim']}: {label} {v['drops']}: counterexample{mark} "
                             f"{v['minimal']}  -- {v['message']}")
            elif v["expected"]:
                lines.append(f"{r['claim']}: {label} {v['drops']}: NO counterexample found in "
                             f"{v['examples']} examples (one was expected)")
            else:
                lines.append(f"{r['claim']}: {label} {v['drops']}: still holds on "
                             f"{v['examples']} examples ({v['note']})")
        for key, value in r.get("reports", {}).items():
            lines.append(f"{r['claim']}: {key}: {value}")
    if lines:
        print()
        print("\n".join(lines))
