"""``posenc runs [DIR]``: list the runs of a results store and their state."""

from __future__ import annotations

import argparse
import json


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("runs", help="list the runs in a results store")
    p.add_argument("store", nargs="?", default="posenc-out/quick", help="store folder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..empirical.pipeline.store import RunStore

    store = RunStore(args.store, create=False)  # a reader: the folders decide, nothing is written
    recs = list(store.records())
    if args.json:
        print(json.dumps([{"id": r.id, "state": r.state, "kind": r.kind, "label": r.label,
                           "summary": r.summary} for r in recs], indent=2))
        return 0
    print(f"{'id':<17} {'state':<8} {'label':<30} result")
    for r in recs:
        acc = (r.summary or {}).get("test_acc")
        err = (r.summary or {}).get("error")
        info = f"{100 * acc:.1f}%" if isinstance(acc, (int, float)) else (err or "")
        print(f"{r.id:<17} {r.state:<8} {r.label:<30} {info}")
    counts = {s: sum(r.state == s for r in recs) for s in ("done", "pending", "running", "failed")}
    print(", ".join(f"{n} {s}" for s, n in counts.items()))
    return 0
