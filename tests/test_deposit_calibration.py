"""scripts/deposit_calibration.py: each candidate runs paper-small's nine distance roles at the
scan regime's attention shape, reuses the scan's own runs of that regime, and changes the budget
only where its rung of the ladder says."""

import dataclasses
from pathlib import Path

import pytest
from script_loader import experiments_by_role_seed, load_script

from posenc.empirical.pipeline.store import run_id
from posenc.reproduction.plan import ReproductionPlan
from posenc.roles import DISTANCE, default_roles

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cal(monkeypatch):
    return load_script(monkeypatch, "deposit_calibration")


def test_the_roles_are_paper_smalls_distance_roles_with_the_scans_first(cal):
    assert set(cal.ROLES) == set(default_roles(DISTANCE)) and len(cal.ROLES) == 9
    assert cal.ROLES[:4] == cal.scan.ROLES


@pytest.mark.parametrize("candidate", ["h4x16-w64", "h4x16-w64-e30"])
def test_a_candidate_is_paper_small_at_its_regimes_shape(cal, candidate):
    exps = experiments_by_role_seed(cal.plans(candidate))
    assert set(exps) == {(r, s) for r in cal.ROLES for s in (1000, 1001)}
    small = experiments_by_role_seed([ReproductionPlan(preset="paper-small", seeds=2, first_seed=1000,
                                            distance_roles=cal.ROLES, count_roles=(),
                                            paper_code=True)])
    epochs = 30 if candidate.endswith("e30") else 15
    for key, e in exps.items():
        cfg, ref = e.train, small[key].train
        assert (cfg.model.n_heads, cfg.model.head_dim, cfg.model.d_model) == (4, 16, 64)
        if key[0] == "mla":
            assert (cfg.epochs, cfg.batch_size, cfg.patience) == \
                ((23, 32, 23) if epochs == 15 else (45, 32, 45))
            assert e.ablation_modes == ("zero", "mean", "latent-columns")
        else:
            assert (cfg.epochs, cfg.batch_size, cfg.patience) == (epochs, 16, epochs)
            assert e.ablation_modes == ("zero", "mean")
        # nothing else moves: the model's head count and the budget aside, paper-small's config
        budget = {"epochs": ref.epochs, "batch_size": ref.batch_size, "patience": ref.patience}
        assert dataclasses.replace(cfg.model, n_heads=ref.model.n_heads) == ref.model
        assert cfg.replace(model=ref.model, **budget) == ref
        assert e.ablation_examples == small[key].ablation_examples == 500
        assert (e.dynamics is None) == (small[key].dynamics is None)


def test_the_scans_runs_of_the_regime_are_the_candidates_at_the_scans_budget(cal):
    mine = {run_id(j.config) for p in cal.plans("h4x16-w64") for j in p.jobs()}
    scans = {run_id(j.config) for j in cal.scan.plan("h4x16-w64", 2).jobs()}
    assert scans < mine and len(mine) == 18
    longer = {run_id(j.config) for p in cal.plans("h4x16-w64-e30") for j in p.jobs()}
    assert not longer & mine


def test_each_candidate_has_its_store(cal, tmp_path):
    assert cal.store_of(tmp_path, "h4x16-w64") == tmp_path / "h4x16-w64"
    assert cal.store_of(tmp_path, "h4x16-w64-e30") == tmp_path / "h4x16-w64-e30"
    assert cal.LADDER == ("h4x16-w64", "h4x16-w64-e30")


@pytest.mark.parametrize("candidate", ["h4x16-w64", "h4x16-w64-e30"])
def test_the_committed_calibration_table_is_the_stores(cal, candidate):
    out = ROOT / "docs/figures/deposit-scan"
    committed = (out / f"calibration-{candidate}.md").read_text()
    assert committed == cal.ladder.table(cal.CALIBRATION, out, candidate)


def _run(role, seed, vals):
    """A finished fixed-budget run (every epoch run) with this validation history."""
    from posenc.empirical.pipeline.experiment_result import ExperimentResult
    from synthetic_runs import result

    n = len(vals)
    data = result("distance", role, seed, 0.92, stop=(n, n, n, n, max(vals)), chance=0.02,
                  bayes_ceiling=0.975)
    data["summary"]["early_stopping"]["fired"] = False
    data["ablation"]["zero"]["layers"][0]["drops"] = [0.1, 0.0, 0.0, 0.0]
    data["metrics"] = [{"epoch": i + 1, "val_acc": v, "train_acc": v} for i, v in enumerate(vals)]
    return ExperimentResult.of(data)


@pytest.mark.parametrize("last, met", [(0.899, "yes"), (0.900, "no")])
def test_the_table_judges_the_runs_by_the_trained_criterion(cal, monkeypatch, last, met):
    """A run whose validation accuracy rose 2 points or more over its last 2 epochs fails (a)."""
    runs = [_run(r, s, [0.5, 0.89, 0.9, 0.9]) for r in cal.ROLES for s in (1000, 1001)]
    runs[0] = _run(cal.ROLES[0], 1000, [0.5, 0.88, 0.88, last])
    monkeypatch.setattr(cal.ladder, "results", lambda ladder, out, candidate: runs)
    text = cal.ladder.table(cal.CALIBRATION, ROOT, "h4x16-w64")
    assert "18 of 18 runs finished" in text
    plateau = next(line for line in text.splitlines() if line.startswith("| (a) plateau"))
    assert plateau.endswith(f"| {met} |"), plateau
    assert f"| {cal.ROLES[0]} | 1000 | 92.0 |" in text


@pytest.mark.parametrize("candidate", ["h4x16-w64", "h4x16-w64-e30"])
def test_running_role_by_role_runs_exactly_the_candidates_runs(cal, monkeypatch, tmp_path,
                                                               candidate):
    """run() sweeps one role's seeds at a time, in run_order: together the very run ids of the
    candidate's plans, each once."""
    swept = []
    monkeypatch.setattr("posenc.reproduction.run_plan",
                        lambda p, store, **kw: swept.append(p))
    monkeypatch.setattr(cal.ladder, "run_order", lambda ladder, out, c: tuple(reversed(cal.ROLES)))
    cal.ladder.run(cal.CALIBRATION, tmp_path, candidate, workers=2)
    assert [p.distance_roles for p in swept] == [(r,) for r in reversed(cal.ROLES)]
    ids = [run_id(j.config) for p in swept for j in p.jobs()]
    assert sorted(ids) == sorted(run_id(j.config) for p in cal.plans(candidate) for j in p.jobs())


def test_a_later_rung_runs_the_roles_likeliest_to_fail_first(cal, monkeypatch):
    """The first rung: MLA first; a later one: by the largest 2-epoch rise on the rung below,
    largest first, a role without a finished run there before any."""
    assert cal.ladder.run_order(cal.CALIBRATION, ROOT, "h4x16-w64")[0] == "mla"
    rises = {r: 0.01 * i for i, r in enumerate(cal.ROLES)}
    runs = [_run(r, s, [0.5, 0.8, 0.8 + rises[r] / 2, 0.8 + rises[r]])
            for r in cal.ROLES[1:] for s in (1000, 1001)]
    monkeypatch.setattr(cal.ladder, "results", lambda ladder, out, candidate: runs)
    order = cal.ladder.run_order(cal.CALIBRATION, ROOT, "h4x16-w64-e30")
    assert order == (cal.ROLES[0],) + tuple(reversed(cal.ROLES[1:]))
