"""Stores that travel (posenc.empirical.pipeline.kept_files): the sweep drops a run's checkpoint
and trace at its commit, skips a finished run stored without them, refuses, in one line naming
the folder and the file and before anything runs, a run folder that lacks a file a finished run
keeps (result.json, config.json, run.json, a kept file; with or without its checkpoint), and
trains it again only with ``retrain_incomplete``; a kept file counts in its plain or its
compressed form; with a stand-in experiment worker (no training)."""

import json
from pathlib import Path

import pytest

from posenc.empirical.pipeline.kept_files import dropped_files, kept_files, missing_file
from posenc.reproduction.plan import ReproductionPlan
from posenc.empirical.pipeline.store import RunStore, run_id
from posenc.empirical.pipeline.sweep import run_jobs
from posenc.empirical.training.runs import CHECKPOINT
from posenc.empirical.training.trace import TRACE
from posenc.errors import PosencError

CALLS = []
WORKER = f"{__name__}:fake_experiment_worker"


def fake_experiment_worker(config, folder, threads):
    """What the experiment worker leaves in a run folder, made up: a stand-in checkpoint too."""
    train = config["train"]
    CALLS.append(train["seed"])
    folder = Path(folder)
    for name in ("train_config.json", "train_summary.json", "ablation_zero.json", "probe.json"):
        (folder / name).write_text("{}\n")
    (folder / "metrics.jsonl").write_text('{"epoch": 1}\n')
    (folder / CHECKPOINT).write_bytes(b"weights")
    (folder / TRACE).write_text('{"kind": "header"}\n')
    summary = {"task": train["task"]["name"], "pe": train["model"]["pe"], "seed": train["seed"],
               "tags": config["tags"], "test_acc": 0.5}
    return {"summary": summary, "ablation": {"zero": {}}, "probe": {"probe_r2": {}}, "metrics": []}


def jobs():
    return ReproductionPlan.for_command("smoke", 2, roles=["nope"], tasks=["distance"]).jobs()


@pytest.fixture
def store(tmp_path):
    """Two finished runs, their checkpoints and traces dropped at the commit."""
    CALLS.clear()
    s = RunStore(tmp_path / "store")
    summary = run_jobs(s, jobs(), WORKER, drop=dropped_files())
    assert len(summary.completed) == 2 and CALLS == [0, 1]
    CALLS.clear()
    return s


def test_the_checkpoint_and_trace_are_dropped_at_the_commit_and_the_kept_files_stay(store):
    assert dropped_files() == (CHECKPOINT, TRACE)
    for job in jobs():
        folder = store.run_dir(run_id(job.config))
        assert not (folder / CHECKPOINT).exists() and not (folder / TRACE).exists()
        assert missing_file(folder, store.result(run_id(job.config))) is None
    assert kept_files(store.result(run_id(jobs()[0].config))) == [
        "result.json", "train_config.json", "train_summary.json", "metrics.jsonl",
        "ablation_zero.json", "probe.json"]


def test_without_drop_the_checkpoint_stays(tmp_path):
    s = RunStore(tmp_path / "kept")
    run_jobs(s, jobs()[:1], WORKER)
    assert (s.run_dir(run_id(jobs()[0].config)) / CHECKPOINT).read_bytes() == b"weights"


def test_a_finished_run_without_its_checkpoint_is_skipped(store):
    summary = run_jobs(store, jobs(), WORKER, drop=(CHECKPOINT,))
    assert summary.skipped == 2 and not summary.completed and CALLS == []


def _refused(store, *, retrain=False, plan=None):
    """The one line a sweep of ``plan`` (default: both runs) refuses the store with; checks that
    nothing ran, nothing of the store changed and the lock is free."""
    before = {p: p.read_bytes() for p in store.runs_dir.rglob("*") if p.is_file()}
    with pytest.raises(PosencError) as err:
        run_jobs(store, jobs() if plan is None else plan, WORKER, drop=(CHECKPOINT,),
                 retrain_incomplete=retrain)
    message = str(err.value)
    assert "\n" not in message and "--retrain-incomplete" in message, message
    assert CALLS == [] and before == {p: p.read_bytes() for p in store.runs_dir.rglob("*")
                                      if p.is_file()}
    assert not (store.root / "staging").exists() and not store.lock.busy()
    return message


