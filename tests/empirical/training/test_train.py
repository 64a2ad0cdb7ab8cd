"""Training: learns the smoke task, is deterministic and resumable, writes files atomically,
and turns damaged run folders and bad configs into one clear error."""

import json
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc.empirical import load_run, preset
from posenc.empirical.config import (TaskConfig, TrainConfig, ModelConfig, apply_overrides,
                                     config_from_dict, load_config)
from posenc.empirical.training.runs import CHECKPOINT, CONFIG, METRICS, RESULT
from posenc.empirical.training.trace import TRACE
from posenc.empirical.training.schedule import lr_factor
from posenc.empirical.training.train import train
from posenc.errors import PosencError


def tiny(**kw) -> TrainConfig:
    task = TaskConfig(n_samples=500, max_left=2, max_gap=5, max_right=2, vocab_size=10)
    model = ModelConfig(pe="rope", d_model=16, n_heads=2, n_layers=1, d_ff=16, dropout=0.1)
    return TrainConfig(task=task, model=model, **{"epochs": 3, "batch_size": 50, "lr": 3e-3, **kw})


def test_smoke_preset_learns_the_distance_task(tmp_path):
    cfg = preset("smoke", "distance", "rope")
    res = train(cfg, tmp_path / "run")
    chance = 1 / cfg.task.max_gap
    assert res.final_test_acc > 0.6 > 4 * chance, res.metrics  # chance is 1/8


def test_same_seed_gives_identical_metrics_and_weights(tmp_path):
    a = train(tiny(), tmp_path / "a")
    b = train(tiny(), tmp_path / "b")
    assert a.metrics == b.metrics  # bit for bit (floats compared exactly)
    wa, wb = load_run(tmp_path / "a").model.state_dict(), load_run(tmp_path / "b").model.state_dict()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    c = train(tiny(seed=1), tmp_path / "c")
    assert c.metrics != a.metrics
    lines = (tmp_path / "a" / METRICS).read_text().splitlines()
    assert [json.loads(x) for x in lines] == list(a.metrics)


def test_finished_run_is_skipped_and_other_config_is_refused(tmp_path):
    train(tiny(epochs=1), tmp_path / "r")
    again = train(tiny(epochs=1), tmp_path / "r")
    assert again.skipped
    with pytest.raises(PosencError, match="different config"):
        train(tiny(epochs=1, seed=5), tmp_path / "r")


def test_interrupted_run_leaves_a_whole_checkpoint_and_resumes_to_the_same_metrics(tmp_path):
    full = train(tiny(), tmp_path / "full")

    def interrupt(step, loss):
        if step == 13:  # in epoch 2 (10 steps per epoch)
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(tiny(), tmp_path / "cut", on_step=interrupt)
    folder = tmp_path / "cut"
    assert not (folder / RESULT).exists()
    assert sorted(p.name for p in folder.iterdir()) == sorted([CONFIG, METRICS, CHECKPOINT, TRACE])
    assert load_run(folder).epoch == 1
    resumed = train(tiny(), folder)
    assert resumed.metrics == full.metrics


def _cut_after_epoch_one(folder):
    def interrupt(step, loss):
        if step == 13:  # in epoch 2 (10 steps per epoch)
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(tiny(), folder, on_step=interrupt)


