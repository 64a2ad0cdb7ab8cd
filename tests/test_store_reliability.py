"""The results store end to end with real smoke training.

A deleted, emptied or garbage index heals for ``runs``, ``report`` and ``reproduce``; a SIGKILL of
``posenc reproduce`` with two workers leaves no process behind; a run that fails makes
``reproduce`` exit 2 with the report still written; a full disk or read-only folder in ``report``
and ``reproduce`` is one line with no partial file; a run folder that lacks result.json,
config.json or run.json is refused by ``reproduce`` and ``report`` naming the folder and the file
(``--retrain-incomplete`` trains it again), and ``report`` names the unfinished runs it leaves
out; Ctrl-C (SIGINT to the process group) of a two-worker sweep exits within seconds, and the
store resumed with the printed command equals an uninterrupted one.
"""

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import posenc.atomic
from posenc.cli import main

pytestmark = pytest.mark.slow
ARGS = ["--preset", "smoke", "--roles", "rope,nope", "--tasks", "distance", "--seeds", "1",
        "--no-theory"]


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "posenc", *map(str, args)], capture_output=True,
                          text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("rel") / "store"
    proc = cli("reproduce", *ARGS, "--workers", "1", "--out", out)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture
def store(tmp_path, reference):
    return shutil.copytree(reference, tmp_path / "store")


def _one_line(proc, *matches):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert any(m in proc.stderr for m in matches), proc.stderr


@pytest.mark.parametrize("kind", ["deleted", "emptied", "garbage"])
def test_runs_report_and_reproduce_survive_a_broken_index(store, reference, kind):
    index = store / "index.sqlite"
    for side in ("-wal", "-shm"):
        Path(f"{index}{side}").unlink(missing_ok=True)
    {"deleted": index.unlink, "emptied": lambda: index.write_bytes(b""),
     "garbage": lambda: index.write_bytes(b"\x13garbage" * 500)}[kind]()
    listing = cli("runs", store)
    assert listing.returncode == 0, listing.stderr
    assert "2 done, 0 pending, 0 running, 0 failed" in listing.stdout  # was "0 done"
    expected = (reference / "report" / "report.md").read_text()
    shutil.rmtree(store / "report")
    rebuilt = cli("report", store, "--no-theory")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (store / "report" / "report.md").read_text() == expected
    again = cli("reproduce", *ARGS, "--out", store)
    assert again.returncode == 0, again.stderr
    assert "ran 0, skipped 2 finished, failed 0" in again.stdout  # was a one-run report
    assert (store / "report" / "report.md").read_text() == expected
    import sqlite3
    assert sqlite3.connect(index).execute("SELECT count(*) FROM runs WHERE state='done'"
                                          ).fetchone() == (2,)


def test_reproduce_exits_2_when_a_run_failed_and_still_writes_the_report(store, monkeypatch, capsys):
    import posenc.empirical.pipeline.experiment as experiment
    real = experiment.experiment_worker

    def flaky(config, folder, threads):
        if config["tags"]["role"] == "alibi":
            raise RuntimeError("simulated crash in the alibi run")
        return real(config, folder, threads)
    monkeypatch.setattr(experiment, "experiment_worker", flaky)
    args = [a if a != "rope,nope" else "rope,nope,alibi" for a in ARGS]
    code = main(["reproduce", *args, "--workers", "1", "--out", str(store)])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "1 of 3 runs failed" in err, err
    assert "simulated crash in the alibi run" in out  # the failure is listed
    report = (store / "report" / "report.md").read_text()
    assert "2 runs" in report  # the finished runs' report


