"""A seed-batched group's seeds as ordinary run folders (posenc.empirical.training.group_folders)
and the sweep's group worker (posenc.empirical.pipeline.experiment.experiment_group_worker):
each seed's folder is the finished run train() would have written -- train() skips it, load_run
reads it, its optimiser state is its single run's, its trace is train.py's -- and the worker's
results are the single worker's up to float rounding."""

import math

import pytest
import torch

from posenc.empirical.config import preset
from posenc.empirical.pipeline.experiment import (ExperimentConfig, experiment_group_worker,
                                                  experiment_worker)
from posenc.empirical.training.runs import CHECKPOINT, check_resumable, load_run, read_checkpoint
from posenc.empirical.training.trace import read_trace
from posenc.empirical.training.train import make_optimizer, train
from posenc.errors import PosencError

SEEDS = (3, 4)
# float32: the group and the single run sum the same products in another order (batched vs
# single GEMMs, one flat norm vs per-parameter norms), ~1e-7 relative per operation; 12 AdamW
# steps of lr <= 1e-3 move a weight by at most ~1e-2 in all, so rounding differences stay
# orders below 1e-4, while a wrong batch, seed, lr or step moves weights by ~1e-3 or more.
TOL = 1e-4


def _exps(pe="rope", seeds=SEEDS, **kw):
    over = {"task.n_samples": 600, "epochs": 2, **kw}
    return [ExperimentConfig(train=preset("smoke", pe=pe, seed=s, **over), ablation_examples=40,
                             probe_examples=40, tags={"role": pe}) for s in seeds]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The group worker and the single worker on the same two experiments (with patience: the
    kept weights are the best-validation ones)."""
    root = tmp_path_factory.mktemp("group")
    exps = _exps(patience=1, epochs=5)  # seed 3 stops after epoch 2, seed 4 trains all 5
    dicts = [e.to_dict() for e in exps]
    g_dirs = [str(root / f"g{s}") for s in SEEDS]
    s_dirs = [str(root / f"s{s}") for s in SEEDS]
    torch.set_num_threads(1)
    group = experiment_group_worker(dicts, g_dirs, 1)
    single = [experiment_worker(d, f, 1) for d, f in zip(dicts, s_dirs)]
    return exps, group, single, g_dirs, s_dirs


def test_the_group_workers_results_are_the_single_workers(pair):
    exps, group, single, _, _ = pair
    for g, s in zip(group, single):
        assert set(g) == set(s)
        assert set(g["summary"]) == set(s["summary"]) | {"seed_group"}
        assert g["summary"]["seed_group"]["seeds"] == len(SEEDS)
        for key in ("task", "pe", "seed", "epochs", "n_params", "n_test", "chance", "length_rate"):
            assert g["summary"][key] == s["summary"][key], key
        assert g["summary"]["early_stopping"] == s["summary"]["early_stopping"]
        assert len(g["metrics"]) == len(s["metrics"])
        for a, b in zip(g["metrics"], s["metrics"]):
            assert set(a) == set(b)
            for k in a:
                assert a[k] == pytest.approx(b[k], abs=TOL), k
        for mode in g["ablation"]:  # the same model -> the same head ablation table
            ga, sa = g["ablation"][mode], s["ablation"][mode]
            assert ga["baseline_acc"] == pytest.approx(sa["baseline_acc"], abs=TOL)
        assert g["trace"]["steps"] == s["trace"]["steps"]
        assert g["summary"]["phase_seconds"]["training"] > 0


def test_the_seeds_stop_at_their_own_epochs_and_share_the_time_by_steps(pair):
    exps, group, _, _, _ = pair
    stops = [g["summary"]["early_stopping"] for g in group]
    assert [s["stopped_epoch"] for s in stops] == [2, 5]  # one stopped early, one at the max
    assert stops[0]["stopped_early"] and not stops[1]["stopped_early"]
    info = [g["summary"]["seed_group"] for g in group]
    assert all(i["members"] == list(SEEDS) and i["seeds"] == 2 for i in info)
    shares = [g["summary"]["seconds"] for g in group]
    assert sum(shares) == pytest.approx(info[0]["seconds"])
    assert shares[0] / shares[1] == pytest.approx(2 / 5)  # in proportion to the steps trained


def test_each_folder_is_a_finished_ordinary_run(pair):
    exps, _, _, g_dirs, s_dirs = pair
    for exp, gd, sd in zip(exps, g_dirs, s_dirs):
        cfg = exp.train
        res = train(cfg, gd, progress=False)  # finds it finished: nothing trains
        assert res.skipped
        run = load_run(gd, expected=cfg)
        ref = load_run(sd, expected=cfg)
        for k, v in ref.model.state_dict().items():
            torch.testing.assert_close(run.model.state_dict()[k], v, atol=TOL, rtol=0)
        ckpt = read_checkpoint(f"{gd}/{CHECKPOINT}")
        check_resumable(ckpt, gd)
        assert ckpt["best_epoch"] == read_checkpoint(f"{sd}/{CHECKPOINT}")["best_epoch"]


def test_the_optimiser_state_is_the_single_runs_in_torchs_layout(pair):
    exps, _, _, g_dirs, s_dirs = pair
    for exp, gd, sd in zip(exps, g_dirs, s_dirs):
        got = read_checkpoint(f"{gd}/{CHECKPOINT}")["optimizer"]
        want = read_checkpoint(f"{sd}/{CHECKPOINT}")["optimizer"]
        assert got["state"].keys() == want["state"].keys()
        for i in want["state"]:
            for k in ("exp_avg", "exp_avg_sq"):
                torch.testing.assert_close(got["state"][i][k], want["state"][i][k], atol=TOL, rtol=0)
            assert float(got["state"][i]["step"]) == float(want["state"][i]["step"])
        assert got["param_groups"][0]["lr"] == pytest.approx(want["param_groups"][0]["lr"])
        # it loads into the single model's optimiser, as a resume would load it
        run = load_run(gd, expected=exp.train)
        make_optimizer(run.model, exp.train).load_state_dict(got)


def test_the_trace_is_train_pys(pair):
    exps, _, _, g_dirs, s_dirs = pair
    for exp, gd, sd in zip(exps, g_dirs, s_dirs):
        gh, ge = read_trace(gd, exp.train.run_id())
        sh, se = read_trace(sd, exp.train.run_id())
        assert gh["steps_per_epoch"] == sh["steps_per_epoch"]
        assert [e["epoch"] for e in ge] == [e["epoch"] for e in se]
        for a, b in zip(ge, se):
            assert a["acc"] == b["acc"]
            assert a["loss"] == pytest.approx(b["loss"], abs=TOL)
            assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-3)


def test_a_learned_table_records_its_magnitudes_per_epoch(tmp_path):
    exps = _exps("relative_bias:mode=table", seeds=(1, 2), epochs=1)
    folders = [str(tmp_path / str(i)) for i in range(2)]
    out = experiment_group_worker([e.to_dict() for e in exps], folders, 1)
    for exp, folder, res in zip(exps, folders, out):
        header, epochs = read_trace(folder, exp.train.run_id())
        assert header["initial_tables"] is not None and "tables" in epochs[0]
        assert math.isfinite(res["trace"]["tables"]["log_attenuation"])
    # the two seeds start from their own initialisations
    a, b = (read_trace(f, e.train.run_id())[0]["initial_tables"] for f, e in zip(folders, exps))
    assert a != b


def test_the_group_worker_refuses_what_it_cannot_train(tmp_path):
    exps = _exps()
    dicts = [e.to_dict() for e in exps]
    with pytest.raises(PosencError, match="one folder per config"):
        experiment_group_worker(dicts, [str(tmp_path / "a")], 1)
    other = _exps(seeds=(5,), epochs=3)[0].to_dict()
    with pytest.raises(PosencError, match="differ only in their seed"):
        experiment_group_worker([dicts[0], other], [str(tmp_path / "a"), str(tmp_path / "b")], 1)
    from posenc.empirical.analysis.dynamics import DynamicsConfig
    dyn = exps[0].replace(dynamics=DynamicsConfig().to_dict()).to_dict()
    with pytest.raises(PosencError, match="trains alone"):
        experiment_group_worker([dyn], [str(tmp_path / "a")], 1)


def test_recording_the_trace_does_not_change_a_dropout_group(tmp_path):
    """The trace builds a single model per epoch (an initialisation); the group's dropout masks
    come from torch's RNG, so the trace must not draw from it."""
    from posenc.empirical.training.seed_group import train_group
    cfgs = [e.train for e in _exps(**{"model.dropout": 0.1}, epochs=2)]
    plain = train_group(cfgs)
    traced = train_group(cfgs, trace_dirs=[str(tmp_path / "a"), str(tmp_path / "b")])
    for a, b in zip(plain, traced):
        for k in a.state_dict:
            assert torch.equal(a.state_dict[k], b.state_dict[k]), k


def test_a_seed_whose_analysis_fails_fails_alone(tmp_path, monkeypatch):
    from posenc.empirical.pipeline import experiment
    from posenc.empirical.pipeline.sweep import FAILED
    real = experiment.measure

    def measure(exp, cfg, folder, res, dyn=None):
        if cfg.seed == SEEDS[0]:
            raise RuntimeError("probe exploded")
        return real(exp, cfg, folder, res, dyn)
    monkeypatch.setattr(experiment, "measure", measure)
    exps = _exps(epochs=1)
    out = experiment_group_worker([e.to_dict() for e in exps],
                                  [str(tmp_path / "a"), str(tmp_path / "b")], 1)
    assert FAILED in out[0] and "probe exploded" in out[0][FAILED]
    assert out[1]["summary"]["seed"] == SEEDS[1] and FAILED not in out[1]


def test_a_group_that_cannot_fit_in_memory_is_refused_before_training(monkeypatch):
    from posenc import limits
    from posenc.empirical.training.seed_group import train_group
    monkeypatch.setattr(limits, "available_memory", lambda: 1e6)
    with pytest.raises(PosencError, match="a seed group of 2 runs"):
        train_group([e.train for e in _exps()])
