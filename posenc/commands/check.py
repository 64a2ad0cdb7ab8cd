"""``posenc check IMPL``: check someone's RoPE or attention-bias code against the conventions.

IMPL is ``module:function``, ``module.function`` or ``path/to/file.py:function``.  A rotary
function ``f(x, positions) -> x_rotated`` (x of shape (..., seq, dim)) or a bias function
``g(n_heads, n) -> (heads, n, n)``; the kind is detected unless ``--kind`` is given.  Prints each
property as pass/fail with a minimal counterexample.  Exit status 0 if every property passes,
1 if one fails, 2 for bad input (IMPL missing, not callable, raising, or returning the wrong
shape), with the user's exception message on one line.
"""

from __future__ import annotations

import argparse
import json


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("check", help="check a RoPE or bias implementation (module:function or "
                                      "file.py:function) for conformance")
    p.add_argument("impl", metavar="IMPL", help="module:function, module.function or "
                                                "path/to/file.py:function")
    p.add_argument("--kind", default=None,
                   help="rope: f(x, positions); bias: g(n_heads, n) (default: detect)")
    p.add_argument("--dim", type=int, default=64,
                   help="head dimension given to a rotary function (default 64)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import os
    import sys

    from ..api.conformance import check

    # Let `module:function` find modules in the current directory, as `python -m` would.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    report = check(args.impl, kind=args.kind, dim=args.dim)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.text())
    return 0 if report.ok else 1