def _session(sid):
    """PIDs of live processes in session ``sid`` (zombies excluded)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text.rpartition(")")[2].split()
        if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            pids.append(int(stat.parent.name))
    return pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_a_two_worker_sweep_leaves_no_process(tmp_path):
    """The two workers (~380 MB each) and the resource tracker lived on under PID 1."""
    out = tmp_path / "s"
    proc = subprocess.Popen([sys.executable, "-m", "posenc", "reproduce", "--preset", "smoke",
                             "--roles", "rope", "--tasks", "distance", "--seeds", "2",
                             "--workers", "2", "--no-theory", "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        # both workers are training: each staging folder has its train_config.json
        while len(list((out / "staging").glob("*/train_config.json"))) < 2:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
        before = _session(proc.pid)
        assert len(before) >= 4, before  # the sweep, two workers, the resource tracker
        os.kill(proc.pid, signal.SIGKILL)  # the sweep alone, as a user's kill -9 would
        proc.wait()
        deadline = time.monotonic() + 60
        while _session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _session(proc.pid) == [], "orphans left behind"
    finally:
        for pid in _session(proc.pid):
            os.kill(pid, signal.SIGKILL)


def _no_space(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")


def _read_only(*a, **k):
    raise PermissionError(errno.EACCES, "Permission denied")


@pytest.mark.parametrize("fault", [("fsync", _no_space, "No space left"),
                                   ("tempfile.mkstemp", _read_only, "Permission denied")])
def test_report_and_reproduce_on_a_full_or_read_only_disk(store, tmp_path, monkeypatch, capsys, fault):
    where, fn, match = fault
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and "index" not in p.name}
    if where == "fsync":
        monkeypatch.setattr(posenc.atomic.os, "fsync", fn)
    else:
        monkeypatch.setattr(posenc.atomic.tempfile, "mkstemp", fn)
    for argv in (["report", str(store), "--no-theory"], ["reproduce", *ARGS, "--out", str(store)],
                 ["reproduce", *ARGS, "--out", str(tmp_path / "new")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and match in err and "Traceback" not in err, err
    after = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and "index" not in p.name}
    assert after.keys() - before.keys() <= {store / "store.lock"} and \
        all(after[p] == before[p] for p in before if p.name != "store.lock")
    assert not list(store.glob(".report.*")) and not list(store.glob("**/*.tmp"))


def _mount_tmpfs(path, options):
    path.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.decode().strip()}")


def test_a_real_read_only_store_and_a_real_full_disk(tmp_path, reference):
    ro = tmp_path / "ro"
    _mount_tmpfs(ro, "size=64m")
    try:
        shutil.copytree(reference, ro / "store")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        listing = cli("runs", ro / "store")
        assert listing.returncode == 0 and "2 done, 0 pending" in listing.stdout, listing.stderr
        _one_line(cli("report", ro / "store", "--no-theory"), "Read-only file system")
        _one_line(cli("reproduce", *ARGS, "--out", ro / "store"), "Read-only file system")
        _one_line(cli("train", "--preset", "smoke", "--out", ro / "run"), "Read-only file system")
    finally:
        subprocess.run(["umount", str(ro)])
    full = tmp_path / "full"
    _mount_tmpfs(full, "size=96k")
    try:
        _one_line(cli("train", "--preset", "smoke", "--epochs", "1", "--out", full / "run"),
                  "No space left")
        assert not [p for p in (full / "run").rglob("*") if p.name.endswith(".tmp")]
        # which write meets the full disk first depends on the bytes the failed train left
        # (its trace.jsonl): the OS's message, or SQLite's for the store's index
        _one_line(cli("reproduce", *ARGS, "--out", full / "s"), "No space left",
                  "database or disk is full")
    finally:
        subprocess.run(["umount", str(full)])


# -- committed stores: a run folder that lacks a file is refused, never retrained unasked ------

def _snapshot(root):
    return {p: p.read_bytes() for p in (root / "runs").rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", ["result.json", "config.json", "run.json"])
def test_reproduce_refuses_a_run_folder_that_lacks_a_file(store, name, capsys):
    """The probes: before, a missing result.json retrained the run over its committed files and
    a missing config.json or run.json was taken as finished."""
    folder = sorted((store / "runs").iterdir())[1]
    (folder / name).unlink()
    before = _snapshot(store)
    assert main(["reproduce", *ARGS, "--out", str(store)]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"({folder}) lacks {name}," in err and "--retrain-incomplete" in err, err
    assert _snapshot(store) == before and not (store / "staging").exists()
    assert "ran " not in out  # nothing trained


def test_retrain_incomplete_trains_the_run_again(store, reference, capsys):
    folder = sorted((store / "runs").iterdir())[1]
    (folder / "result.json").unlink()
    assert main(["reproduce", *ARGS, "--out", str(store), "--retrain-incomplete"]) == 0
    out = capsys.readouterr().out
    assert "ran 1, skipped 1 finished, failed 0" in out, out
    assert (folder / "result.json").is_file()
    assert (store / "report" / "report.md").read_text() == \
        (reference / "report" / "report.md").read_text()


def test_report_refuses_a_store_with_a_hole(store, capsys):
    """Before, ``report`` on a store with a run's result.json deleted used 1 of its 2 runs."""
    folder = sorted((store / "runs").iterdir())[0]
    (folder / "result.json").unlink()
    report = (store / "report" / "report.md").read_bytes()
    assert main(["report", str(store), "--no-theory"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"({folder}) lacks result.json," in err, err
    assert "no report was written" in err
    assert (store / "report" / "report.md").read_bytes() == report


def test_report_names_the_unfinished_runs_it_leaves_out(store, capsys):
    from posenc.reproduction.plan import ReproductionPlan
    from posenc.empirical.pipeline.store import RunStore
    job = ReproductionPlan.for_command("smoke", 1, roles=["alibi"], tasks=["distance"]).jobs()[0]
    RunStore(store).add(job.config, job.kind, job.label)  # planned, never finished
    assert main(["report", str(store), "--no-theory"]) == 0
    out = capsys.readouterr().out
    sentence = "Left out: 1 run of the store that has not finished (pending: distance/alibi/s0)"
    assert sentence in out and sentence in (store / "report" / "report.md").read_text(), out


# -- Ctrl-C ---------------------------------------------------------------------------------

#: three runs on two workers, trained long enough (16 epochs) to be stopped mid-run
SIGINT_ARGS = ["--preset", "smoke", "--roles", "rope,nope,alibi", "--tasks", "distance",
               "--seeds", "1", "--no-theory", "--set", "epochs=16", "--workers", "2"]
#: fields of a run's JSON files that time it (and a resumed run's record of its resumption)
TIMING = {"seconds", "cpu_seconds", "phase_seconds", "epoch_seconds", "created", "resumed"}


def _untimed(data):
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items() if k not in TIMING}
    if isinstance(data, list):
        return [_untimed(v) for v in data]
    return data


def _run_files(root):
    """Run id -> file name -> content (JSON files without their timing fields)."""
    import json
    runs = {}
    for folder in sorted((root / "runs").iterdir()):
        files = {}
        for path in sorted(folder.iterdir()):
            files[path.name] = _untimed(json.loads(path.read_text())) \
                if path.suffix == ".json" else path.read_bytes()
        runs[folder.name] = files
    return runs


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_a_two_worker_sweep_and_the_resumed_store_equals_an_uninterrupted_one(tmp_path):
    """Before, SIGINT to the process group stopped the two runs in flight and started two queued
    ones in their place, a second one changed nothing, and nothing was printed."""
    import json
    import shlex
    ref = tmp_path / "ref"
    proc = cli("reproduce", *SIGINT_ARGS, "--out", ref)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "int"
    proc = subprocess.Popen([sys.executable, "-m", "posenc", "reproduce", *SIGINT_ARGS, "--out",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        # both workers are training, each past its first checkpoint
        while len(list((out / "staging").glob("*/checkpoint.pt"))) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
        in_flight = sorted(p.name.partition(".")[0] for p in (out / "staging").iterdir())
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C does
        stdout, stderr = proc.communicate(timeout=60)
        seconds = time.monotonic() - t0
        print(f"SIGINT to exit: {seconds:.2f} s")
        assert proc.returncode == 130, (stdout, stderr)
        assert seconds < 10, seconds
        assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
        assert stderr.startswith("posenc: interrupted: 0 of 3 runs finished in ") and \
            "2 stopped mid-run" in stderr, stderr
        deadline = time.monotonic() + 30
        while _session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _session(proc.pid) == [], "a worker lived on"
        # no queued run started: the two in flight alone have folders, neither one committed
        assert sorted(p.name.partition(".")[0] for p in (out / "staging").iterdir()) == in_flight
        assert list((out / "runs").iterdir()) == []
    finally:
        for pid in _session(proc.pid):
            os.kill(pid, signal.SIGKILL)
    words = shlex.split(stderr.split("resume with: ", 1)[1])
    assert words[0] == "posenc"
    again = subprocess.run([sys.executable, "-m", *words], capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr
    assert "ran 3 (2 resumed from the checkpoint of a sweep that ended mid-run)" in again.stdout
    resumed = [json.loads((out / "runs" / rid / "result.json").read_text())["summary"]
               for rid in in_flight]
    assert all(s["resumed"]["from_epoch"] >= 1 for s in resumed)  # trained on, not from scratch
    assert _run_files(out) == _run_files(ref)  # the same runs, the same files, the same numbers
    assert (out / "report" / "report.md").read_text() == (ref / "report" / "report.md").read_text()
