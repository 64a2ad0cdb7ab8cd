"""``posenc check IMPL``: check someone's RoPE or attention-bias code against the conventions.

IMPL is ``module:function``, ``module.function`` or ``path/to/file.py:function``.  A rotary
function ``f(x, positions) -> x_rotated`` (x of shape (..., seq, dim)) or a bias function
``g(n_heads, n) -> (heads, n, n)`` (ALiBi or KERPLE-log); the kind is detected unless ``--kind``
is given; an xPos function ``f(q, k, positions) -> (q, k)`` needs ``--kind xpos``.  The user's
code runs in a child process with a time limit (``--timeout``, default 60 s).  Prints each
property as pass/fail with a minimal counterexample.  Exit status 0 if every property passes,
1 if one fails, 2 for bad input (IMPL missing, not callable, raising, returning the wrong shape,
exiting, crashing or running past the time limit), with one line saying which.
"""

from __future__ import annotations

import argparse
import json

from ..errors import PosencError
from . import hf_option


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("check", help="check a RoPE or bias implementation (module:function or "
                                      "file.py:function) for conformance")
    p.add_argument("impl", metavar="IMPL", nargs="?",
                   help="module:function, module.function or path/to/file.py:function")
    p.add_argument("--kind", default=None,
                   help="rope: f(x, positions); bias: g(n_heads, n); xpos: f(q, k, positions) -> "
                        "(q, k); rope-qk: RoPE as f(q, k, positions) -> (q, k); t5: b(n) -> "
                        "(n, n) T5 buckets of query i, key j (default: detect rope or bias)")
    p.add_argument("--head-dim", type=int, default=None, metavar="D",
                   help="head dimension given to a rotary function (default 64)")
    # --dim: this command's name for it before every command said --head-dim; still taken, unlisted
    p.add_argument("--dim", dest="head_dim", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--expect", default=None, metavar="K=V,...",
                   help="the conventions you meant, checked against posenc's reference: "
                        "rotary base=500000,pairing=half|interleaved,fraction=F; bias "
                        "slopes=press|exp|S1:S2:...,direction=causal|symmetric or "
                        "r1=R1,r2=R2 (KERPLE-log), dtype=bfloat16|float16 (a bias computed in "
                        "that precision); xpos base=B,gamma=G,scale_base=S; t5 "
                        "bidirectional=true|false,num_buckets=N,max_distance=M")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds the child process running IMPL may take (default 60)")
    hf_option.add(p, "; checks transformers' own rotary, ALiBi or T5 code for that "
                     "architecture, built from the config, against that spec (--expect keys "
                     "replace the spec's; a model whose layers differ in position is checked "
                     "group by group unless --hf-layers names one)", model=True)
    p.add_argument("--max-positions", type=int, default=None, metavar="N",
                   help="probe a rotary function only at positions below N (its position "
                        "table's size; default: detected as the first position that raises)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api.conformance import check

    if (args.from_hf, args.hf, args.gguf) != (None, None, None):
        return _check_hf(args)
    if args.hf_layers is not None:
        raise PosencError("check: --hf-layers goes with --from-hf CONFIG or --hf DIR")
    if args.impl is None:
        raise PosencError(f"check: give {hf_option.choices('an IMPL')}")
    report = check(args.impl, kind=args.kind,
                   head_dim=64 if args.head_dim is None else args.head_dim,
                   expect=args.expect, timeout=args.timeout, max_positions=args.max_positions)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.text())
    return 0 if report.ok else 1


def _check_hf(args: argparse.Namespace) -> int:
    """transformers' code of the config or model, one report per layer group (a model of one
    group: the one report, as for an IMPL); exit 0 when every group checked conforms."""
    from ..checker.hf_code import check_hf_groups

    given = [f"--{k.replace('_', '-')}" for k in ("kind", "head_dim", "timeout", "max_positions")
             if getattr(args, k) is not None]
    if given:
        raise PosencError(f"check --from-hf: {', '.join(given)} not taken: the config sets the "
                          f"kind, head dim and probe length, and transformers' code runs in this "
                          f"process")
    source, local = hf_option.config_source(args.impl, args.from_hf, "check", "an IMPL",
                                            args.hf_layers, (args.hf, args.gguf))
    option = "--hf" if local else "--from-hf"
    results = check_hf_groups(source, expect=args.expect, layers=args.hf_layers,
                              where=local.name if local and local.gguf else None)
    for group, report, info in results:
        if not isinstance(report, PosencError):
            hf_option.say(report.summary["from_hf"]["spec"], info, option=option)
    if len(results) == 1:
        report = results[0][1]
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) if args.json
              else report.text())
        return 0 if report.ok else 1
    groups = results[0][2]["layer_groups"]
    checked = [r for _, r, _ in results if not isinstance(r, PosencError)]
    ok = all(r.ok for r in checked)
    if args.json:
        print(json.dumps({"ok": ok, "groups": [
            {"layers": g, "layer_count": groups[g],
             **({"checked": False, "why": str(r)} if isinstance(r, PosencError)
                else {"checked": True, **r.to_dict()})} for g, r, _ in results]},
            indent=2, ensure_ascii=False))
        return 0 if ok else 1
    print(f"the model's layers fall into {len(results)} groups, checked one by one "
          f"(--hf-layers GROUP checks one):")
    for group, report, _ in results:
        print(f"\n## layer group {group} ({groups[group]} of {sum(groups.values())} layers)")
        print(f"not checked: {report}" if isinstance(report, PosencError) else report.text())
    print("\nevery group checked conforms" if ok else "\nDOES NOT CONFORM: "
          + ", ".join(g for g, r, _ in results if not isinstance(r, PosencError) and not r.ok))
    return 0 if ok else 1
