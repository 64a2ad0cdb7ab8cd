"""Generated blocks inside hand-written Markdown: the text between a begin and an end marker.

``docs/theory.md`` holds two such blocks (the derived forms of :mod:`posenc.theory.document`
and the claims table of :mod:`posenc.proofs.document`); each generator replaces only its own
block, and its ``--check`` mode compares the committed block with a fresh one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .atomic import atomic_write_text


def current_block(document: str, begin: str, end: str) -> Optional[str]:
    """The text between the markers (leading newlines dropped), or None without both markers."""
    if begin not in document or end not in document:
        return None
    return document.partition(begin)[2].partition(end)[0].lstrip("\n")


def replace_block(document: str, begin: str, end: str, body: str) -> Optional[str]:
    """``document`` with the text between the markers replaced by ``body``; None without them."""
    if begin not in document or end not in document:
        return None
    head, _, rest = document.partition(begin)
    return head + f"{begin}\n{body}{end}" + rest.partition(end)[2]


def write_document(path: Path, text: str) -> None:
    """Write the whole document atomically (a reader never sees half of it)."""
    atomic_write_text(path, text)
