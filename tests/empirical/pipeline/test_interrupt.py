"""Ctrl-C during a sweep (posenc.empirical.pipeline.interrupt), with a toy worker that runs until
it is stopped: SIGINT to the sweep's process group stops every run within seconds and starts no
queued one, on a pool and in-process; a worker that does not stop is killed after the grace; a
second SIGINT exits at once; a commit is never cut short.  The end-to-end version with real
training, whose resumed store equals an uninterrupted one, is in tests/test_store_reliability.py."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from posenc.empirical.pipeline.interrupt import SigintGuard, SweepInterrupted
from posenc.empirical.pipeline.store import RunStore

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def endless_worker(config, folder, threads):
    """Marks its start in ``config["marks"]``, then runs until stopped (``stubborn``: with SIGTERM
    ignored, as a run stuck in native code would be -- ignored process-wide, since a signal
    blocked in the main thread alone reaches the worker's parent-watching thread and stops the
    run anyway); ``quick`` jobs finish at once."""
    Path(config["marks"], f"started-{config['x']}").write_text("")
    if config.get("quick"):
        return {"summary": {"x": config["x"]}}
    if config.get("stubborn"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        Path(folder, "progress").write_text(str(time.time()))
        time.sleep(0.02)


SWEEP = textwrap.dedent("""
    import sys
    from posenc.empirical.pipeline import interrupt
    from posenc.empirical.pipeline.store import RunStore
    from posenc.empirical.pipeline.sweep import Job, run_jobs
    store, marks, workers, stubborn = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
    interrupt.STOP_GRACE_S = 1.0
    jobs = [Job({"x": 0, "marks": marks, "quick": True}, "toy", "x=0")]
    jobs += [Job({"x": x, "marks": marks, "stubborn": stubborn}, "toy", f"x={x}") for x in (1, 2, 3, 4)]
    try:
        run_jobs(RunStore(store), jobs, "test_interrupt:endless_worker", workers=workers, threads=1)
    except interrupt.SweepInterrupted as exc:
        print(exc, flush=True)
        sys.exit(interrupt.EXIT_INTERRUPTED)
""")


def _sweep(tmp_path, workers, stubborn=False):
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)])}
    proc = subprocess.Popen([sys.executable, "-c", SWEEP, str(tmp_path / "s"), str(marks), str(workers),
                             "1" if stubborn else "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list(marks.glob("started-*"))) < 1 + workers:  # the quick job and one per worker
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.05)
    time.sleep(0.3)  # the runs are in progress
    return proc, marks


def _session(sid):
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            pids.append(int(stat.parent.name))
    return pids


def _interrupt(proc, times=1, gap=0.3):
    t0 = time.monotonic()
    for i in range(times):
        if i:
            time.sleep(gap)
        os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return time.monotonic() - t0, out, err


@pytest.mark.parametrize("workers", [1, 2])
def test_sigint_stops_every_run_and_starts_no_queued_one(tmp_path, workers):
    proc, marks = _sweep(tmp_path, workers)
    try:
        seconds, out, err = _interrupt(proc)
        assert proc.returncode == 130, (out, err)
        assert seconds < 5, seconds  # the runs in flight stopped, the pool shut down
        assert err == "", err  # the workers ignore the SIGINT: no traceback of theirs
        assert out.strip() == f"1 of 5 runs finished in {tmp_path / 's'}, {workers} stopped mid-run " \
                              "(resumed from their last checkpoint)", out
        # no queued run started after the Ctrl-C: the quick one and one per worker, no more
        assert sorted(p.name for p in marks.iterdir()) == \
            [f"started-{x}" for x in range(1 + workers)]
        staging = sorted((tmp_path / "s" / "staging").iterdir())
        assert len(staging) == workers and all((p / "progress").is_file() for p in staging)
        states = sorted((r.label, r.state) for r in RunStore(tmp_path / "s", create=False).records())
        assert states == [("x=0", "done")] + [(f"x={x}", "pending") for x in (1, 2, 3, 4)]
        if sys.platform.startswith("linux"):
            deadline = time.monotonic() + 10
            while _session(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _session(proc.pid) == []  # no worker left behind
    finally:
        for pid in _session(proc.pid) if sys.platform.startswith("linux") else []:
            os.kill(pid, signal.SIGKILL)


def test_a_worker_that_does_not_stop_is_killed_after_the_grace(tmp_path):
    proc, marks = _sweep(tmp_path, 2, stubborn=True)
    seconds, out, err = _interrupt(proc)
    assert proc.returncode == 130 and "2 stopped mid-run" in out, (out, err)
    assert 1.0 <= seconds < 5, seconds  # the grace (1 s here), then SIGKILL
    assert len(list(marks.iterdir())) == 3


def test_a_second_sigint_exits_at_once(tmp_path):
    proc, marks = _sweep(tmp_path, 2, stubborn=True)  # the first would wait out the grace
    seconds, out, err = _interrupt(proc, times=2, gap=0.2)
    assert proc.returncode == 130, (out, err)
    assert seconds < 0.2 + 0.9, seconds  # not the 1 s grace
    assert "posenc: interrupted again: stopped at once" in err, err
    assert len(list(marks.iterdir())) == 3


def test_the_guard_defers_a_sigint_to_the_end_of_a_commit():
    reached = []
    # the handler the guard found (Python's default one, or SIG_IGN where the test process was
    # started in the background of a shell without job control, which ignores SIGINT)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with SigintGuard(raise_now=True) as guard:
            with guard.shielded():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs here, and must not raise
                reached.append(guard.requested)
    assert reached == [True]
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_sweep_interrupted_is_a_keyboard_interrupt_that_says_how_far(tmp_path):
    exc = SweepInterrupted(3, 8, tmp_path, stopped=2)
    assert isinstance(exc, KeyboardInterrupt)
    assert str(exc) == f"3 of 8 runs finished in {tmp_path}, 2 stopped mid-run " \
                       "(resumed from their last checkpoint)"
    assert str(SweepInterrupted(0, 1, tmp_path)) == f"0 of 1 runs finished in {tmp_path}"
