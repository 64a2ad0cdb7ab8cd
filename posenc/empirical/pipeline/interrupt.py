"""Ctrl-C during a sweep: stop every run within seconds, start none, keep what resumes.

A terminal's Ctrl-C sends SIGINT to the whole process group: the sweep process and its pool
workers.  The workers ignore it (:func:`worker_signals`), so that the sweep alone decides: on the
first SIGINT (:class:`SigintGuard`) it submits no further job, asks each worker to stop its run
(SIGTERM: the run unwinds as :class:`RunStopped`, so an atomic write in progress removes its
temporary file; a worker between runs begins none; one that has not stopped after
:data:`STOP_GRACE_S` is killed), leaves each
stopped run's staging folder for the next sweep to resume from its checkpoint, and raises
:class:`SweepInterrupted`.  A second SIGINT kills the workers and exits at once (status 130).
Where the sweep runs its jobs in its own process (one worker), the first SIGINT interrupts the
run in progress as a KeyboardInterrupt -- never a commit, which finishes first.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

#: seconds a worker asked to stop (SIGTERM) gets before it is killed
STOP_GRACE_S = 10.0
#: the exit status of a process ended by SIGINT (128 + 2), as shells report it
EXIT_INTERRUPTED = 130


class RunStopped(BaseException):
    """Raised in a pool worker whose run the sweep stopped (SIGTERM while a run is in progress);
    a BaseException, so no ``except Exception`` of the run's code takes it for a failure."""


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by SIGINT: its finished runs are committed, the runs it stopped left to
    resume, the rest not started.  ``str()``: how far it got, in words."""

    def __init__(self, finished: int, total: int, store_root: Path, stopped: int = 0) -> None:
        super().__init__(finished, total, str(store_root), stopped)
        self.finished, self.total, self.store_root, self.stopped = finished, total, store_root, stopped

    def __str__(self) -> str:
        stopped = f", {self.stopped} stopped mid-run (resumed from their last checkpoint)" \
            if self.stopped else ""
        return f"{self.finished} of {self.total} runs finished in {self.store_root}{stopped}"


_in_run = False  # in a pool worker: whether a run is in progress
_stop_asked = False  # in a pool worker: SIGTERM came (a run raises RunStopped once, or never starts)


@contextmanager
def running() -> Iterator[None]:
    """Marks a pool worker's run in progress: SIGTERM then stops the run (once); a worker
    asked to stop before the run began does not begin it."""
    global _in_run
    if _stop_asked:
        raise RunStopped()
    _in_run = True
    try:
        yield
    finally:
        _in_run = False


def _stop(signum: int, frame: Any) -> None:
    global _stop_asked
    first, _stop_asked = not _stop_asked, True
    if first and _in_run:  # (a second SIGTERM must not cut the first one's unwinding short)
        raise RunStopped()


def worker_signals() -> None:
    """Pool-worker set-up: ignore SIGINT (the sweep decides); SIGTERM stops the run in progress
    or the next one (the sweep then shuts the pool down)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)


class SigintGuard:
    """SIGINT while a sweep runs (a context manager; outside the main thread it does nothing).

    The first SIGINT sets :attr:`requested`; with ``raise_now`` (the jobs run in this process)
    it also raises KeyboardInterrupt where the main thread is -- deferred to the end of a
    :meth:`shielded` block (a commit).  A second SIGINT calls ``on_exit`` (kill the workers),
    writes one line and exits at once with status 130.  The earlier handler is restored on exit."""

    def __init__(self, raise_now: bool, on_exit: Optional[Callable[[], None]] = None) -> None:
        self.raise_now, self.on_exit = raise_now, on_exit
        self.requested = False
        self._shielded = 0
        self._deferred = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> "SigintGuard":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def exit_on_next(self) -> None:
        """From now on (the sweep is stopping), any SIGINT exits at once."""
        self.requested = True

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            try:
                if self.on_exit is not None:
                    self.on_exit()
            finally:
                os.write(2, b"posenc: interrupted again: stopped at once\n")
                os._exit(EXIT_INTERRUPTED)
        self.requested = True
        if self.raise_now:
            if self._shielded:
                self._deferred = True
            else:
                raise KeyboardInterrupt

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """A block a first SIGINT does not interrupt (it raises at the block's end instead)."""
        self._shielded += 1
        try:
            yield
        finally:
            self._shielded -= 1
        if not self._shielded and self._deferred:
            self._deferred = False
            raise KeyboardInterrupt


def signal_processes(processes: Any, sig: int) -> None:
    """Send ``sig`` to each live process of ``processes`` (multiprocessing Process objects)."""
    for proc in list(processes):
        pid = getattr(proc, "pid", None)
        if pid and proc.is_alive():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
