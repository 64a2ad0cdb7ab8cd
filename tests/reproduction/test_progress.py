"""The sweep's progress (posenc.reproduction.progress): runs done of N, elapsed, ETA from the runs
finished in this sweep, the runs in flight -- as plain lines off a terminal and as a tqdm bar on
one; a fake clock makes the numbers exact."""

import io
import sys
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc.reproduction import progress as prog
from posenc.reproduction.progress import SweepProgress, clock, eta


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def job(label):
    return types.SimpleNamespace(label=label)


def result(acc):
    return {"summary": {"test_acc": acc}}


def test_plain_lines_count_runs_and_time_them():
    lines, now = [], Clock()
    p = SweepProgress(lines.append, bar=False, now=now)
    p.plan(types.SimpleNamespace(total=5, skipped=1))  # one finished before: counts, never timed
    p.start("a", job("distance/rope/s0"))
    p.start("b", job("distance/nope/s0"))
    now.t += 30
    p.done("a", job("distance/rope/s0"), result(1.0))
    now.t += 30
    p.done("b", job("distance/nope/s0"), None)
    p.close()
    assert lines == [
        "  distance/rope/s0             100.0%   [2/5 runs, elapsed 0:30, ETA 1:30, 1 in flight]",
        # 2 finished in 60 s, 2 left: 60 s more (the rate of this sweep's runs alone)
        "  distance/nope/s0             failed   [3/5 runs, elapsed 1:00, ETA 1:00, 0 in flight]"]


def test_before_any_run_finishes_the_eta_is_unknown():
    now = Clock()
    p = SweepProgress(lambda s: None, now=now)
    p.plan(types.SimpleNamespace(total=3, skipped=0))
    now.t += 5
    assert p.status() == "[0/3 runs, elapsed 0:05, ETA ?, 0 in flight]"


@given(st.integers(0, 10_000), st.integers(1, 500), st.floats(0.001, 1e6))
def test_eta_is_the_remaining_runs_at_the_mean_rate(remaining, finished, elapsed):
    # a reference loop: the runs left, one mean run time each
    expected = 0.0
    for _ in range(remaining):
        expected += elapsed / finished
    assert abs(eta(remaining, finished, elapsed) - expected) <= 1e-9 * max(1.0, expected)


def test_clock():
    assert [clock(s) for s in (0, 59.4, 61, 3599, 3600, 3725)] == \
        ["0:00", "0:59", "1:01", "59:59", "1:00:00", "1:02:05"]


def test_the_bar_shows_runs_done_of_n_and_the_runs_in_flight(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(prog, "REDRAW_S", 0.01)
    p = SweepProgress(print, bar=True)
    p.plan(types.SimpleNamespace(total=4, skipped=1))
    p.start("a", job("distance/rope/s0"))
    p.start("b", job("distance/alibi/s0"))
    text = out.getvalue()
    assert "1/4" in text and "in flight: distance/rope/s0, distance/alibi/s0" in text, text
    p.done("a", job("distance/rope/s0"), result(0.5))
    p.close()
    text = out.getvalue()
    assert "  distance/rope/s0             50.0%\n" in text  # the run's line, above the bar
    assert "2/4" in text and "in flight: distance/alibi/s0" in text, text
    assert "[" not in text.split("50.0%")[1].split("\n")[0]  # no plain-line numbers beside it


def test_many_runs_in_flight_are_counted_not_named():
    p = SweepProgress(lambda s: None)
    for i in range(8):
        p.start(str(i), job(f"distance/absolute+rope/s{i}"))
    assert p.in_flight_text() == "8 in flight"


def test_a_bar_only_for_print_on_a_terminal(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr(sys, "stdout", Tty())
    assert prog.want_bar(print) and not prog.want_bar(lambda s: None)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert not prog.want_bar(print)


BAR_ON_A_PTY = """
import types
from posenc.reproduction.progress import SweepProgress
job = types.SimpleNamespace(label="distance/rope/s0")
p = SweepProgress(print, bar=True)
p.plan(types.SimpleNamespace(total=4, skipped=1))
p.start("a", job)
p.done("a", job, {"summary": {"test_acc": 0.5}})
p.close()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal")
def test_the_bar_shows_on_a_terminal_that_reports_no_size():
    """A pseudo-terminal of 0 x 0 (as ``script`` makes one without a terminal above it): tqdm
    would take it as a screen too small for the bar and draw nothing."""
    import os
    import pty
    import subprocess
    from pathlib import Path
    master, slave = pty.openpty()  # its size is 0 x 0 until someone sets one
    assert os.get_terminal_size(slave) == (0, 0)
    root = str(Path(__file__).parents[2])
    proc = subprocess.Popen([sys.executable, "-c", BAR_ON_A_PTY], stdout=slave, stderr=slave,
                            env={**os.environ, "PYTHONPATH": root})
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=60) == 0, b"".join(chunks)
    text = b"".join(chunks).decode(errors="replace")
    assert "  distance/rope/s0             50.0%" in text, text
    assert "2/4" in text and "runs:" in text, text  # the bar itself, after the run's line
