"""The results store and the sweep runner, with a trivial worker (no training)."""

import json
import os
import sqlite3

import pytest

from posenc.empirical.pipeline.store import RunStore, run_id
from posenc.empirical.pipeline.sweep import Job, run_jobs
from posenc.errors import PosencError

CALLS = []


def square_worker(config, folder, threads):
    """A stand-in for training: writes a file and returns a result."""
    if config.get("explode"):
        raise RuntimeError("boom")
    with open(os.path.join(folder, "metrics.jsonl"), "w") as fh:
        fh.write(json.dumps({"x": config["x"]}) + "\n")
    CALLS.append(config["x"])
    return {"summary": {"y": config["x"] ** 2}}


WORKER = f"{__name__}:square_worker"


def jobs(xs):
    return [Job(config={"x": x}, kind="toy", label=f"x={x}") for x in xs]


def test_run_id_is_content_addressed():
    assert run_id({"a": 1, "b": [1, 2]}) == run_id({"b": [1, 2], "a": 1})
    assert run_id({"a": 1}) != run_id({"a": 2})


def test_sweep_runs_each_job_once_and_skips_finished(tmp_path):
    store = RunStore(tmp_path / "s")
    CALLS.clear()
    s1 = run_jobs(store, jobs([1, 2, 3]), WORKER)
    assert sorted(CALLS) == [1, 2, 3] and len(s1.completed) == 3
    s2 = run_jobs(store, jobs([1, 2, 3, 4]), WORKER)
    assert sorted(CALLS) == [1, 2, 3, 4] and s2.skipped == 3
    for rec in store.records():
        assert rec.state == "done"
        assert store.result(rec.id)["summary"]["y"] == rec.config["x"] ** 2
        assert (store.run_dir(rec.id) / "metrics.jsonl").is_file()
        assert json.loads((store.run_dir(rec.id) / "config.json").read_text()) == rec.config


def test_a_failing_run_is_recorded_and_redone(tmp_path):
    store = RunStore(tmp_path / "s")
    s = run_jobs(store, jobs([1]) + [Job({"x": 0, "explode": True}, "toy", "bad")], WORKER)
    assert len(s.failed) == 1 and "boom" in next(iter(s.failed.values()))
    states = {r.label: r.state for r in store.records()}
    assert states == {"x=1": "done", "bad": "failed"}
    s2 = run_jobs(store, [Job({"x": 0, "explode": True}, "toy", "bad")], WORKER)
    assert len(s2.failed) == 1 and s2.skipped == 0


def test_reconcile_resets_unfinished_runs(tmp_path):
    store = RunStore(tmp_path / "s")
    run_jobs(store, jobs([1, 2]), WORKER)
    recs = {r.config["x"]: r.id for r in store.records()}
    os.unlink(store.run_dir(recs[2]) / "result.json")  # as if killed before the commit
    assert store.reconcile() == {"done": 0, "pending": 1}
    CALLS.clear()
    run_jobs(store, jobs([1, 2]), WORKER)
    assert CALLS == [2]


def test_process_pool_backend_gives_the_same_results(tmp_path):
    a, b = RunStore(tmp_path / "a"), RunStore(tmp_path / "b")
    run_jobs(a, jobs([1, 2, 3]), WORKER, workers=1)
    run_jobs(b, jobs([1, 2, 3]), WORKER, workers=2)
    res = lambda s: {r.id: s.result(r.id) for r in s.records()}  # noqa: E731
    assert res(a) == res(b)


def test_newer_store_format_is_refused(tmp_path):
    RunStore(tmp_path / "s")
    (tmp_path / "s" / "posenc-store.json").write_text('{"format": 99}')
    with pytest.raises(PosencError, match="newer posenc"):
        RunStore(tmp_path / "s")


def test_unwritable_store_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(PosencError, match="not a folder"):
        RunStore(tmp_path / "file")
    with pytest.raises(PosencError, match="cannot write"):
        RunStore(tmp_path / "file" / "sub")


def test_bad_backend_and_ray_address(tmp_path):
    store = RunStore(tmp_path / "s")
    with pytest.raises(PosencError, match="unknown backend"):
        run_jobs(store, jobs([1]), WORKER, backend="slurm")
    pytest.importorskip("ray")
    with pytest.raises(PosencError, match="cannot reach the Ray cluster"):
        run_jobs(store, jobs([1]), WORKER, backend="ray", ray_address="127.0.0.1:9")


def test_index_is_plain_sqlite(tmp_path):
    store = RunStore(tmp_path / "s")
    run_jobs(store, jobs([5]), WORKER)
    rows = sqlite3.connect(tmp_path / "s" / "index.sqlite").execute(
        "SELECT state, label FROM runs").fetchall()
    assert rows == [("done", "x=5")]


@pytest.mark.ray_cluster
def test_ray_backend_gives_the_same_results_as_local(tmp_path, monkeypatch):
    """A real local Ray runtime runs the jobs and sends the files back."""
    ray = pytest.importorskip("ray")
    monkeypatch.setenv("PYTHONPATH", os.path.dirname(__file__))  # Ray workers import this module
    a, b = RunStore(tmp_path / "a"), RunStore(tmp_path / "b")
    run_jobs(a, jobs([1, 2]), WORKER)
    try:
        summary = run_jobs(b, jobs([1, 2]), WORKER, backend="ray", threads=1)
    finally:
        ray.shutdown()
    assert not summary.failed, summary.failed
    for rec in a.records():
        assert b.result(rec.id) == a.result(rec.id)
        assert (b.run_dir(rec.id) / "metrics.jsonl").read_text() == \
            (a.run_dir(rec.id) / "metrics.jsonl").read_text()
