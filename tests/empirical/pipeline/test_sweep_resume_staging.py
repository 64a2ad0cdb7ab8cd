"""A sweep that ended mid-run hands the run's staging folder to its next attempt when that folder
holds the file the worker resumes from (``resume_from``); such a folder of an unfinished run the
sweep does not have stays for the plan that has it (a run the store holds: a config no plan ever
added, e.g. one whose id a changed setting retired, is removed); every other leftover is removed.  Toy
worker here; the end-to-end version with real training (a SIGKILLed ``posenc reproduce``) is in
tests/report/test_report.py."""

import os
from pathlib import Path

import pytest

from posenc.empirical.pipeline.store import RunStore, run_id
from posenc.empirical.pipeline.sweep import Job, run_jobs


def listing_worker(config, folder, threads):
    """Reports what its folder held when it was handed over, and the resume file's content."""
    held = sorted(p.name for p in Path(folder).iterdir())
    resume = Path(folder, "resume.bin")
    return {"summary": {"held": held,
                        "resume": resume.read_text() if resume.is_file() else None,
                        "test_acc": config["x"] / 10}}


WORKER = f"{__name__}:listing_worker"


def jobs(xs):
    return [Job(config={"x": x}, kind="toy", label=f"x={x}") for x in xs]


def leftover(store_dir: Path, x: int, suffix: str, files: dict[str, str], age_s: float = 0.0) -> Path:
    """A staging folder as an ended sweep leaves it for the run of ``x``."""
    folder = store_dir / "staging" / f"{run_id({'x': x})}.{suffix}"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
        if age_s:
            t = os.stat(folder / name).st_mtime - age_s
            os.utime(folder / name, (t, t))
    return folder


@pytest.mark.parametrize("workers", [1, 2])
def test_a_staging_folder_holding_the_resume_file_is_handed_to_the_same_run(tmp_path, workers):
    s = RunStore(tmp_path / "s")
    run_jobs(s, jobs([1]), WORKER)                          # x=1 finished
    root = tmp_path / "s"
    leftover(root, 1, "aaaa0001", {"resume.bin": "of a finished run"})
    leftover(root, 2, "aaaa0002", {"resume.bin": "older", "partial.txt": "old"}, age_s=60)
    leftover(root, 2, "aaaa0003", {"resume.bin": "newest", "partial.txt": "new"})
    leftover(root, 3, "aaaa0004", {"partial.txt": "no resume file"})
    s.add({"x": 9}, "toy", "x=9")                           # another plan's, pending
    leftover(root, 9, "aaaa0005", {"resume.bin": "a run this sweep does not have"})
    leftover(root, 8, "aaaa0006", {"resume.bin": "a run the store does not hold"})
    (root / "staging" / "stray-file").write_text("x")

    summary = run_jobs(s, jobs([1, 2, 3]), WORKER, workers=workers, resume_from="resume.bin")

    rid2, rid3 = run_id({"x": 2}), run_id({"x": 3})
    assert summary.skipped == 1 and sorted(summary.completed) == sorted([rid2, rid3])
    assert summary.resumed == [rid2]
    two, three = s.result(rid2)["summary"], s.result(rid3)["summary"]
    # the newest attempt's files, besides the config.json and run.json every staging folder gets
    assert two["resume"] == "newest" and two["held"] == sorted(
        ["config.json", "run.json", "partial.txt", "resume.bin"])
    assert three["resume"] is None and three["held"] == ["config.json", "run.json"]
    # only the unfinished run of another plan is left (not the run the store never held)
    assert [p.name for p in (root / "staging").iterdir()] == [f"{run_id({'x': 9})}.aaaa0005"]
    assert s.result(run_id({"x": 1}))["summary"]["held"] == ["config.json", "run.json"]


def test_a_sweep_of_another_plan_into_the_store_keeps_a_run_in_progress(tmp_path):
    """Two plans share a store (the deposit calibration's MLA plan and its other roles): a sweep
    of the first, with nothing to run, leaves the second's stopped run for it to resume."""
    s = RunStore(tmp_path / "s")
    run_jobs(s, jobs([1]), WORKER)
    s.add({"x": 2}, "toy", "x=2")                           # the other plan's earlier sweep
    leftover(tmp_path / "s", 2, "aaaa0002", {"resume.bin": "epoch 10"})
    assert run_jobs(s, jobs([1]), WORKER, resume_from="resume.bin").skipped == 1
    summary = run_jobs(s, jobs([2]), WORKER, resume_from="resume.bin")
    assert summary.resumed == [run_id({"x": 2})]
    assert s.result(run_id({"x": 2}))["summary"]["resume"] == "epoch 10"
    assert not (tmp_path / "s" / "staging").exists()


def test_without_resume_from_every_leftover_is_removed(tmp_path):
    s = RunStore(tmp_path / "s")
    leftover(tmp_path / "s", 2, "aaaa0002", {"resume.bin": "earlier"})
    summary = run_jobs(s, jobs([2]), WORKER)
    assert summary.resumed == []
    assert s.result(run_id({"x": 2}))["summary"]["held"] == ["config.json", "run.json"]
