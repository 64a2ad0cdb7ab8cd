"""Putting a report in place so that its readers never find it missing.

A report is built in a private hidden folder beside it (``STORE/.report.XXXX``) and then swapped
in file by file with :func:`os.replace`, which on POSIX replaces a file's name atomically: every
file of ``STORE/report/`` -- report.json above all -- is at every moment either the old one or
the new one, whole, and never absent.  The old report stays readable until the new one is
complete; a build that fails (or is killed) before the swap leaves the old report untouched.

Why files one by one and not a folder swap: renaming the old folder away and the new one in
leaves a moment with no ``report/`` at all (a reader polling report.json found it missing 388
times in 228k reads when the old folder was deleted first), and ``rename(2)`` cannot replace a
non-empty folder.  A symlink ``report -> .report.GEN`` swapped with :func:`os.replace` would be
atomic too, but it would turn ``report/`` into a link: a store copied with ``shutil.copytree``
or committed to git would then carry the hidden generation folder beside a link (or a copy of
it), and every store written so far holds a real folder that could not be turned into a link
without that very gap.  The price of the file-by-file swap: while it runs (milliseconds; a kill
in it, until the next build) a reader may see some files of the new report beside others of the
old -- each whole.  The order keeps that small: the figures and tables first, then report.json,
then report.md, which names the figures; files the new report no longer has go last.

Builds of one store take turns: each holds an exclusive ``flock(2)`` on the store folder itself
(no lock file to leave behind; the kernel releases it when its holder dies, so a killed build
never blocks the next), so the builder holding it knows every ``.report.*`` folder is debris of
an earlier, killed build and removes it before it starts.  Sweeps lock ``store.lock``, another
file: a report is built while a sweep runs, as before.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import PosencError, WriteError

STAGING_PREFIX = ".report."
#: swapped in last, in this order: report.md names the figures, so it goes in once they are new
LAST = ("report.json", "report.md")


@contextmanager
def staged_report(store_root: Path, name: str = "report") -> Iterator[Path]:
    """A private folder to write a report into, swapped into ``store_root/name`` when the block
    ends without an error (:func:`swap_in`); on an error (or a kill) the old report is untouched
    and the folder removed (by this build, or the next)."""
    try:
        lock = os.open(store_root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise WriteError.wrap(f"the report in {store_root}", exc) from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # this build's turn (closing the folder ends it)
        remove_debris(store_root)
        tmp = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=store_root))
        os.chmod(tmp, 0o755)
        try:
            yield tmp
            swap_in(tmp, store_root / name)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    except OSError as exc:
        if isinstance(exc, PosencError):
            raise
        raise WriteError.wrap(f"the report in {store_root}", exc) from None
    finally:
        os.close(lock)


def remove_debris(store_root: Path) -> list[str]:
    """Remove the staging folders of earlier builds (call it in a build's turn: then no other
    build is running, and each one found was left by a build that died); returns their
    names."""
    gone = []
    for path in sorted(store_root.glob(STAGING_PREFIX + "*")):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            gone.append(path.name)
    return gone


def swap_in(new: Path, out: Path) -> None:
    """Move the finished report folder ``new`` into ``out``: at once when there is no report
    yet, else file by file with :func:`os.replace` (see the module's docstring), then the old
    files the new report lacks are removed and ``new`` (empty by then) too."""
    if not out.is_dir():
        if out.is_symlink() or out.exists():
            out.unlink()
        new.rename(out)
        return
    names = sorted(p.name for p in new.iterdir())
    if any((new / n).is_dir() for n in names):
        raise PosencError(f"a report holds files only; {new} has a folder")
    for name in sorted(names, key=lambda n: (n in LAST, LAST.index(n) if n in LAST else 0, n)):
        os.replace(new / name, out / name)
    for old in out.iterdir():
        if old.name not in names:
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink()
    new.rmdir()
