"""``--from-hf CONFIG``, shared by derive, bound, check and train: a local Hugging Face
config.json in place of a spec (:mod:`posenc.encodings.hf_config`).

The spec it maps to, with the model's head dim and heads, is said on stderr (stdout stays the
command's own output, JSON included); a bad file or a config with a position field the
catalogue cannot state is one line and exit status 2 before anything runs or is written.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Optional

from ..errors import PosencError

if TYPE_CHECKING:  # the catalogue is imported only when a command runs
    from ..encodings import PESpec

HELP = ("a local Hugging Face config.json (or its folder) instead of a spec: its positional "
        "encoding as the exact catalogue spec (no hub access)")


def add(p: argparse.ArgumentParser, extra: str = "", layers: bool = True) -> None:
    """Add ``--from-hf CONFIG`` (and ``--hf-layers GROUP``) to a command's parser."""
    p.add_argument("--from-hf", metavar="CONFIG", default=None, help=HELP + extra)
    if layers:
        p.add_argument("--hf-layers", metavar="GROUP", default=None,
                       help="with --from-hf, for a model whose layers differ in position (Gemma 3: "
                            "sliding_attention or full_attention; Llama 4: rope or nope): the "
                            "layer group to state")


def resolve(spec: Optional[str], config: Optional[str], what: str,
            spec_name: str = "a SPEC", layers: Optional[str] = None
            ) -> tuple[str | PESpec | None, Optional[dict]]:
    """The PE and the config's info from a positional spec (its text as given; info None) or
    ``--from-hf`` (the config's catalogue spec of layer group ``layers``, parsed) -- exactly one
    of them, or neither: (None, None); the mapping is said on stderr."""
    from ..encodings.hf_config import hf_spec

    if config is None:
        if layers is not None:
            raise PosencError(f"{what}: --hf-layers goes with --from-hf CONFIG")
        return spec, None
    if spec is not None:
        raise PosencError(f"{what}: give {spec_name} or --from-hf CONFIG, not both")
    parsed, info = hf_spec(config, layers=layers)
    say(parsed.to_string(), info)
    return parsed, info


def say(text: str, info: dict, note: str = "") -> None:
    """``--from-hf CONFIG: SPEC (model_type, head dim D, H heads)`` and the notes, on stderr."""
    print(f"--from-hf {info['source']}: {text} ({info['model_type']}, head dim "
          f"{info['head_dim']}, {info['heads']} heads){note}", file=sys.stderr)
    for line in info["notes"]:
        print(f"  note: {line}", file=sys.stderr)