def test_a_resumed_run_counts_the_seconds_of_every_epoch(tmp_path):
    """A resumed run's seconds are those of all its epochs (the checkpoint carries the earlier
    ones; 2026-12-06: they were this call's alone), and its summary says it was resumed."""
    train(tiny(), tmp_path / "full")
    full = json.loads((tmp_path / "full" / RESULT).read_text())
    assert "resumed" not in full and len(full["epoch_seconds"]) == tiny().epochs
    folder = tmp_path / "cut"
    _cut_after_epoch_one(folder)
    first = torch.load(folder / CHECKPOINT, weights_only=False)
    assert first["epoch"] == 1 and len(first["epoch_seconds"]) == 1 and first["seconds_known"]
    assert first["seconds"] >= first["epoch_seconds"][0] > 0
    resumed = train(tiny(), folder)
    summary = json.loads((folder / RESULT).read_text())
    assert len(summary["epoch_seconds"]) == tiny().epochs
    assert summary["epoch_seconds"][0] == first["epoch_seconds"][0]
    assert first["cpu_seconds"] > 0  # the process's CPU time of epoch 1 (one torch thread)
    assert summary["resumed"] == {"from_epoch": 1, "earlier_seconds": round(first["seconds"], 3),
                                  "earlier_cpu_seconds": round(first["cpu_seconds"], 3)}
    assert summary["seconds"] == resumed.seconds >= first["seconds"] + sum(
        summary["epoch_seconds"][1:])
    again = train(tiny(), folder)  # found finished (a sweep killed during its analysis)
    assert again.skipped and again.resumed == summary["resumed"] == resumed.resumed
    assert again.seconds == summary["seconds"]


def test_a_checkpoint_without_times_resumes_and_says_its_earlier_seconds_are_unknown(tmp_path):
    folder = tmp_path / "cut"
    _cut_after_epoch_one(folder)
    ckpt = torch.load(folder / CHECKPOINT, weights_only=False)
    for key in ("seconds", "epoch_seconds", "dynamics_seconds", "seconds_known", "cpu_seconds"):
        del ckpt[key]  # as posenc wrote checkpoints before 2026-12-06
    torch.save(ckpt, folder / CHECKPOINT)
    train(tiny(), folder)
    summary = json.loads((folder / RESULT).read_text())
    assert summary["resumed"] == {"from_epoch": 1, "earlier_seconds": None,
                                  "earlier_cpu_seconds": None}
    assert len(summary["epoch_seconds"]) == tiny().epochs - 1


def test_a_crash_while_saving_leaves_no_half_written_checkpoint(tmp_path, monkeypatch):
    real_save = torch.save

    def broken_save(obj, fh, *a, **k):
        fh.write(b"PK\x03\x04 half a checkpoint")
        raise OSError("disk full")
    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError):
        train(tiny(epochs=1), tmp_path / "r")
    monkeypatch.setattr(torch, "save", real_save)
    # the trace is written before the checkpoint (a resume drops its epochs past the checkpoint)
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == sorted([CONFIG, TRACE])


def test_load_run_errors(tmp_path):
    with pytest.raises(PosencError, match="does not exist"):
        load_run(tmp_path / "nothing")
    train(tiny(epochs=1), tmp_path / "r")
    (tmp_path / "r" / CHECKPOINT).write_bytes(b"this is not a checkpoint")
    with pytest.raises(PosencError, match="corrupt"):
        load_run(tmp_path / "r")
    (tmp_path / "r" / RESULT).rename(tmp_path / "summary")
    (tmp_path / "r" / CHECKPOINT).unlink()
    with pytest.raises(PosencError, match="no checkpoint"):  # an unfinished run
        load_run(tmp_path / "r")
    (tmp_path / "summary").rename(tmp_path / "r" / RESULT)
    with pytest.raises(PosencError, match="was stored without its checkpoint .posenc reproduce "
                                          "drops it after the analysis; --keep-checkpoints keeps"):
        load_run(tmp_path / "r")


