"""The typed experiment result at the report/verdict edge (posenc.empirical.pipeline.experiment_result):
a malformed or mismatched record is refused with one line; a real run's stored result
round-trips."""

import copy

import pytest

from posenc.empirical.config import preset
from posenc.empirical.pipeline.experiment import ExperimentConfig, experiment_worker
from posenc.empirical.pipeline.experiment_result import ExperimentResult
from posenc.empirical.pipeline.store import RunStore
from posenc.errors import PosencError


def stored(**summary_changes):
    summary = {"task": "distance", "pe": "rope", "seed": 3, "test_acc": 0.5,
               "tags": {"role": "rope"}}
    summary.update(summary_changes)
    return {"summary": {k: v for k, v in summary.items() if v is not ...},
            "ablation": {"zero": {"layers": []}}}


def test_a_well_formed_record_is_read():
    r = ExperimentResult.from_stored(stored(), id="abc")
    assert (r.task, r.role, r.seed, r.pe, r.test_acc, r.id) == ("distance", "rope", 3, "rope", 0.5, "abc")
    assert r.probe is None and r.trace is None and r.dynamics is None
    assert ExperimentResult.of(r) is r and ExperimentResult.of(stored()) == \
        ExperimentResult.from_stored(stored())
    assert not r.paper_code and ExperimentResult.from_stored(stored(code="paper")).paper_code
    assert not ExperimentResult.from_stored(stored(code="standard")).paper_code


@pytest.mark.parametrize("data, match", [
    (stored(tags={}), "tags.role"),                      # missing role
    (stored(tags={"role": ""}), "tags.role"),
    (stored(tags=None), "tags.role"),
    (stored(tags={"role": 7}), "tags.role"),             # wrong types
    (stored(task=...), "task"),
    (stored(task=1), "task"),
    (stored(seed="0"), "seed"),
    (stored(seed=True), "seed"),
    (stored(seed=-1), "seed"),
    (stored(seed=1.5), "seed"),
    ({"summary": [1]}, "no summary"),
    ([], "no summary"),
    ({**stored(), "ablation": [1]}, "ablation must be a JSON object"),
    ({**stored(), "probe": "r2"}, "probe must be a JSON object"),
    ({**stored(), "dynamics": 1}, "dynamics must be a JSON object"),
    ({**stored(), "metrics": {}}, "metrics must be a JSON array"),
])
def test_a_malformed_record_is_refused_with_one_line(data, match):
    with pytest.raises(PosencError, match=match) as exc:
        ExperimentResult.from_stored(data, id="r1")
    assert "\n" not in str(exc.value) and "run r1" in str(exc.value)


def test_a_record_of_another_config_is_refused():
    config = {"train": {"task": {"name": "distance"}, "seed": 3}, "tags": {"role": "rope"}}
    ExperimentResult.from_stored(stored(), config=config)
    for path, value, what in ((("tags", "role"), "alibi", "role 'rope'"),
                              (("train", "seed"), 4, "seed 3"),
                              (("train", "task", "name"), "count", "task 'distance'")):
        other = copy.deepcopy(config)
        node = other
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        with pytest.raises(PosencError, match=f"does not match its config: {what}"):
            ExperimentResult.from_stored(stored(), config=other)


def test_a_real_runs_stored_result_round_trips(tmp_path):
    cfg = preset("smoke", task="distance", pe="rope", seed=1, epochs=1, **{"task.n_samples": 400})
    exp = ExperimentConfig(train=cfg, ablation_examples=60, probe=True, probe_examples=60,
                           tags={"role": "rope-1head"})
    store = RunStore(tmp_path / "store")
    rid = store.add(exp.to_dict(), "experiment", "distance/rope-1head/s1")
    store.finish(rid, experiment_worker(exp.to_dict(), str(store.begin(rid)), 1))
    data, rec = store.result(rid), store.get(rid)
    r = ExperimentResult.from_stored(data, id=rid, run_dir=store.run_dir(rid), config=rec.config)
    assert (r.task, r.role, r.seed, r.pe) == ("distance", "rope-1head", 1, "rope")
    assert r.ablation == data["ablation"] and r.probe == data["probe"] and r.probe is not None
    assert r.trace == data.get("trace") and r.dynamics is None and r.metrics == data["metrics"]
    assert r.to_stored() == {k: v for k, v in data.items() if v is not None}
    assert data["summary"]["bayes_ceiling"] == 1.0  # recorded at measure time (clean: exact)
    assert ExperimentResult.from_stored(r.to_stored(), id=rid, run_dir=r.run_dir) == r
    # the same stored result under another run's config is refused
    with pytest.raises(PosencError, match="does not match its config"):
        ExperimentResult.from_stored(data, id=rid, config={**rec.config, "tags": {"role": "rope"}})


