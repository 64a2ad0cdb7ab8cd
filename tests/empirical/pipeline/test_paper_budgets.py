"""The paper's data and budgets in the plan (issue "Faithful to the paper, second pass", items
1-5): the paper preset's sizes, MLA's own budget, and what paper-code mode does to the task."""

import pytest

from posenc.empirical.paper_specs import PAPER_CODE_LENGTH, paper_budget
from posenc.reproduction.plan import ReproductionPlan


def configs(preset, paper_code=None):
    plan = ReproductionPlan(preset=preset, seeds=1, paper_code=paper_code)
    return {(e.train.task.name, e.tags["role"]): e.train for e in plan.experiments()}


@pytest.mark.parametrize("paper_code", [None, False])  # the paper preset in both modes
def test_paper_preset_sizes_and_mla_budget(paper_code):
    cfgs = configs("paper", paper_code)
    assert cfgs[("distance", "rope")].task.vocab_size == 574  # dis_gen/trans.py
    assert cfgs[("count", "rope")].task.n_samples == 50_000
    assert cfgs[("distance", "rope")].task.n_samples == 100_000
    for (task, role), cfg in cfgs.items():
        want = (150, 1024) if role == "mla" else (100, 512)  # mla.py vs trans.py
        assert (cfg.epochs, cfg.batch_size) == want, (task, role)


def test_paper_code_mode_draws_the_papers_data():
    paper = configs("paper")  # the paper preset defaults to paper-code mode
    t = paper[("distance", "rope")].task
    assert (t.sampler, t.length) == ("paper", PAPER_CODE_LENGTH)
    assert paper[("count", "rope")].task.sampler == "clean"
    # count_gen/partialrope.py pads every example to max_len 128 and pools all 128 positions:
    # the count examples' 120 tokens then 8 PAD
    count = paper[("count", "rope")].task
    assert (count.content_length, count.length, count.pad_to) == (120, 128, 128)
    assert configs("paper", False)[("count", "rope")].task.pad_to is None  # standard mode
    # a longer count example of the user's own is not padded (nor refused as longer than 128)
    long = ReproductionPlan(preset="paper", seeds=1, overrides={"task.seq_len": 200})
    long_count = {e.tags["role"]: e.train for e in long.experiments()
                  if e.train.task.name == "count"}["rope"].task
    assert (long_count.content_length, long_count.length, long_count.pad_to) == (200, 200, None)
    # the quick preset in paper-code mode: 42 classes over the vocabulary (it raised before:
    # vocab 32 < 42 classes), the paper sampler, and its own length (no padding to 128)
    quick = configs("quick", True)
    t = quick[("distance", "rope")].task
    assert (t.vocab_size, t.sampler, t.length) == (42, "paper", 58)
    assert quick[("count", "rope")].task.vocab_size == 32


def test_standard_mode_is_unchanged():
    """Clean data and the preset's budget; run ids of stored standard runs stay valid."""
    quick = configs("quick")
    assert {c.task.sampler for c in quick.values()} == {"clean"}
    assert {(c.epochs, c.batch_size) for c in quick.values()} == {(60, 16)}
    assert quick[("distance", "nope")].run_id() == "distance_nope_quick_s0_283edb633d"
    assert paper_budget("quick", "mla") == {} and paper_budget("paper", "rope") == {}


def test_user_overrides_win_over_the_budget():
    plan = ReproductionPlan(preset="paper", seeds=1, paper_code=False,
                            overrides={"epochs": 3, "batch_size": 8})
    assert {(e.train.epochs, e.train.batch_size) for e in plan.experiments()} == {(3, 8)}


def test_the_api_trains_paper_code_runs_on_the_papers_data(api_train_configs, tmp_path):
    """posenc.train(paper_code=True) takes the task fields the plan takes; a user's override
    of them wins."""
    import posenc

    made = api_train_configs
    for overrides in (None, {"task.sampler": "clean"}):
        with pytest.raises(made.stopped):
            posenc.train("distance", "rope", preset="quick", paper_code=True, epochs=1,
                         out=tmp_path / f"run{len(made)}", overrides=overrides)
    assert [(c.task.sampler, c.task.vocab_size) for c in made] == [("paper", 42), ("clean", 42)]


def test_paper_code_mode_ablates_over_the_whole_data_set():
    import torch

    from posenc.empirical.config import preset
    from posenc.empirical.pipeline.experiment import ExperimentConfig, ablation_source
    from posenc.empirical.tasks import make_split
    from posenc.errors import PosencError

    plan = ReproductionPlan(preset="quick", seeds=1, paper_code=True)
    exps = plan.experiments()
    assert {(e.ablation_data, e.ablation_examples) for e in exps} == {("all", 3000)}
    standard = ReproductionPlan(preset="quick", seeds=1).experiments()
    assert {(e.ablation_data, e.ablation_examples) for e in standard} == {("test", 300)}
    assert "ablation_data" not in standard[0].to_dict()  # stored standard run ids unchanged
    back = ExperimentConfig.from_dict(exps[0].to_dict())
    assert back.ablation_data == "all"
    split = make_split(preset("smoke").task, 0)
    whole = ablation_source(split, "all")
    assert len(whole) == len(split.train) + len(split.test)
    assert torch.equal(whole.tokens[:len(split.train)], split.train.tokens)
    assert torch.equal(whole.labels[len(split.train):], split.test.labels)
    assert ablation_source(split, "test") is split.test
    with pytest.raises(PosencError, match="ablation_data must be one of test, all"):
        ExperimentConfig(train=preset("smoke"), ablation_data="train")


def test_the_worker_ablates_the_examples_asked_for(tmp_path):
    from posenc.empirical.config import preset
    from posenc.empirical.pipeline.experiment import ExperimentConfig, experiment_worker

    cfg = preset("smoke", **{"epochs": 1, "task.n_samples": 200})
    for which, want in (("all", 200), ("test", 60)):
        exp = ExperimentConfig(train=cfg, ablation_examples=10_000, ablation_data=which,
                               probe=False)
        out = experiment_worker(exp.to_dict(), str(tmp_path / which), 1)
        assert out["ablation"]["zero"]["n_examples"] == want, which
