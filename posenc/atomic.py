"""Atomic file writes: a reader sees the old file or the new one, never half of one.

The bytes go to a temporary file in the same folder, are flushed and fsync'ed, and the file is
moved into place with :func:`os.replace`; on any error (a kill between the two leaves only a
hidden ``.NAME.*.tmp``) the temporary file is removed, and an :class:`OSError` (a full disk, a
read-only folder) becomes one :class:`~posenc.errors.WriteError` line naming the file.  Used for
run folders (checkpoints, configs, metrics), the results store and the reports.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable

from .errors import PosencError, WriteError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Call ``write(binary file)`` and move the result to ``path`` atomically."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise WriteError.wrap(str(path), exc) from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file normal permissions
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError.wrap(str(path), exc) from None
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


def atomic_write_json(path: str | Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


FIGURE_FORMATS = ("png", "pdf", "svg")


def check_figure_path(path: str | Path, formats: tuple[str, ...] = FIGURE_FORMATS,
                      option: str = "--plot") -> Path:
    """A figure file name with a supported suffix whose directory exists -- checked before any
    work is done; otherwise one :class:`PosencError`."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in formats:
        raise PosencError(f"{option} needs a file name ending in "
                          f"{' or '.join('.' + f for f in formats)}; got {str(path)!r}")
    directory = path.resolve().parent
    if not directory.is_dir():
        raise PosencError(f"cannot write {path}: directory {directory} does not exist")
    return path


def atomic_savefig(fig: Any, path: str | Path, dpi: int, fmt: str | None = None) -> Path:
    """Save a matplotlib figure atomically; the format is ``fmt`` or the path's suffix."""
    path = Path(path)
    fmt = fmt or path.suffix.lstrip(".").lower() or "png"
    atomic_write(path, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi))
    return path
