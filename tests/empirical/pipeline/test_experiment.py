"""The reproduction's experiment worker and plan: dynamics recorded inside the experiment runs of
RoPE and ALiBi on the distance task (Sec. 6 verdicts), and nowhere else."""

import json

import pytest

from posenc.empirical.config import preset
from posenc.empirical.analysis.dynamics import DynamicsConfig, dynamics_file, read_dynamics_file
from posenc.empirical.pipeline.experiment import ExperimentConfig, experiment_worker
from posenc.reproduction.plan import DYNAMICS_ROLES, ReproductionPlan
from posenc.training_presets import training_preset
from posenc.empirical.training.runs import RESULT
from posenc.empirical.pipeline.store import run_id
from posenc.errors import PosencError

DYN = DynamicsConfig(every=10, ablation_every=2).to_dict()


def small(pe="rope", **over):
    return preset("smoke", task="distance", pe=pe, seed=0,
                  **{"epochs": 2, "task.n_samples": 600, **over})


def test_plan_records_dynamics_only_for_rope_and_alibi_on_distance():
    exps = ReproductionPlan("smoke", seeds=2).experiments()
    with_dyn = {(e.train.task.name, e.tags["role"], e.train.seed) for e in exps if e.dynamics}
    assert with_dyn == {("distance", r, s) for r in DYNAMICS_ROLES for s in (0, 1)}
    assert all(e.dynamics == DynamicsConfig().to_dict() for e in exps if e.dynamics)
    no_zero = ReproductionPlan("smoke", seeds=1, ablation_modes=("mean",)).experiments()
    assert not any(e.dynamics for e in no_zero)


def test_reproduce_plan_seeds_per_task():
    def seeds(plan):
        out = {}
        for e in plan.experiments():
            out.setdefault(e.train.task.name, set()).add(e.train.seed)
        return out
    n = training_preset("quick").seeds
    assert seeds(ReproductionPlan.for_command("quick")) == {"distance": set(range(n)),
                                                             "count": set(range(n))}
    plan = ReproductionPlan.for_command("quick")
    assert len(plan.experiments()) == n * (len(plan.distance_roles) + len(plan.count_roles))
    from posenc.roles import LEARNED_IN_DEFAULT
    assert ("learned" in plan.distance_roles) == LEARNED_IN_DEFAULT
    # an extra role runs when named
    named = ReproductionPlan.for_command("quick", 1, roles=["rope", "learned"], tasks=["distance"])
    assert named.distance_roles == ("rope", "learned")
    assert seeds(ReproductionPlan.for_command("quick", 2, count_seeds=3)) == \
        {"distance": {0, 1}, "count": {0, 1, 2}}
    # a calibration sweep: the same plan shifted to seeds the report never uses
    assert seeds(ReproductionPlan.for_command("quick", 3, first_seed=1000)) == \
        {"distance": {1000, 1001, 1002}, "count": {1000, 1001, 1002}}
    shifted = ReproductionPlan.for_command("quick", 2, first_seed=1000).with_seed_counts(
        {("distance", "rope"): 4})
    assert {e.train.seed for e in shifted.experiments() if e.tags["role"] == "rope"
            and e.train.task.name == "distance"} == {1000, 1001, 1002, 1003}
    for bad in (-1, 1.5, True, 2**31):
        with pytest.raises(PosencError, match="first-seed"):
            ReproductionPlan.for_command("quick", first_seed=bad)
    assert seeds(ReproductionPlan.for_command("paper", 4)) == {"distance": set(range(4)),
                                                                "count": set(range(4))}
    with pytest.raises(PosencError, match="unknown preset"):
        ReproductionPlan.for_command("huge")
    with pytest.raises(PosencError, match="positive integer"):
        ReproductionPlan.for_command("quick", 0)
    with pytest.raises(PosencError, match="positive integer"):
        ReproductionPlan.for_command("quick", count_seeds=0)


def test_config_round_trip_and_run_id_unchanged_without_dynamics():
    plain = ExperimentConfig(train=small())
    assert "dynamics" not in plain.to_dict()  # run ids of stores without dynamics stay valid
    with_dyn = plain.replace(dynamics=DYN)
    assert ExperimentConfig.from_dict(with_dyn.to_dict()) == with_dyn
    assert run_id(with_dyn.to_dict()) != run_id(plain.to_dict())
    with pytest.raises(PosencError, match="every"):
        plain.replace(dynamics={"every": 0})
    with pytest.raises(PosencError, match="unknown dynamics key"):
        plain.replace(dynamics={"often": 3})
    with pytest.raises(PosencError, match="zero ablation"):
        plain.replace(dynamics=DYN, ablation_modes=("mean",))


@pytest.fixture(scope="module")
def dynamics_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exp") / "run"
    exp = ExperimentConfig(train=small(), ablation_examples=100, probe=False, dynamics=DYN,
                           tags={"role": "rope"})
    return exp, folder, experiment_worker(exp.to_dict(), str(folder), 1)


def test_worker_records_dynamics_in_the_same_training_run(dynamics_run, tmp_path):
    exp, folder, res = dynamics_run
    header, records = read_dynamics_file(folder)
    assert header["dynamics"] == DYN and records[-1]["final"]
    d = res["dynamics"]
    table = res["ablation"]["zero"]
    best = max(table["layers"], key=lambda la: (la["largest_drop"], -la["layer"]))
    assert d["deposit"] == [best["layer"], best["deposit_head"]]
    assert d["deposit_source"] == "ablation_zero.json" and d["complete"]
    # the recording does not change the training: same metrics as a run without it
    plain = experiment_worker(exp.replace(dynamics=None).to_dict(), str(tmp_path / "plain"), 1)
    assert plain["metrics"] == res["metrics"] and "dynamics" not in plain
    assert "table_mean" not in res  # RoPE has no learned relative table


