"""scripts/count_calibration.py: the paper code's seven count roles at paper-small's count task
on seeds 1000-1001, the first rung the preset as it is, judged by the trained criterion's count
parts (a), (c) and (c')."""

import dataclasses

import pytest
from script_loader import experiments_by_role_seed, load_script

from posenc.empirical.pipeline.store import run_id
from posenc.reproduction.plan import ReproductionPlan


@pytest.fixture
def cal(monkeypatch):
    return load_script(monkeypatch, "count_calibration")


def test_the_first_rung_is_paper_smalls_count_sweep_of_the_codes_roles(cal):
    """The same run ids as `posenc reproduce --preset paper-small --tasks count --roles ...
    --first-seed 1000 --seeds 2 --paper-code`."""
    mine = {run_id(j.config) for p in cal.plans("paper-small") for j in p.jobs()}
    cli = ReproductionPlan.select("paper-small", 2, roles=list(cal.ROLES), tasks=["count"],
                                  first_seed=1000, paper_code=True)
    assert mine == {run_id(j.config) for j in cli.jobs()} and len(mine) == 14
    assert set(cal.ROLES) == {"nope", "absolute", "relative", "alibi", "rope", "absolute+rope",
                              "mla"}


@pytest.mark.parametrize("candidate", ["paper-small", "paper-small-e30"])
def test_a_candidate_changes_only_the_budget(cal, candidate):
    exps = experiments_by_role_seed(cal.plans(candidate))
    ref = experiments_by_role_seed(cal.plans("paper-small"))
    assert set(exps) == {(r, s) for r in cal.ROLES for s in (1000, 1001)}
    for key, e in exps.items():
        cfg = e.train
        assert cfg.task.name == "count" and cfg.task.seq_len == 120 and cfg.task.length == 128
        want = {"mla": (23, 32, 23) if candidate == "paper-small" else (45, 32, 45)}.get(
            key[0], (15, 16, 15) if candidate == "paper-small" else (30, 16, 30))
        assert (cfg.epochs, cfg.batch_size, cfg.patience) == want
        r = ref[key].train
        assert cfg.replace(epochs=r.epochs, batch_size=r.batch_size, patience=r.patience) == r
        assert dataclasses.replace(e, train=r) == ref[key]
    assert cal.store_of(cal.Path("/x"), candidate) == cal.Path("/x") / candidate


def _run(role, seed, acc, vals):
    from synthetic_runs import result

    from posenc.empirical.pipeline.experiment_result import ExperimentResult

    n = len(vals)
    data = result("count", role, seed, acc, stop=(n, n, n, n, max(vals)), chance=1 / 101,
                  bayes_ceiling=1.0)
    data["summary"]["early_stopping"]["fired"] = False
    data["ablation"]["zero"]["layers"][0]["drops"] = [0.1, 0.0, 0.0, 0.0]
    data["metrics"] = [{"epoch": i + 1, "val_acc": v, "train_acc": v} for i, v in enumerate(vals)]
    return ExperimentResult.of(data)


@pytest.mark.parametrize("top, met", [(0.979, "yes"), (0.98, "no")])
def test_the_table_reads_the_count_ceiling(cal, top, met):
    runs = [_run(r, s, 0.85, [0.5, 0.84, 0.85, 0.85]) for r in cal.ROLES for s in (1000, 1001)]
    runs[-2:] = [_run("mla", s, top, [0.5, top, top, top]) for s in (1000, 1001)]
    text = cal.ladder.table(cal.CALIBRATION, cal.Path("/nowhere"), "paper-small", found=runs)
    assert "14 of 14 runs finished" in text
    parts = [line for line in text.splitlines() if line.startswith("| (")]
    assert [p.split(" | ")[0] for p in parts] == ["| (a) plateau", "| (c) count",
                                                  "| (c') count ceiling"]
    assert parts[2].endswith(f"| {met} |"), parts[2]
    assert parts[0].endswith("| yes |") and parts[1].endswith("| yes |")


def test_running_role_by_role_runs_exactly_the_candidates_runs(cal, monkeypatch, tmp_path):
    """run() sweeps one role's two seeds at a time on the count task, MLA first on the first
    rung: together the very run ids of the candidate's plans, each once."""
    swept = []
    monkeypatch.setattr("posenc.reproduction.run_plan", lambda p, store, **kw: swept.append(p))
    cal.ladder.run(cal.CALIBRATION, tmp_path, "paper-small", workers=2)
    assert [p.count_roles for p in swept] == [(r,) for r in ("mla",) + cal.ROLES[:-1]]
    assert all(p.distance_roles == () and len(p.jobs()) == 2 for p in swept)
    ids = [run_id(j.config) for p in swept for j in p.jobs()]
    assert sorted(ids) == sorted(run_id(j.config) for p in cal.plans("paper-small")
                                 for j in p.jobs())
