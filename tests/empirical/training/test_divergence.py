"""A run whose training loss becomes non-finite is a result, not an error: training stops at that
step and records it, the finished run loads and resumes as finished, analyses of non-finite
weights are refused in one line, and a sweep reports the run (issue: diverged runs)."""

import importlib
import json
import math
import subprocess
import sys

import pytest
import torch

import posenc
from posenc.empirical import load_run
from posenc.empirical.training.train import train
from posenc.empirical.config import ModelConfig, TaskConfig, TrainConfig
from posenc.empirical.training.runs import RESULT

train_mod = importlib.import_module("posenc.empirical.training.train")


def tiny(**kw) -> TrainConfig:
    task = TaskConfig(n_samples=500, max_left=2, max_gap=5, max_right=2, vocab_size=10)
    model = ModelConfig(pe=kw.pop("pe", "alibi"), d_model=16, n_heads=2, n_layers=1, d_ff=16)
    return TrainConfig(task=task, model=model, **{"epochs": 3, "batch_size": 50, "lr": 3e-3, **kw})


#: lr 1e6 without clipping: the loss is NaN within the first epoch (measured: step 2-6)
EXPLODES = dict(lr=1e6, grad_clip=None)


def test_a_diverged_run_records_where_and_stops_there(tmp_path):
    seen = []
    res = train(tiny(**EXPLODES), tmp_path / "r", on_step=lambda step, loss: seen.append(step))
    summary = json.loads((tmp_path / "r" / RESULT).read_text())
    d = summary["diverged"]
    assert d["kept_finite"] is False and d["epoch"] == len(res.metrics)
    assert res.metrics[-1]["diverged_step"] == d["step"] == res.metrics[-1]["step"]
    assert seen == list(range(d["step"]))  # no step at or after the non-finite loss
    last = res.metrics[-1]  # the epoch's sums are partial: NaN, not a mean over the whole epoch
    assert math.isnan(last["train_loss"]) and math.isnan(last["train_acc"])
    # the finished run reads back as finished (it was refused: NaN != NaN in the summary check)
    again = train(tiny(**EXPLODES), tmp_path / "r")
    assert again.skipped and json.dumps(again.metrics) == json.dumps(res.metrics)
    assert load_run(tmp_path / "r").diverged == d


def test_analyses_of_non_finite_weights_are_refused_in_one_line(tmp_path):
    train(tiny(**EXPLODES), tmp_path / "r")
    with pytest.raises(posenc.PosencError, match="diverged .*nothing to ablate"):
        posenc.ablate(tmp_path / "r")
    proc = subprocess.run([sys.executable, "-m", "posenc", "ablate", str(tmp_path / "r")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "diverged" in proc.stderr and "Traceback" not in proc.stderr


def test_early_stopping_keeps_the_finite_weights_from_before_a_divergence(tmp_path, monkeypatch):
    real, calls = torch.nn.functional.cross_entropy, []

    def poisoned(logits, labels, *a, **k):  # the training loss becomes NaN at step 20
        loss = real(logits, labels, *a, **k)
        if torch.is_grad_enabled():
            calls.append(1)
            if len(calls) > 20:
                return loss * float("nan")
        return loss
    monkeypatch.setattr(train_mod.F, "cross_entropy", poisoned)
    cfg = tiny(epochs=10, patience=3)  # 7 steps an epoch: the divergence is in epoch 3
    res = train(cfg, tmp_path / "r")
    d = json.loads((tmp_path / "r" / RESULT).read_text())["diverged"]
    assert d == {"step": 20, "epoch": 3, "kept_finite": True}
    assert len(res.metrics) == 3 and res.early_stopping["best_epoch"] <= 3
    run = load_run(tmp_path / "r")
    assert all(bool(torch.isfinite(p).all()) for p in run.model.parameters())
    monkeypatch.undo()
    assert posenc.ablate(run, examples=20).n_examples == 20  # finite weights: analysed as usual


@pytest.mark.slow
def test_a_sweep_reports_diverged_runs(tmp_path):
    out = tmp_path / "s"
    proc = subprocess.run([sys.executable, "-m", "posenc", "reproduce", "--preset", "smoke",
                           "--roles", "alibi,nope", "--tasks", "distance", "--seeds", "1",
                           "--set", "lr=1e6", "--set", "grad_clip=null", "--no-theory",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = (out / "report" / "runs.csv").read_text().splitlines()
    col = rows[0].split(",").index("diverged_step")
    assert all(r.split(",")[col] for r in rows[1:])  # both runs diverged, at a recorded step
    report = (out / "report" / "report.md").read_text()
    assert "Diverged (training stopped at a non-finite loss" in report
    assert "alibi (distance) seed 0 at step" in report
    result = json.loads(next((out / "runs").glob("*/result.json")).read_text())
    assert result["ablation"] == {} and result["probe"] is None