def test_a_result_stored_before_the_length_only_rate_gets_it_from_its_config():
    """Stores written before runs recorded summary.length_rate keep the floor of their task:
    it is a function of the task configuration alone (exact), read from the run's config."""
    from posenc.empirical.bayes_ceiling import length_only_rate
    cfg = preset("quick", task="distance", pe="rope", seed=3)
    config = ExperimentConfig(train=cfg, tags={"role": "rope"}).to_dict()
    res = ExperimentResult.from_stored(stored(), config=config)
    assert res.summary["length_rate"] == pytest.approx(length_only_rate(cfg.task)) \
        == pytest.approx(0.146875)
    kept = ExperimentResult.from_stored(stored(length_rate=0.5), config=config)
    assert kept.summary["length_rate"] == 0.5  # a recorded one is never replaced
    assert "length_rate" not in ExperimentResult.from_stored(stored()).summary  # no config


def test_a_result_stored_before_the_schedule_gets_it_from_its_config_and_metrics():
    """RA's drift null replays each run's optimiser schedule: a result stored before
    summary.schedule was recorded gets it from its config, with the steps per epoch of its
    first epoch's metrics; a malformed recorded one is refused with one line."""
    cfg = preset("quick", task="count", pe="relative_bias:mode=table", seed=3)
    config = ExperimentConfig(train=cfg, tags={"role": "rope"}).to_dict()
    def data():
        return {**stored(task="count"), "metrics": [{"epoch": 1, "step": 119},
                                                    {"epoch": 2, "step": 238}]}
    res = ExperimentResult.from_stored(data(), config=config)
    assert res.summary["schedule"] == {"lr": 1e-3, "betas": [0.9, 0.98], "weight_decay": 1e-5,
                                       "warmup_frac": 0.06, "epochs": 60, "steps_per_epoch": 119}
    assert (res.schedule.total, res.schedule.warmup) == (7140, 428)
    assert ExperimentResult.from_stored(stored(task="count"), config=config).schedule is None
    assert ExperimentResult.from_stored(data()).schedule is None  # no config
    bad = {**stored(schedule={**res.summary["schedule"], "betas": [0.9, 1.5]})}
    with pytest.raises(PosencError, match="schedule is out of range") as exc:
        ExperimentResult.from_stored(bad, id="r1")
    assert "\n" not in str(exc.value) and "run r1" in str(exc.value)
    with pytest.raises(PosencError, match="schedule is malformed"):
        ExperimentResult.from_stored(stored(schedule={"lr": 1e-3}), id="r1")


def test_a_result_stored_before_the_bayes_ceiling_gets_it_once_per_task_config(monkeypatch):
    """Stores written before runs recorded summary.bayes_ceiling (the paper-small sweep of
    5247ec3) get the recorded estimate of their task, computed once per task configuration
    (fixed seed: the same every time); a clean task's is 1.0; a recorded one is kept."""
    from posenc.empirical import bayes_ceiling as bc
    real, calls = bc.bayes_ceiling, []
    monkeypatch.setattr(bc, "RECORDED_EXAMPLES", 2000)  # the test's speed; the rule is the same
    monkeypatch.setattr(bc, "bayes_ceiling", lambda task, *a, **k: calls.append(task) or
                        real(task, *a, **k))
    bc.recorded_ceiling.cache_clear()
    try:
        def read(seed, sampler="paper", **summary):
            cfg = preset("smoke", task="distance", pe="rope", seed=seed,
                         **{"task.sampler": sampler})
            config = ExperimentConfig(train=cfg, tags={"role": "rope"}).to_dict()
            return cfg.task, ExperimentResult.from_stored(stored(seed=seed, **summary),
                                                          config=config).summary
        task, first = read(3)
        assert first["bayes_ceiling"] == real(task, 2000, seed=0).accuracy < 0.99
        assert read(4)[1]["bayes_ceiling"] == first["bayes_ceiling"]  # another seed: cached
        assert calls == [task]
        assert read(3, sampler="clean")[1]["bayes_ceiling"] == 1.0
        assert read(3, bayes_ceiling=0.5)[1]["bayes_ceiling"] == 0.5  # never replaced
    finally:
        bc.recorded_ceiling.cache_clear()
