"""JSON-lines files of a run folder kept gzip-compressed, read in either form.

A run's training-dynamics file grows by one record every few optimiser steps (about 4.5 KB at
the quick preset's 4 x 8 heads), so it is written compressed: ``NAME.gz`` (gzip level 9; no
file name and a zero time stamp in its header, so the same rows give the same bytes).  Folders
written before keep the plain ``NAME``, and both read the same (:func:`stored_file` finds
whichever a folder holds, the compressed one first).  A gzip stream carries its length and a
CRC-32, so a truncated or altered compressed file is refused in one line
(:func:`read_jsonl`) -- a plain file cut at a line boundary would read as a shorter file.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any, Optional

from .atomic import atomic_write
from .errors import PosencError

GZ = ".gz"


def stored_file(folder: str | Path, name: str) -> Optional[Path]:
    """The file ``folder`` holds for the JSON-lines file ``name``: ``name.gz`` (written now) or
    ``name`` (plain, written before); None when it holds neither."""
    folder = Path(folder)
    return next((p for p in (folder / (name + GZ), folder / name) if p.is_file()), None)


def write_jsonl_gz(path: str | Path, rows: list[Any]) -> Path:
    """Write ``rows`` (one JSON value a line) to ``path`` + ``.gz`` atomically and remove a plain
    ``path`` left by an earlier write; returns the file written."""
    path = Path(path)
    target = path.with_name(path.name + GZ)
    data = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    atomic_write(target, lambda fh: fh.write(gzip.compress(data, compresslevel=9, mtime=0)))
    path.unlink(missing_ok=True)
    return target


def read_jsonl(path: str | Path) -> list[Any]:
    """The rows of a JSON-lines file, gzip-compressed when its name ends in ``.gz``; a file that
    cannot be read, decompressed or parsed whole is one PosencError line naming it."""
    path = Path(path)
    try:
        data = path.read_bytes()
        if path.name.endswith(GZ):
            if not data:  # a gzip stream is never empty: a file cut before its first byte
                raise EOFError
            data = gzip.decompress(data)
        return [json.loads(line) for line in data.decode("utf-8").splitlines() if line]
    except EOFError:
        raise PosencError(f"{path} is damaged (the compressed file is truncated)") from None
    except (OSError, zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise PosencError(f"{path} is damaged ({exc})") from None
