"""Seed groups in the sweep runner (posenc.empirical.pipeline.sweep): jobs with one group key run
as one call of the group worker, each still staged, committed, failed and skipped on its own;
with a trivial worker (no training)."""

import json
import os

import pytest

from posenc.empirical.pipeline.store import RunStore
from posenc.empirical.pipeline.sweep import Job, run_jobs, units
from posenc.errors import PosencError

CALLS = []


def single_worker(config, folder, threads):
    CALLS.append(("single", config["x"]))
    with open(os.path.join(folder, "out.json"), "w") as fh:
        json.dump({"x": config["x"]}, fh)
    return {"summary": {"y": config["x"] ** 2, "how": "single"}}


def group_worker(configs, folders, threads):
    CALLS.append(("group", tuple(c["x"] for c in configs)))
    if any(c.get("explode") for c in configs):
        raise RuntimeError("group boom")
    for c, f in zip(configs, folders):
        with open(os.path.join(f, "out.json"), "w") as fh:
            json.dump({"x": c["x"]}, fh)
    return [{"summary": {"y": c["x"] ** 2, "how": "group"}} for c in configs]


def half_worker(configs, folders, threads):
    """The first job's analysis failed, the others landed."""
    from posenc.empirical.pipeline.sweep import FAILED
    out = group_worker(configs, folders, threads)
    out[0] = {FAILED: "RuntimeError: probe exploded"}
    return out


def short_worker(configs, folders, threads):
    return [{"summary": {}}]  # one result for several configs: a broken group worker


SINGLE, GROUP, SHORT, HALF = (f"{__name__}:{n}" for n in ("single_worker", "group_worker",
                                                          "short_worker", "half_worker"))


def job(x, group=None, **extra):
    return Job(config={"x": x, **extra}, kind="toy", label=f"x={x}", group=group)


def plan():
    return [job(1, "a"), job(2, "b"), job(3, "a"), job(4), job(5, "b")]


def test_units_gather_a_group_in_the_order_of_its_first_job():
    todo = [(str(j.config["x"]), j) for j in plan()]
    got = [[rid for rid, _ in u] for u in units(todo, grouped=True)]
    assert got == [["1", "3"], ["2", "5"], ["4"]]
    assert [[rid for rid, _ in u] for u in units(todo, grouped=False)] == [["1"], ["2"], ["3"],
                                                                           ["4"], ["5"]]


@pytest.mark.parametrize("workers", [1, 2])
def test_grouped_jobs_run_in_one_call_and_land_as_ordinary_runs(tmp_path, workers):
    store = RunStore(tmp_path / "s")
    CALLS.clear()
    s = run_jobs(store, plan(), SINGLE, workers=workers, group_worker=GROUP)
    assert len(s.completed) == 5 and not s.failed
    if workers == 1:  # (the pool's calls happen in other processes)
        assert sorted(CALLS) == [("group", (1, 3)), ("group", (2, 5)), ("single", 4)]
    for rec in store.records():
        x = rec.config["x"]
        assert rec.state == "done"
        assert store.result(rec.id)["summary"] == {"y": x * x, "how": "single" if x == 4 else "group"}
        assert json.loads((store.run_dir(rec.id) / "out.json").read_text()) == {"x": x}
    again = run_jobs(store, plan(), SINGLE, workers=workers, group_worker=GROUP)
    assert again.skipped == 5 and not again.completed


def test_without_a_group_worker_group_keys_are_ignored(tmp_path):
    store = RunStore(tmp_path / "s")
    CALLS.clear()
    run_jobs(store, plan(), SINGLE)
    assert sorted(CALLS) == [("single", x) for x in range(1, 6)]


def test_only_the_unfinished_seeds_of_a_group_run_again(tmp_path):
    store = RunStore(tmp_path / "s")
    run_jobs(store, [job(1, "a")], SINGLE, group_worker=GROUP)
    CALLS.clear()
    s = run_jobs(store, [job(1, "a"), job(3, "a")], SINGLE, group_worker=GROUP)
    assert CALLS == [("group", (3,))] and s.skipped == 1


def test_a_failing_group_fails_each_of_its_jobs_and_no_other(tmp_path):
    store = RunStore(tmp_path / "s")
    s = run_jobs(store, [job(1, "a", explode=True), job(3, "a"), job(4)], SINGLE,
                 group_worker=GROUP)
    assert len(s.failed) == 2 and all("group boom" in m for m in s.failed.values())
    states = {r.config["x"]: r.state for r in store.records()}
    assert states == {1: "failed", 3: "failed", 4: "done"}


def test_a_group_worker_returning_the_wrong_number_of_results_fails_the_group(tmp_path):
    store = RunStore(tmp_path / "s")
    s = run_jobs(store, [job(1, "a"), job(3, "a")], SINGLE, group_worker=SHORT)
    assert len(s.failed) == 2 and all("returned" in m for m in s.failed.values())


def test_groups_are_refused_on_ray(tmp_path):
    with pytest.raises(PosencError, match="local backend"):
        run_jobs(RunStore(tmp_path / "s"), plan(), SINGLE, backend="ray", group_worker=GROUP)


def test_a_failed_marker_fails_its_job_alone(tmp_path):
    store = RunStore(tmp_path / "s")
    s = run_jobs(store, [job(1, "a"), job(3, "a")], SINGLE, group_worker=HALF)
    assert list(s.failed.values()) == ["RuntimeError: probe exploded"] and len(s.completed) == 1
    states = {r.config["x"]: r.state for r in store.records()}
    assert states == {1: "failed", 3: "done"}
