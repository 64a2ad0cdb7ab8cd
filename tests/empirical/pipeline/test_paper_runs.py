"""Paper-code runs: configs record resolved specs, runs made under an old preset meaning are
refused, the sweep's paper-code mode and its store stay apart from the standard one."""

import json

import pytest

from posenc.empirical.config import preset
from posenc.reproduction.plan import ReproductionPlan
from posenc.empirical.training.runs import read_config
from posenc.empirical.pipeline.store import RunStore
from posenc.errors import PosencError
from posenc.reproduction import check_store_mode


def test_a_preset_name_is_recorded_as_its_spec():
    cfg = preset("smoke", pe="paper-alibi")
    assert cfg.model.pe == "alibi:slopes=exp0"
    assert "paper-alibi" not in cfg.to_json()
    assert "code" not in cfg.to_dict()["model"]  # standard configs (and run ids) unchanged


@pytest.mark.parametrize("name", ["paper-alibi", "paper-rope", "paper-mla", "paper-relative"])
def test_a_run_made_under_an_old_named_spec_meaning_is_refused(tmp_path, name):
    data = preset("smoke", pe="nope").to_dict()
    data["model"]["pe"] = name  # what a run folder written before the correction holds
    (tmp_path / "train_config.json").write_text(json.dumps(data))
    with pytest.raises(PosencError, match="named specs version 2"):
        read_config(tmp_path)


def test_an_unchanged_named_spec_still_loads(tmp_path):
    data = preset("smoke", pe="nope").to_dict()
    data["model"]["pe"] = "paper-nope"
    (tmp_path / "train_config.json").write_text(json.dumps(data))
    assert read_config(tmp_path).model.pe == "nope"


def test_the_paper_code_plan_runs_the_codes_models():
    plan = ReproductionPlan.for_command("smoke", 1, paper_code=True)
    exps = plan.experiments()
    assert plan.mode == "paper-code" and all(e.train.model.code == "paper" for e in exps)
    pes = {e.tags["role"]: e.train.model.pe for e in exps if e.train.task.name == "distance"}
    assert pes["alibi"] == "alibi:slopes=exp0" and pes["rope"] == "rope"
    assert pes["absolute+rope"] == "hybrid:additive=sinusoidal,additive.layout=half"
    assert pes["mla"].endswith("rope=paper_code")
    std = ReproductionPlan.for_command("smoke", 1).experiments()
    assert all(e.train.model.code == "posenc" for e in std)
    assert not {e.train.run_id() for e in exps} & {e.train.run_id() for e in std}
    assert ReproductionPlan.for_command("paper", 1).in_paper_code
    assert not ReproductionPlan.for_command("paper", 1, paper_code=False).in_paper_code


def test_a_store_never_mixes_modes(tmp_path):
    store = RunStore(tmp_path / "s")
    exp = ReproductionPlan.for_command("smoke", 1, roles=["nope"], tasks=["count"]).experiments()[0]
    store.add(exp.to_dict(), "experiment", "count/nope/s0")
    check_store_mode(store, "standard")
    with pytest.raises(PosencError, match="holds standard runs"):
        check_store_mode(store, "paper-code")


def test_paper_code_configs_whose_classes_exceed_the_vocabulary_are_refused_when_made():
    """The paper code classifies over the vocabulary: the paper-code plan raises the quick
    distance task's vocabulary to its class count (posenc.empirical.paper_specs.
    paper_code_task_fields), a config made with fewer entries is refused when it is made (a
    sweep validates every config before it runs one), and every paper preset fits."""
    classes = preset("quick", task="distance").task.n_classes
    assert classes > preset("quick", task="distance").task.vocab_size
    jobs = ReproductionPlan.for_command("quick", 1, paper_code=True).jobs()
    assert {j.config["train"]["task"]["vocab_size"] for j in jobs
            if j.config["train"]["task"]["name"] == "distance"} == {classes}
    with pytest.raises(PosencError, match=f"fewer entries than the {classes} classes"):
        ReproductionPlan.for_command("quick", 1, paper_code=True,
                                     overrides={"task.vocab_size": classes - 1}).jobs()
    for task in ("distance", "count"):
        cfg = preset("paper", task=task, pe="paper-nope", seed=0)
        assert cfg.task.n_classes <= cfg.task.vocab_size