def test_a_finished_run_stored_without_its_checkpoint_is_finished_not_retrained(tmp_path):
    """`posenc reproduce` drops a finished run's checkpoint; train() on the folder then
    returns the run as found (metrics from metrics.jsonl) and writes nothing."""
    first = train(tiny(epochs=2), tmp_path / "r")
    (tmp_path / "r" / CHECKPOINT).unlink()
    files = {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir()}
    again = train(tiny(epochs=2), tmp_path / "r")
    assert again.skipped and again.metrics == first.metrics
    assert again.final_test_acc == first.final_test_acc and again.n_params == first.n_params
    assert {p.name: p.read_bytes() for p in (tmp_path / "r").iterdir()} == files
    (tmp_path / "r" / METRICS).write_text('{"epoch": 1, "test_acc": 0.0}\n')  # not the summary's
    with pytest.raises(PosencError, match="disagrees"):
        train(tiny(epochs=2), tmp_path / "r")
    (tmp_path / "r" / METRICS).unlink()
    with pytest.raises(PosencError, match="stored without its checkpoint and has no metrics.jsonl"):
        train(tiny(epochs=2), tmp_path / "r")
    assert train(tiny(epochs=2), tmp_path / "r", resume=False).metrics == first.metrics


def test_config_json_round_trip_and_unknown_keys(tmp_path):
    cfg = preset("paper", "count", "paper-mla", seed=3)
    assert config_from_dict(json.loads(cfg.to_json())) == cfg
    data = cfg.to_dict()
    data["model"]["n_head"] = 4
    (tmp_path / "c.json").write_text(json.dumps(data))
    with pytest.raises(PosencError, match="unknown config key 'model.n_head'"):
        load_config(str(tmp_path / "c.json"))
    with pytest.raises(PosencError, match="must be int"):
        config_from_dict({**cfg.to_dict(), "epochs": "ten"})
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(PosencError, match="not valid JSON"):
        load_config(str(tmp_path / "bad.json"))


def test_bfloat16_precision_is_part_of_the_run_and_trains_deterministically(tmp_path):
    base = tiny(epochs=2)
    assert "precision" not in base.to_dict()  # float32: run ids written before the field stay
    bf = apply_overrides(base, {"precision": "bfloat16"})
    assert bf.precision == "bfloat16" and config_from_dict(json.loads(bf.to_json())) == bf
    assert bf.run_id() != base.run_id()
    a, b = train(bf, tmp_path / "a"), train(bf, tmp_path / "b")
    assert a.metrics == b.metrics and all(math.isfinite(m["train_loss"]) for m in a.metrics)
    f32 = train(base, tmp_path / "f")
    assert f32.metrics != a.metrics  # the autocast really changes the arithmetic
    with pytest.raises(PosencError, match="different config"):
        train(base, tmp_path / "a")
    with pytest.raises(PosencError, match="precision must be float32 or bfloat16"):
        apply_overrides(base, {"precision": "float16"})


def test_paper_preset_has_the_papers_hyperparameters():
    cfg = preset("paper", "distance", "rope")
    m, t = cfg.model, cfg.task
    assert (m.d_model, m.d_ff, m.n_heads, m.n_layers, m.dropout) == (256, 512, 16, 6, 0.1)
    assert (cfg.lr, cfg.weight_decay, cfg.betas, cfg.batch_size, cfg.epochs, cfg.warmup_frac) == \
        (1e-4, 1e-5, (0.98, 0.9), 512, 100, 0.06)
    assert (t.max_gap, t.max_left, t.max_right, t.n_samples, t.train_frac) == (70, 25, 25, 100000, 0.7)
    c = preset("paper", "count").task
    assert (c.n_triggers, c.max_count, c.length) == (30, 100, 120)


@given(st.integers(1, 2000), st.floats(0, 0.5))
def test_lr_schedule_warms_up_then_decays_to_zero(total, frac):
    warmup = int(round(frac * total))
    f = [lr_factor(s, total, warmup) for s in range(total)]
    assert all(0 <= x <= 1 for x in f)
    assert all(a <= b + 1e-12 for a, b in zip(f[:warmup], f[1:warmup + 1]))  # rising
    assert all(a >= b - 1e-12 for a, b in zip(f[warmup:], f[warmup + 1:]))  # falling
    assert lr_factor(total, total, warmup) == pytest.approx(0.0, abs=1e-12) or warmup >= total
    if warmup < total:
        assert f[warmup] == pytest.approx(1.0)
    assert not any(math.isnan(x) for x in f)
