"""One writer per results store: an exclusive OS file lock on ``STORE/store.lock``.

A sweep (:func:`posenc.empirical.pipeline.sweep.run_jobs`) holds the lock while it writes the store; a
second writer gets one line naming the holder's PID (or, with ``wait=True``, waits for it).  The
lock is ``flock(2)`` on an open file, so the kernel releases it when the holder dies -- a
SIGKILLed sweep never blocks the next one, and there is no stale lock file to clean up (the file
stays; only the lock on it matters).  Readers (``posenc runs``, ``posenc report``) take no lock;
:meth:`StoreLock.busy` tells them whether a writer is active, so that "running" is shown only
while something runs.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Callable, Optional

from ...errors import PosencError

LOCK_FILE = "store.lock"


class StoreLock:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: Optional[int] = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def holder(self) -> str:
        """Who holds the lock, as written by the holder ("PID 1234"), for messages."""
        try:
            pid = self.path.read_text(encoding="ascii").strip()
        except (OSError, ValueError):
            pid = ""
        return f"PID {pid}" if pid.isdigit() else "PID unknown"

    def acquire(self, wait: bool = False,
                on_wait: Optional[Callable[[str], None]] = None) -> None:
        """Take the lock; if another process holds it, raise (``wait=False``) or block."""
        if self._fd is not None:
            return
        store = self.path.parent
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise PosencError(f"cannot lock results store {store}: {exc.strerror or exc}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self.holder()
                if not wait:
                    raise PosencError(f"results store {store} is in use by another writer "
                                      f"({holder}); let it finish, or pass --wait") from None
                if on_wait is not None:
                    on_wait(holder)
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def busy(self) -> bool:
        """Whether some writer (this object or another process) holds the lock now."""
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return False  # no lock file: no writer has ever run
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
