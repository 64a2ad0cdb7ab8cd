"""``posenc derive SPEC | --all``: the symbolic attention logit of a PE, its Toeplitz terms, its family.

Prints the derived form (Gu et al., arXiv 2505.13027: content/position terms,
or a sum over rotary planes of a content Gram term times e^{i theta (i-j)}),
each term's Toeplitz verdict (proved, or a witness that it is not), and the
family derived from the form next to the catalogue's declared family.  Exit
status 1 when a derived family disagrees with the declared one or a proof is
missing; 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import hf_option, plain


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("derive", help="derive a PE's attention logit symbolically (sympy)",
                        description=plain(__doc__))
    p.add_argument("spec", nargs="?", help="a PE spec, e.g. rope:pairing=half or paper-alibi")
    p.add_argument("--all", action="store_true", help="every catalogue entry and preset")
    p.add_argument("--latex", action="store_true", help="print LaTeX instead of text")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--head-dim", type=int, default=None, metavar="D",
                   help="head dimension of the symbolic weights (default 4; proofs grow steeply with it)")
    p.add_argument("--model-dim", type=int, default=None, metavar="D",
                   help="model (input) width (default: the head dimension)")
    p.add_argument("--heads", type=int, default=4, metavar="H", help="number of heads (default 4)")
    hf_option.add(p, "; derived at the symbolic sizes (--head-dim, --heads), the smallest head "
                     "dim that has a rotary pair by default")
    p.set_defaults(func=run)


def symbolic_head_dim(spec, given: int | None) -> int | None:
    """The head dim to derive a config's RoPE at: ``given``, else the smallest even one from 4
    up to the symbolic limit that the spec fits (``fraction=0.25`` needs 8); none: refused."""
    from ..errors import PosencError
    from ..limits import MAX_SYMBOLIC_DIM

    if given is not None or not hasattr(spec, "rotary_dims"):
        return given
    for d in range(4, MAX_SYMBOLIC_DIM + 1, 2):
        try:
            spec.rotary_dims(d)
        except PosencError as exc:
            why = str(exc)
            continue
        return d
    raise PosencError(f"derive --from-hf: no symbolic head dim up to {MAX_SYMBOLIC_DIM} fits "
                      f"{spec.to_string()[:80]}: {why} (bound --from-hf takes the config's)")


def run(args: argparse.Namespace) -> int:
    from ..encodings import all_entries, derivable_entries, parse_spec
    from ..errors import PosencError
    from ..theory import derive

    if args.from_hf is not None and args.all:
        raise PosencError("derive: give --all or --from-hf CONFIG, not both")
    if args.latex and args.json:
        raise PosencError("derive: --latex and --json are exclusive")
    given, info = hf_option.resolve(args.spec, args.from_hf, "derive")
    if args.all == (given is not None):
        raise PosencError("derive: give either a SPEC, --from-hf CONFIG or --all")
    if args.all:
        entries = list(derivable_entries())
    else:
        entries = [(given, parse_spec(given)) if isinstance(given, str) else (given.to_string(), given)]
    if info is not None:
        args.head_dim = symbolic_head_dim(entries[0][1], args.head_dim)
        print(f"  derived at head dim {args.head_dim or 4}, {args.heads} heads (symbolic "
              f"sizes; --head-dim, --heads)", file=sys.stderr)
    skipped = [name for name, spec in all_entries() if not spec.has_toeplitz_form] if args.all else []
    forms = [(name, derive(spec, head_dim=args.head_dim, model_dim=args.model_dim,
                           n_heads=args.heads)) for name, spec in entries]
    if args.json:
        out = [dict(f.to_dict(), entry=name) for name, f in forms]
        print(json.dumps(out if args.all else out[0], indent=2))
    else:
        for n, (name, form) in enumerate(forms):
            if n:
                print()
            if args.all:
                print(f"## {name}")
            print(form.latex() if args.latex else form.text())
        if args.all and not args.latex:
            print("\nsummary: entry, declared family, derived family")
            for name, form in forms:
                mark = "ok" if form.family == form.declared_family else "DISAGREE"
                print(f"  {name:<22} {form.declared_family:<15} {form.family:<15} {mark}")
            for name in skipped:
                print(f"  {name:<22} not derived: its logit is not Toeplitz (mla:rope=paper_code)")
    ok = all(f.family == f.declared_family and all(f.analysis.decomposition_proved)
             and all(t.toeplitz.status != "undecided" for t in f.terms) for _, f in forms)
    return 0 if ok else 1
