"""The results store heals and has one writer, with a toy worker.

The index is derived state: deleted, emptied, garbage, foreign-schema or stale, readers still see
what the run folders say and the next writer rebuilds it.  A second writer -- a real second
process -- is refused in one line naming the holder's PID, or waits; a SIGKILLed holder blocks
nobody.  The end-to-end versions with real training are in tests/test_store_reliability.py."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from posenc.cli import main
from posenc.empirical.pipeline.store import RunStore
from posenc.empirical.pipeline.store_lock import StoreLock
from posenc.empirical.pipeline.sweep import Job, run_jobs
from posenc.errors import PosencError

HERE = Path(__file__).parent


def toy_worker(config, folder, threads):
    """Stands in for training; with ``hold`` set it blocks until that file exists."""
    if config.get("hold"):
        while not os.path.exists(config["hold"]):
            time.sleep(0.05)
    if config.get("explode"):
        raise RuntimeError("boom")
    Path(folder, "metrics.jsonl").write_text(json.dumps({"x": config["x"]}) + "\n")
    return {"summary": {"y": config["x"] ** 2, "test_acc": config["x"] / 10}}


WORKER = f"{__name__}:toy_worker"


def jobs(xs, **extra):
    return [Job(config={"x": x, **extra}, kind="toy", label=f"x={x}") for x in xs]


def view(store_dir):
    """What a reader sees: (label, state, summary) per run."""
    return [(r.label, r.state, r.summary) for r in RunStore(store_dir, create=False).records()]


@pytest.fixture
def store(tmp_path):
    s = RunStore(tmp_path / "s")
    run_jobs(s, jobs([1, 2, 3]), WORKER)
    return tmp_path / "s"


DONE = [(f"x={x}", "done", {"y": x * x, "test_acc": x / 10}) for x in (1, 2, 3)]


def _damage(kind, path):
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    if kind == "deleted":
        path.unlink()
    elif kind == "emptied":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(os.urandom(3000))
    elif kind == "another schema":
        path.unlink()
        sqlite3.connect(path).execute("CREATE TABLE runs (id TEXT, state TEXT)").connection.commit()
    elif kind == "half a page":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("kind", ["deleted", "emptied", "garbage", "another schema", "half a page"])
def test_a_broken_index_changes_nothing_a_reader_sees_and_the_next_writer_rebuilds_it(store, kind):
    assert view(store) == DONE
    index = store / "index.sqlite"
    _damage(kind, index)
    damaged = index.read_bytes() if index.exists() else None
    assert view(store) == DONE  # the issue: a deleted or emptied index showed 0 done
    assert (index.read_bytes() if index.exists() else None) == damaged  # readers never write
    s = RunStore(store)
    summary = run_jobs(s, jobs([1, 2, 3, 4]), WORKER)
    assert summary.skipped == 3 and len(summary.completed) == 1  # nothing finished is redone
    rows = sqlite3.connect(index).execute("SELECT label, state FROM runs ORDER BY label").fetchall()
    assert rows == [("x=1", "done"), ("x=2", "done"), ("x=3", "done"), ("x=4", "done")]


def test_a_stale_index_is_repaired_from_the_folders(store):
    s = RunStore(store)
    ids = {r.label: r.id for r in s.records()}
    db = sqlite3.connect(store / "index.sqlite")
    db.execute("DELETE FROM runs WHERE label='x=1'")  # a finished run the index forgot
    db.execute("UPDATE runs SET state='pending', summary=NULL WHERE label='x=2'")
    db.commit()
    os.unlink(s.run_dir(ids["x=3"]) / "result.json")  # the index says done; the folder does not
    assert view(store) == [DONE[0], DONE[1], ("x=3", "pending", None)]
    assert RunStore(store).heal() == {"done": 2, "pending": 1}
    rows = dict(db.execute("SELECT label, state FROM runs").fetchall())
    assert rows == {"x=1": "done", "x=2": "done", "x=3": "pending"}


def test_runs_shows_no_stale_accuracy_beside_a_pending_run(store, capsys):
    s = RunStore(store)
    rid = next(r.id for r in s.records() if r.label == "x=3")
    os.unlink(s.run_dir(rid) / "result.json")
    assert main(["runs", str(store)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "x=3" in ln)
    assert line.split()[1] == "pending" and "%" not in line  # was "pending ... 30.0%"


def test_running_is_shown_only_while_a_writer_holds_the_lock(store):
    db = sqlite3.connect(store / "index.sqlite")
    db.execute("UPDATE runs SET state='running' WHERE label='x=3'")
    db.commit()
    os.unlink(store / "runs" / RunStore(store).get(db.execute(
        "SELECT id FROM runs WHERE label='x=3'").fetchone()[0]).id / "result.json")
    assert view(store)[2][1] == "pending"  # a killed sweep's leftover
    lock = StoreLock(store / "store.lock")
    lock.acquire()
    try:
        assert view(store)[2][1] == "running"
    finally:
        lock.release()


def test_a_damaged_result_is_one_line_for_readers_and_redone_by_the_sweep(store):
    s = RunStore(store)
    rid = next(r.id for r in s.records() if r.label == "x=2")
    (s.run_dir(rid) / "result.json").write_text("{}")
    with pytest.raises(PosencError, match="corrupt"):
        s.result(rid)
    summary = run_jobs(s, jobs([1, 2, 3]), WORKER)
    assert summary.completed == [rid] and summary.skipped == 2
    assert s.result(rid)["summary"]["y"] == 4


@pytest.mark.parametrize("content,says", [
    ('{"format": "1"}', "corrupt"), ('{"format": 1.5}', "corrupt"), ('{"format": true}', "corrupt"),
    ('{"format": -1}', "corrupt"), ('{"format": [1]}', "corrupt"), ('{"form": 1}', "corrupt"),
    ("[1]", "corrupt"), ("\xff", "corrupt"), ('{"format": 99}', "newer posenc"),
])
def test_store_marker_malformed_is_corrupt_not_newer(tmp_path, content, says):
    RunStore(tmp_path / "s")
    (tmp_path / "s" / "posenc-store.json").write_text(content, encoding="latin-1")
    with pytest.raises(PosencError, match=says):
        RunStore(tmp_path / "s")


def test_threads_zero_is_refused_by_the_sweep(tmp_path):
    with pytest.raises(PosencError, match="--threads must be a positive integer"):
        run_jobs(RunStore(tmp_path / "s"), jobs([1]), WORKER, threads=0)


# -- one writer per store: real second processes ----------------------------------------------

HOLDER = f"""
import sys; sys.path.insert(0, {str(HERE)!r})
from posenc.empirical.pipeline.store import RunStore
from posenc.empirical.pipeline.sweep import run_jobs
from test_store_heal import jobs, WORKER
store, hold = sys.argv[1], sys.argv[2]
wait = len(sys.argv) > 3
s = run_jobs(RunStore(store), jobs([7], hold=hold), WORKER, wait=wait,
             on_wait=lambda who: print("waiting for", who, flush=True))