@pytest.mark.parametrize("name", ["result.json", "config.json", "run.json", "ablation_zero.json"])
def test_a_run_folder_that_lacks_a_file_is_refused_naming_folder_and_file(store, name):
    """The probes: a committed run's result.json, config.json or run.json (or a kept file)
    deleted; before, a missing result.json retrained the run over its committed files, and a
    missing config.json or run.json was taken as finished."""
    second = store.run_dir(run_id(jobs()[1].config))
    (second / name).unlink()
    message = _refused(store)
    assert f"({second})" in message and f"lacks {name}," in message, message
    assert "distance/nope/s1" in message or name == "run.json" and second.name in message, message


def test_with_its_checkpoint_an_incomplete_run_is_still_refused(store):
    second = store.run_dir(run_id(jobs()[1].config))
    (second / "probe.json").unlink()
    (second / CHECKPOINT).write_bytes(b"weights")
    assert "lacks probe.json" in _refused(store)


@pytest.mark.parametrize("damage", ["{}", "not json", ""])
def test_a_damaged_result_is_refused_not_retrained(store, damage):
    second = store.run_dir(run_id(jobs()[1].config))
    (second / "result.json").write_text(damage)
    message = _refused(store)
    assert "distance/nope/s1" in message and "a readable result.json of its config" in message


def test_every_incomplete_folder_counts_and_the_first_is_named(store):
    first, second = (store.run_dir(run_id(j.config)) for j in jobs())
    (second / "ablation_zero.json").unlink()
    (first / "result.json").unlink()
    message = _refused(store)
    assert "distance/nope/s0" in message and "lacks result.json" in message
    assert "and 1 more incomplete run folder in" in message, message


@pytest.mark.parametrize("name", ["result.json", "config.json", "run.json", "probe.json"])
def test_retrain_incomplete_trains_the_run_again_and_its_folder_is_whole(store, name):
    second = store.run_dir(run_id(jobs()[1].config))
    (second / name).unlink()
    summary = run_jobs(store, jobs(), WORKER, drop=(CHECKPOINT,), retrain_incomplete=True)
    assert summary.skipped == 1 and CALLS == [1] and summary.completed == [second.name]
    assert missing_file(second, store.result(second.name)) is None
    assert (second / "config.json").is_file() and (second / "run.json").is_file()
    assert not (second / CHECKPOINT).exists()
    assert run_jobs(store, jobs(), WORKER, drop=(CHECKPOINT,)).skipped == 2  # whole again


def test_an_incomplete_run_outside_the_plan_is_refused_even_with_the_flag(store):
    second = store.run_dir(run_id(jobs()[1].config))
    (second / "result.json").unlink()
    message = _refused(store, retrain=True, plan=jobs()[:1])
    assert "distance/nope/s1" in message and "lacks result.json" in message


def test_a_stray_folder_without_config_is_refused(store):
    stray = store.runs_dir / "0123456789abcdef"
    stray.mkdir()
    (stray / "metrics.jsonl").write_text("{}\n")
    assert f"run 0123456789abcdef ({stray}) lacks config.json" in _refused(store)


def test_what_a_result_says_was_measured_decides_the_kept_files():
    diverged = {"summary": {}, "ablation": {}, "probe": None}
    assert kept_files(diverged) == ["result.json", "train_config.json", "train_summary.json",
                                    "metrics.jsonl"]
    recorded = {"summary": {}, "ablation": {"zero": {}, "mean": {}}, "dynamics": {"deposit": [0, 0]}}
    assert kept_files(recorded)[4:] == ["ablation_mean.json", "ablation_zero.json", "dynamics.jsonl"]
    assert json.dumps(kept_files({"summary": {}}))  # a result with no measurement at all


def test_a_kept_file_counts_plain_or_compressed(tmp_path):
    """A store written before keeps dynamics.jsonl; one written now dynamics.jsonl.gz."""
    recorded = {"summary": {}, "ablation": {}, "dynamics": {"deposit": [0, 0]}}
    for name in ("result.json", "train_config.json", "train_summary.json", "metrics.jsonl"):
        (tmp_path / name).write_text("{}\n")
    assert missing_file(tmp_path, recorded) == "dynamics.jsonl"
    (tmp_path / "dynamics.jsonl.gz").write_bytes(b"")
    assert missing_file(tmp_path, recorded) is None
    (tmp_path / "dynamics.jsonl.gz").unlink()
    (tmp_path / "dynamics.jsonl").write_text("{}\n")
    assert missing_file(tmp_path, recorded) is None
    (tmp_path / "metrics.jsonl").rename(tmp_path / "metrics.jsonl.gz")  # never written so
    assert missing_file(tmp_path, recorded) == "metrics.jsonl"
