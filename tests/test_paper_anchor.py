"""scripts/paper_anchor.py: the anchor runs the ``paper`` preset's own config (bar its stated
changes), and a role whose epochs do not fit is skipped, never silently shortened (no training
here; the script's --dry-run rehearses the training path)."""

import argparse

import pytest

from script_loader import load_script


@pytest.fixture
def anchor(monkeypatch):
    return load_script(monkeypatch, "paper_anchor")


def test_the_anchor_is_the_paper_presets_run_with_its_stated_changes(anchor):
    from posenc.reproduction.plan import ReproductionPlan

    plan = ReproductionPlan(preset="paper", seeds=1, distance_roles=("absolute+rope",),
                            count_roles=())
    ours = anchor.experiment("absolute+rope", "bfloat16", "cuda", 5000, dry=False)
    theirs = plan.experiments()[0]
    assert ours.train.replace(precision="float32", device=theirs.train.device) == theirs.train
    assert (ours.train.precision, ours.train.device) == ("bfloat16", "cuda")
    assert (ours.ablation_examples, ours.ablation_data) == (5000, "test")
    assert (theirs.ablation_examples, theirs.ablation_data) == (100000, "all")
    # the paper code's sizes, optimiser and data
    t = ours.train
    assert (t.model.code, t.model.d_model, t.model.n_heads, t.model.n_layers, t.model.dropout) == \
        ("paper", 256, 16, 6, 0.1)
    assert (t.epochs, t.batch_size, t.lr, t.betas, t.task.n_samples, t.task.vocab_size) == \
        (100, 512, 1e-4, (0.98, 0.9), 100000, 574)
    assert t.run_id() != theirs.train.run_id()  # bfloat16 is part of the run's identity


@pytest.mark.parametrize("per_epoch, left, shorten, expected", [
    (4.0, 500.0, False, 100),   # fits: the preset's epochs
    (5.4, 493.0, False, 0),     # does not fit: skipped (the 2026-12-04 numbers)
    (5.4, 493.0, True, 91),     # asked for: as many as fit
    (600.0, 493.0, True, 0),    # not even one epoch: skipped
])
def test_a_role_runs_its_epochs_or_is_skipped_unless_shortening_is_asked_for(
        anchor, per_epoch, left, shorten, expected):
    assert anchor.epochs_to_run(100, per_epoch, left, shorten) == expected


def test_a_role_that_does_not_fit_trains_nothing(anchor, monkeypatch, tmp_path):
    """run_role skips before any file is written when the timed epochs do not fit."""
    monkeypatch.setattr(anchor, "time_step", lambda cfg, steps: (10.0, 1.0))  # 10 s a step
    a = argparse.Namespace(dry_run=True, precision="float32", ablation_examples=100,
                           probe_steps=1, margin=1.0, reserve=0.0, allow_shorter=False)
    import time
    assert anchor.run_role("rope", a, time.time() + 5.0, tmp_path, first=True) is False
    assert list(tmp_path.iterdir()) == []
