"""A real model on local disk (``--hf DIR [--gguf FILE]``): the folder and file transformers is
pointed at, checked before anything is loaded.

posenc reads pretrained models offline only: ``DIR`` must be an existing folder (a hub name such
as ``HuggingFaceTB/SmolLM2-135M`` that is not a folder here is refused, never fetched), holding
``config.json`` -- or, with ``--gguf FILE``, a GGUF file (its magic bytes checked), whose config
and tokenizer transformers reads from the file itself.  ``FILE`` is a path, or a name inside
``DIR``; without ``DIR`` its own folder is the model folder.  Every failure is one
:class:`PosencError` line.  Light: no transformers, no torch.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import PosencError

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class LocalModel:
    """Where a model lies: ``folder`` (absolute) and, for a GGUF model, ``gguf`` (the file's name
    inside ``folder``, as transformers' ``from_pretrained(folder, gguf_file=gguf)`` takes it)."""

    folder: str
    gguf: Optional[str] = None

    @property
    def config_path(self) -> Optional[str]:
        """``folder/config.json`` for a folder model; None for a GGUF one (its config is in the file)."""
        return None if self.gguf else os.path.join(self.folder, "config.json")

    @property
    def name(self) -> str:
        """How messages and reports name the model: the GGUF file or the folder."""
        return os.path.join(self.folder, self.gguf) if self.gguf else self.folder

    def from_pretrained_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for transformers' ``from_pretrained``: offline, this file."""
        kw: dict[str, Any] = {"local_files_only": True}
        if self.gguf:
            kw["gguf_file"] = self.gguf
        return kw


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def local_model(hf_dir: Optional[str], gguf: Optional[str] = None, what: str = "--hf") -> LocalModel:
    """The checked :class:`LocalModel` of ``--hf DIR`` and ``--gguf FILE`` (either may be None, not
    both)."""
    if hf_dir is None and gguf is None:
        raise PosencError(f"{what}: give a local model folder (--hf DIR) or a GGUF file (--gguf FILE)")
    for label, value in (("--hf", hf_dir), ("--gguf", gguf)):
        if value is not None and (not isinstance(value, (str, os.PathLike)) or not os.fspath(value)):
            raise PosencError(f"{what}: {label} takes a path; got {value!r}")
    folder = None
    if hf_dir is not None:
        folder = os.path.abspath(os.fspath(hf_dir))
        if not os.path.isdir(folder):
            raise PosencError(f"{what}: {os.fspath(hf_dir)!r} is not a local folder (posenc loads models "
                              f"offline only, never from a hub: give the folder that holds the model's "
                              f"config.json, or --gguf FILE)")
    if gguf is None:
        assert folder is not None
        if not _is_regular(os.path.join(folder, "config.json")):
            raise PosencError(f"{what}: {folder} holds no config.json (a Hugging Face model folder has "
                              f"one; for a GGUF model give --gguf FILE)")
        return LocalModel(folder)
    path = os.fspath(gguf)
    if folder is not None and not os.path.isabs(path) and not os.path.exists(path):
        path = os.path.join(folder, path)
    path = os.path.abspath(path)
    if not _is_regular(path):
        raise PosencError(f"{what}: --gguf {os.fspath(gguf)!r} is not a file here (posenc loads models "
                          f"offline only)")
    with open(path, "rb") as fh:
        magic = fh.read(len(GGUF_MAGIC))
    if magic != GGUF_MAGIC:
        raise PosencError(f"{what}: {path} is not a GGUF file (it does not start with {GGUF_MAGIC!r})")
    file_folder, name = os.path.split(path)
    if folder is not None and os.path.realpath(file_folder) != os.path.realpath(folder):
        raise PosencError(f"{what}: --gguf {path} lies outside --hf {folder}; give the file's own folder "
                          f"or the file alone")
    return LocalModel(folder or file_folder, name)
