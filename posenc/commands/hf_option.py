"""``--from-hf CONFIG`` and ``--hf DIR`` / ``--gguf FILE``, shared by derive, bound, check and
train (``--hf`` and ``--gguf``: derive, bound and check): a local Hugging Face config.json, or
a real model on local disk, in place of a spec (:mod:`posenc.encodings.hf_config`).

``--hf DIR`` reads ``DIR/config.json`` as ``--from-hf`` does; with ``--gguf FILE`` the config is
the one transformers derives from the GGUF file
(``AutoConfig.from_pretrained(DIR, gguf_file=FILE, local_files_only=True).to_dict()``: the
``hf`` extra, transformers and gguf).  The folder and file are checked by
:func:`posenc.encodings.hf_local.local_model` (offline only).  The spec it maps to, with the
model's head dim and heads, is said on stderr (stdout stays the command's own output, JSON
included); a bad file or a config with a position field the catalogue cannot state is one line
and exit status 2 before anything runs or is written.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Optional

from ..errors import PosencError

if TYPE_CHECKING:  # the catalogue is imported only when a command runs
    from ..encodings import PESpec
    from ..encodings.hf_local import LocalModel

HELP = ("a local Hugging Face config.json (or its folder) instead of a spec: its positional "
        "encoding as the exact catalogue spec (no hub access)")
HF_HELP = ("a model folder on local disk (its config.json; offline only, never a hub name) "
           "instead of a spec, as --from-hf reads it")
GGUF_HELP = ("a GGUF model file (a path, or a name inside --hf DIR): its config as transformers "
             "derives it from the file (needs the hf extra)")
HF_EXTRA = "pip install 'posenc[hf]'"


def add(p: argparse.ArgumentParser, extra: str = "", layers: bool = True,
        model: bool = False) -> None:
    """Add ``--from-hf CONFIG`` (``model``: ``--hf DIR`` and ``--gguf FILE`` too; ``layers``:
    ``--hf-layers GROUP``) to a command's parser."""
    p.add_argument("--from-hf", metavar="CONFIG", default=None, help=HELP + extra)
    if model:
        p.add_argument("--hf", metavar="DIR", default=None, help=HF_HELP)
        p.add_argument("--gguf", metavar="FILE", default=None, help=GGUF_HELP)
    if layers:
        p.add_argument("--hf-layers", metavar="GROUP", default=None,
                       help="with --from-hf" + (" or --hf" if model else "") + ", for a model whose "
                            "layers differ in position (Gemma 3: sliding_attention or "
                            "full_attention; Llama 4: rope or nope): the layer group to state")


def choices(spec_name: str = "a SPEC", model: bool = True) -> str:
    """What a command takes in place of each other: ``a SPEC, --from-hf CONFIG or --hf DIR``."""
    return f"{spec_name}, --from-hf CONFIG or --hf DIR" if model else f"{spec_name} or --from-hf CONFIG"


def resolve(spec: Optional[str], config: Optional[str], what: str,
            spec_name: str = "a SPEC", layers: Optional[str] = None,
            model: Optional[tuple[Optional[str], Optional[str]]] = None
            ) -> tuple[str | PESpec | None, Optional[dict]]:
    """The PE and the config's info from a positional spec (its text as given; info None),
    ``--from-hf`` or, for a command with ``model`` = (``--hf DIR``, ``--gguf FILE``), a model on
    local disk (the config's catalogue spec of layer group ``layers``, parsed; info holds the
    checked :class:`LocalModel` as ``local_model``) -- exactly one of them, or none:
    (None, None); the mapping is said on stderr."""
    from ..encodings.hf_config import hf_spec

    source, local = config_source(spec, config, what, spec_name, layers, model)
    if source is None:
        return spec, None
    parsed, info = hf_spec(source, layers=layers, where=local.name if local and local.gguf else None)
    if local is not None:
        info = {**info, "local_model": local}
    say(parsed.to_string(), info, option="--hf" if local else "--from-hf")
    return parsed, info


def config_source(spec: Any, config: Optional[str], what: str, spec_name: str = "a SPEC",
                  layers: Optional[str] = None,
                  model: Optional[tuple[Optional[str], Optional[str]]] = None
                  ) -> tuple[Any, Optional[LocalModel]]:
    """The config to map (a config.json path, or the dict of a GGUF file) and the model it is
    from (None for ``--from-hf``); (None, None) for a spec or nothing.  More than one of
    ``spec_name``, ``--from-hf CONFIG`` and (``model``) ``--hf DIR`` / ``--gguf FILE`` is one
    line."""
    hf_dir, gguf = model if model is not None else (None, None)
    given = [name for name, value in ((spec_name, spec), ("--from-hf CONFIG", config),
                                      ("--hf DIR" if gguf is None else "--gguf FILE",
                                       hf_dir if gguf is None else gguf))
             if value is not None]
    if len(given) > 1:
        not_ = "not both" if model is None else f"not {' and '.join(given)}"
        raise PosencError(f"{what}: give {choices(spec_name, model is not None)}, {not_}")
    if config is None and hf_dir is None and gguf is None:
        if layers is not None:
            raise PosencError(f"{what}: --hf-layers goes with --from-hf CONFIG"
                              + (" or --hf DIR" if model is not None else ""))
        return None, None
    if config is not None:
        return config, None
    from ..encodings.hf_local import local_model

    local = local_model(hf_dir, gguf, what)
    if local.gguf is None:
        return local.config_path, local
    return gguf_config(local, what), local


def gguf_config(model: LocalModel, what: str) -> dict:
    """The config dict transformers derives from ``model``'s GGUF file (offline)."""
    try:
        import logging

        import transformers
        import gguf  # noqa: F401  (transformers reads GGUF files with it)
    except ImportError as exc:
        raise PosencError(f"{what}: --gguf reads the file's config with transformers and gguf, "
                          f"which this install lacks ({exc.name}): {HF_EXTRA}") from None
    logging.getLogger("transformers").setLevel(logging.ERROR)
    try:
        config = transformers.AutoConfig.from_pretrained(model.folder,
                                                         **model.from_pretrained_kwargs())
    except Exception as exc:            # transformers' own refusal of the file, in one line
        raise PosencError(f"{what}: transformers cannot read a config from {model.name} "
                          f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None
    return config.to_dict()


def say(text: str, info: dict, note: str = "", option: str = "--from-hf") -> None:
    """``--from-hf CONFIG: SPEC (model_type, head dim D, H heads)`` and the notes, on stderr."""
    print(f"{option} {info['source']}: {text} ({info['model_type']}, head dim "
          f"{info['head_dim']}, {info['heads']} heads){note}", file=sys.stderr)
    for line in info["notes"]:
        print(f"  note: {line}", file=sys.stderr)
