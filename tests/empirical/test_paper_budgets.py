"""The paper's data and budgets in the plan (issue "Faithful to the paper, second pass", items
1-5): the paper preset's sizes, MLA's own budget, and what paper-code mode does to the task."""

import pytest

from posenc.empirical.paper_specs import PAPER_CODE_LENGTH, paper_budget
from posenc.empirical.pipeline.reproduction import ReproductionPlan


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
    assert quick[("distance", "nope")].run_id() == "distance_nope_quick_s0_78afc8111f"
    assert paper_budget("quick", "mla") == {} and paper_budget("paper", "rope") == {}


def test_user_overrides_win_over_the_budget():
    plan = ReproductionPlan(preset="paper", seeds=1, paper_code=False,
                            overrides={"epochs": 3, "batch_size": 8})
    assert {(e.train.epochs, e.train.batch_size) for e in plan.experiments()} == {(3, 8)}


def test_the_api_trains_paper_code_runs_on_the_papers_data(monkeypatch, tmp_path):
    """posenc.train(paper_code=True) takes the task fields the plan takes; a user's override
    of them wins."""
    import posenc
    from posenc.empirical.training import train as train_module

    made = []

    class Stop(Exception):
        pass

    def no_training(cfg, *args, **kwargs):
        made.append(cfg)
        raise Stop

    monkeypatch.setattr(train_module, "train", no_training)
    for overrides in (None, {"task.sampler": "clean"}):
        with pytest.raises(Stop):
            posenc.train("distance", "rope", preset="quick", paper_code=True, epochs=1,
                         out=tmp_path / f"run{len(made)}", overrides=overrides)
    assert [(c.task.sampler, c.task.vocab_size) for c in made] == [("paper", 42), ("clean", 42)]
