"""``posenc encodings``: list the catalogue with parameters, defaults and families."""

from __future__ import annotations

import argparse
import dataclasses
import json
import textwrap


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("encodings", help="list the PE catalogue, the paper code's named specs and the "
                                          "training presets")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..encodings import NAMED_SPECS, REGISTRY
    from ..encodings.rope_scaling import SCALINGS, USES
    from ..training_presets import TRAINING_PRESETS

    rows = []
    for name, cls in REGISTRY.items():
        params = {f.name: _default(f) for f in dataclasses.fields(cls)}
        rows.append({"name": name, "doc": cls.doc, "parameters": params})
    named = {name: spec.to_string() for name, spec in NAMED_SPECS.items()}
    summaries = {name: p.summary for name, p in TRAINING_PRESETS.items()}
    notes = {name: p.notes for name, p in TRAINING_PRESETS.items() if p.notes}
    scalings = {kind: {"rule": rule, "parameters": list(USES[kind])}
                for kind, rule in SCALINGS.items() if kind != "none"}
    if args.json:
        print(json.dumps({"families": rows, "named_specs": named, "rope_scalings": scalings,
                          "training_presets": summaries, "training_preset_notes": notes},
                         indent=2))
        return 0
    for row in rows:
        print(f"{row['name']:<17} {row['doc']}")
        for key, value in row["parameters"].items():
            print(f"    {key:<16} = {value}")
    print("\nrope scalings (transformers' ROPE_INIT_FUNCTIONS conventions; also in hybrid):")
    for kind, info in scalings.items():
        print(f"    scaling={kind:<9} {info['rule']}")
        print(f"    {'':<17} reads {', '.join(info['parameters'])}")
    print("\nnamed specs (the paper's code conventions):")
    for name, text in named.items():
        print(f"    {name:<20} = {text}")
    print("\ntraining presets (--preset of train, reproduce and dynamics):")
    for name, text in summaries.items():
        print(f"    {name:<12} {text}")
        if name in notes:
            print(textwrap.fill(notes[name], width=100, initial_indent=" " * 17,
                                subsequent_indent=" " * 17))
    return 0


def _default(f: dataclasses.Field) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        value = f.default_factory()  # type: ignore[misc]
        return value.to_string() if hasattr(value, "to_string") else value
    return None
