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
                     "dim that has a rotary pair by default", model=True)
    p.set_defaults(func=run)


def symbolic_head_dim(spec, given: int | None):
    """(head dim, spec) to derive a config's RoPE at: ``given``, else the smallest even one from 4
    up to the symbolic limit that the spec fits (``fraction=0.25`` needs 8).  None fits a spec
    whose per-plane lists (longrope) are longer than the symbolic head has planes: its form and
    proofs do not depend on the factors, so it is derived at the smallest head dim with the
    factors of its first planes (its own planes are stated numerically by
    :func:`config_planes`); any other misfit is refused."""
    import dataclasses

    from ..errors import PosencError
    from ..limits import MAX_SYMBOLIC_DIM

    if given is not None or not hasattr(spec, "rotary_dims"):
        return given, spec
    for d in range(4, MAX_SYMBOLIC_DIM + 1, 2):
        try:
            spec.rotary_dims(d)
        except PosencError as exc:
            why = str(exc)
            continue
        return d, spec
    if spec.scaling == "longrope":
        for d in range(4, MAX_SYMBOLIC_DIM + 1, 2):
            for k in range(1, d // 2 + 1):
                cut = dataclasses.replace(spec, short_factor=spec.short_factor[:k],
                                          long_factor=spec.long_factor[:k])
                try:
                    cut.rotary_dims(d)
                except PosencError:
                    continue
                return d, cut
    raise PosencError(f"derive --from-hf: no symbolic head dim up to {MAX_SYMBOLIC_DIM} fits "
                      f"{spec.to_string()[:80]}: {why} (bound --from-hf takes the config's)")


def config_planes(spec, head_dim: int) -> dict:
    """The rotary planes of ``spec`` at the config's head dim, numerically: theta'_m (scaled) and
    the attention factor s."""
    from ..numerics.conventions import rope_attention_factor, rope_frequencies

    return {"head_dim": head_dim, "theta": [float(t) for t in rope_frequencies(spec, head_dim)],
            "attention_factor": float(rope_attention_factor(spec))}


def run(args: argparse.Namespace) -> int:
    from ..encodings import all_entries, derivable_entries, parse_spec
    from ..errors import PosencError
    from ..theory import derive

    if args.all and (args.from_hf, args.hf, args.gguf) != (None, None, None):
        raise PosencError(f"derive: give --all or {'--from-hf CONFIG' if args.from_hf else '--hf DIR'}"
                          f", not both")
    if args.latex and args.json:
        raise PosencError("derive: --latex and --json are exclusive")
    given, info = hf_option.resolve(args.spec, args.from_hf, "derive", layers=args.hf_layers,
                                    model=(args.hf, args.gguf))
    if args.all == (given is not None):
        raise PosencError("derive: give either a SPEC, --from-hf CONFIG, --hf DIR or --all")
    if args.all:
        entries = list(derivable_entries())
    else:
        entries = [(given, parse_spec(given)) if isinstance(given, str) else (given.to_string(), given)]
    planes = None
    if info is not None:
        config_spec = entries[0][1]
        args.head_dim, symbolic = symbolic_head_dim(config_spec, args.head_dim)
        print(f"  derived at head dim {args.head_dim or 4}, {args.heads} heads (symbolic "
              f"sizes; --head-dim, --heads)", file=sys.stderr)
        if symbolic is not config_spec:
            entries = [(entries[0][0], symbolic)]
            planes = config_planes(config_spec, info["head_dim"])
            print(f"  its {len(planes['theta'])} planes do not fit a symbolic head: the form is "
                  f"derived with the factors of its first {len(symbolic.short_factor)} (it and its "
                  f"proofs hold for any factors); the config's planes at head dim "
                  f"{info['head_dim']} follow numerically", file=sys.stderr)
    skipped = [name for name, spec in all_entries() if not spec.has_toeplitz_form] if args.all else []
    forms = [(name, derive(spec, head_dim=args.head_dim, model_dim=args.model_dim,
                           n_heads=args.heads)) for name, spec in entries]
    if args.json:
        out = [dict(f.to_dict(), entry=name) for name, f in forms]
        if planes is not None:
            out[0]["config_planes"] = planes
        print(json.dumps(out if args.all else out[0], indent=2))
    else:
        for n, (name, form) in enumerate(forms):
            if n:
                print()
            if args.all:
                print(f"## {name}")
            print(form.latex() if args.latex else form.text())
        if planes is not None:
            print(f"\nthe config's planes (head dim {planes['head_dim']}; attention factor s = "
                  f"{planes['attention_factor']:.6g}): theta'_m")
            for m, theta in enumerate(planes["theta"]):
                print(f"  m={m:<3} theta'_{m} = {theta:.9g}")
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
