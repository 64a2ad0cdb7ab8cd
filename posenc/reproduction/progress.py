"""The progress of ``posenc reproduce``'s sweep: runs done of N, elapsed, ETA, the runs in flight.

On a terminal a tqdm bar over the runs (:class:`SweepProgress` with ``bar=True``): done of N
(those finished before count from the start), the elapsed time, the ETA from the runs finished
in this sweep (their mean rate: ``smoothing=0``), and the runs in flight; it is redrawn every
second, so the elapsed time moves while a run trains, and each finished run's line is written
above it.  Elsewhere (a file, a pipe, a caller's ``log``) one plain line per finished run with the
same numbers.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Optional

#: seconds between two redraws of the bar
REDRAW_S = 1.0
#: the longest list of runs in flight the bar names (more: their count)
IN_FLIGHT_CHARS = 60
#: the (columns, rows) the bar assumes on a terminal that reports no size
FALLBACK_SIZE = (100, 24)


def terminal_size() -> tuple[int, int]:
    """(columns, rows) of the terminal on stdout ((0, 0): none, or one that reports no size)."""
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return (0, 0)
    return (size.columns, size.lines)


def clock(seconds: float) -> str:
    """``M:SS`` or ``H:MM:SS``."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def eta(remaining: int, finished_here: int, elapsed: float) -> Optional[float]:
    """Seconds left at the mean rate of the runs finished in this sweep (None: none yet)."""
    if finished_here <= 0 or elapsed <= 0:
        return None
    return remaining * elapsed / finished_here


def want_bar(log: Callable[[str], None]) -> bool:
    """A bar where the lines go to a terminal: the log is ``print`` and stdout is a TTY."""
    isatty = getattr(sys.stdout, "isatty", None)
    return log is print and callable(isatty) and bool(isatty())


class SweepProgress:
    """Hooks for :func:`~posenc.empirical.pipeline.sweep.run_jobs`: :meth:`plan` (``on_plan``),
    :meth:`start` (``on_start``), :meth:`done` (``on_done``); :meth:`close` when the sweep ends."""

    def __init__(self, log: Callable[[str], None] = print, bar: bool = False,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.log, self.use_bar, self.now = log, bar, now
        self.total = self.skipped = self.finished = 0
        self.in_flight: dict[str, str] = {}
        self.t0 = now()
        self.bar: Any = None
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None

    # -- the sweep's hooks -------------------------------------------------------------------
    def plan(self, summary: Any) -> None:
        self.total, self.skipped = summary.total, summary.skipped
        self.t0 = self.now()
        if not self.use_bar or self.total == self.skipped:
            return
        from tqdm import tqdm
        # a terminal that reports no size (as `script` makes one) would hide the bar: tqdm takes
        # 0 rows for a screen too short to show it
        sized = min(terminal_size()) > 0
        self.bar = tqdm(total=self.total, initial=self.skipped, unit="run", desc="runs",
                        smoothing=0, file=sys.stdout, dynamic_ncols=sized,
                        ncols=None if sized else FALLBACK_SIZE[0],
                        nrows=None if sized else FALLBACK_SIZE[1], mininterval=0.2)
        self._ticker = threading.Thread(target=self._redraw, name="posenc-progress", daemon=True)
        self._ticker.start()

    def start(self, rid: str, job: Any) -> None:
        self.in_flight[rid] = job.label
        self._postfix()

    def done(self, rid: str, job: Any, result: Optional[dict]) -> None:
        self.in_flight.pop(rid, None)
        self.finished += 1
        state = "failed" if result is None else f"{100 * result['summary']['test_acc']:.1f}%"
        line = f"  {job.label:<28} {state}"
        if self.bar is not None:
            self.bar.write(line, file=sys.stdout)
            self.bar.set_postfix_str(self.in_flight_text(), refresh=False)
            self.bar.update(1)
        else:
            self.log(f"{line}   {self.status()}")

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    # -- the numbers ---------------------------------------------------------------------------
    def status(self) -> str:
        """``[done/N, elapsed M:SS, ETA M:SS, k in flight]`` (the plain line's numbers)."""
        done = self.skipped + self.finished
        elapsed = self.now() - self.t0
        left = eta(self.total - done, self.finished, elapsed)
        return (f"[{done}/{self.total} runs, elapsed {clock(elapsed)}, ETA "
                f"{'?' if left is None else clock(left)}, {len(self.in_flight)} in flight]")

    def in_flight_text(self) -> str:
        names = ", ".join(self.in_flight.values())
        if not names:
            return ""
        return f"in flight: {names}" if len(names) <= IN_FLIGHT_CHARS else \
            f"{len(self.in_flight)} in flight"

    def _postfix(self) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(self.in_flight_text(), refresh=True)

    def _redraw(self) -> None:
        while not self._stop.wait(REDRAW_S):
            bar = self.bar
            if bar is not None and self.skipped + self.finished < self.total:  # (none once done)
                bar.refresh()