print("finished", len(s.completed), flush=True)
"""


def _start(*args):
    return subprocess.Popen([sys.executable, "-c", HOLDER, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _until(cond, proc, what, limit=120):
    deadline = time.monotonic() + limit
    while not cond():
        if proc.poll() is not None:
            pytest.fail(f"{what}: the process ended early: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: gave up after {limit} s")
        time.sleep(0.05)


def test_a_second_writer_is_refused_naming_the_holder_and_a_killed_holder_blocks_nobody(
        store, tmp_path):
    holder = _start(store, tmp_path / "never")
    try:
        # the holder is inside its sweep (its staging folder exists) and so holds the lock
        _until(lambda: any((store / "staging").glob("*")), holder, "holder start")
        second = subprocess.run([sys.executable, "-m", "posenc", "reproduce", "--preset", "smoke",
                                 "--roles", "rope", "--tasks", "distance", "--seeds", "1",
                                 "--no-theory", "--out", str(store)],
                                capture_output=True, text=True, timeout=300)
        assert second.returncode == 2, second.stderr
        assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
        assert f"in use by another writer (PID {holder.pid})" in second.stderr
        reader = subprocess.run([sys.executable, "-m", "posenc", "runs", str(store)],
                                capture_output=True, text=True, timeout=300)
        assert reader.returncode == 0, reader.stderr
        assert "3 done, 0 pending, 1 running, 0 failed" in reader.stdout
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    lock = StoreLock(store / "store.lock")
    lock.acquire()  # wait=False: raises if the dead holder still blocked it
    lock.release()
    assert "0 running" in subprocess.run([sys.executable, "-m", "posenc", "runs", str(store)],
                                         capture_output=True, text=True).stdout


def test_a_second_writer_with_wait_runs_after_the_first(store, tmp_path):
    go = tmp_path / "go"
    first = _start(store, go)
    try:
        _until(lambda: any((store / "staging").glob("*")), first, "first writer start")
        waiter = _start(store, go, "--wait")
        line = waiter.stdout.readline()
        assert line.startswith(f"waiting for PID {first.pid}"), (line, waiter.stderr.read())
        go.write_text("")  # let the first finish; the waiter then takes the store
        assert first.wait(timeout=300) == 0 and "finished 1" in first.stdout.read()
        assert waiter.wait(timeout=300) == 0
        assert "finished 0" in waiter.stdout.read()  # x=7 was done by the first: skipped
    finally:
        for p in (first, locals().get("waiter")):
            if p is not None and p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