def test_worker_rerun_skips_and_rerecords_a_run_finished_without_dynamics(dynamics_run, tmp_path):
    exp, folder, res = dynamics_run
    again = experiment_worker(exp.to_dict(), str(folder), 1)
    assert again["dynamics"] == res["dynamics"] and again["metrics"] == res["metrics"]
    # a finished run without its dynamics file (e.g. trained before recording was asked for)
    other = tmp_path / "other"
    experiment_worker(exp.replace(dynamics=None).to_dict(), str(other), 1)
    assert (other / RESULT).is_file() and dynamics_file(other) is None
    redone = experiment_worker(exp.to_dict(), str(other), 1)
    assert redone["dynamics"] == res["dynamics"]
    assert json.loads((other / RESULT).read_text())["final"]["test_acc"] == \
        res["summary"]["test_acc"]


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_worker_trains_ablates_and_probes_on_cuda(tmp_path):
    # ablation and probe run on the training device (a CPU tensor in the probe once broke this)
    exp = ExperimentConfig(train=small().replace(device="cuda"), ablation_examples=100,
                           dynamics=DYN, tags={"role": "rope"})
    res = experiment_worker(exp.to_dict(), str(tmp_path / "run"), 1)
    assert res["probe"] is not None and res["dynamics"]["complete"]
    assert len(res["ablation"]["zero"]["layers"]) == exp.train.model.n_layers


def test_worker_trace_statistics_cover_the_training_up_to_the_kept_epoch(tmp_path):
    """A learning rate too small to change the validation accuracy keeps epoch 1 (the earliest of
    ties) and stops at epoch 3: the trace statistics are over epoch 1's steps, not the tail's."""
    exp = ExperimentConfig(train=small("relative_bias:mode=table", lr=1e-12, epochs=6, patience=2),
                           ablation_examples=50, probe=False, tags={"role": "relative"})
    res = experiment_worker(exp.to_dict(), str(tmp_path / "run"), 1)
    stop = res["summary"]["early_stopping"]
    assert (stop["best_epoch"], stop["stopped_epoch"]) == (1, 3)
    assert res["trace"]["steps"] == stop["best_step"] < stop["stopped_step"]
    assert len(res["trace"]["tables"]["centred_rms"]) == 2  # the initialisation and epoch 1
    # RA's drift null replays the run's schedule (steps per epoch from its metrics) up to the
    # trace's steps; its functional part: the test accuracy with the tables flattened
    sched = res["summary"]["schedule"]
    assert sched["steps_per_epoch"] == stop["best_step"] and sched["epochs"] == 6
    assert (sched["lr"], sched["betas"]) == (1e-12, [0.9, 0.98])
    flat = res["table_mean"]
    assert flat["baseline_acc"] == pytest.approx(res["summary"]["test_acc"])
    assert 0.0 <= flat["test_acc"] <= 1.0 and flat["n_test"] == res["summary"]["n_test"]


def test_latent_columns_only_where_there_is_a_latent():
    """The plan gives MLA runs the latent-columns ablation beside zero and the other PEs zero
    alone (their run ids unchanged); an experiment asking it of a PE without MLA is one error."""
    modes = ("zero", "latent-columns")
    exps = ReproductionPlan("smoke", seeds=1, ablation_modes=modes).experiments()
    plain = {(e.train.task.name, e.tags["role"]): run_id(e.to_dict())
             for e in ReproductionPlan("smoke", seeds=1).experiments()}
    for e in exps:
        role = e.tags["role"]
        assert e.ablation_modes == (modes if role == "mla" else ("zero",))
        if role != "mla":
            assert run_id(e.to_dict()) == plain[(e.train.task.name, role)]
    assert any(e.tags["role"] == "mla" for e in exps)
    with pytest.raises(PosencError, match="latent-columns ablation is for MLA models; PE 'rope'"):
        ExperimentConfig(train=small(), ablation_modes=modes)
    assert ExperimentConfig(train=small("mla"), ablation_modes=modes).ablation_modes == modes


@pytest.mark.parametrize("legacy", [False, True])
def test_a_resumed_experiment_counts_its_earlier_cpu_time(tmp_path, legacy):
    """cpu_seconds of a run resumed part-way adds the CPU time its checkpoint kept; where the
    checkpoint kept none (written before posenc did), the summary says the count is partial."""
    import math

    import torch

    from posenc.empirical.training.runs import CHECKPOINT, dataset_for
    from posenc.empirical.training.train import train

    exp = ExperimentConfig(train=small(), ablation_examples=50, probe=False)
    folder = tmp_path / "run"

    cfg = exp.train.replace(num_threads=1)
    per_epoch = math.ceil(len(dataset_for(cfg).train) / cfg.batch_size)

    def interrupt(step, loss):
        if step == per_epoch + 1:  # in epoch 2: the checkpoint holds epoch 1
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(cfg, folder, progress=False, on_step=interrupt)
    ckpt = torch.load(folder / CHECKPOINT, weights_only=False)
    assert ckpt["cpu_seconds"] > 0
    if legacy:
        del ckpt["cpu_seconds"]
    else:  # far more than this call can spend: the sum must hold it
        ckpt["cpu_seconds"] = 10_000.0
    torch.save(ckpt, folder / CHECKPOINT)
    summary = experiment_worker(exp.to_dict(), str(folder), 1)["summary"]
    assert summary["resumed"]["earlier_cpu_seconds"] == (None if legacy else 10_000.0)
    if legacy:
        assert summary["cpu_seconds_complete"] is False and summary["cpu_seconds"] < 10_000
    else:
        assert "cpu_seconds_complete" not in summary and 10_000 < summary["cpu_seconds"] < 11_000
