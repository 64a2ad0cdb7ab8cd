"""scripts/compare_max_epochs.py: the frozen rule replayed on a full 60-epoch curve beside what it
kept in a run trained at another maximum (docs/methods.md, "The stopping
rule")."""

import json

import pytest

from script_loader import load_script

@pytest.fixture
def script(monkeypatch):
    return load_script(monkeypatch, "compare_max_epochs")


def _write(folder, vals, losses, epochs, summary=None, lr=None):
    folder.mkdir(parents=True)
    lr = lr or [1e-3] * len(vals)
    (folder / "metrics.jsonl").write_text("".join(
        json.dumps({"epoch": i + 1, "lr": lr[i], "val_acc": v, "val_loss": loss}) + "\n"
        for i, (v, loss) in enumerate(zip(vals, losses))))
    (folder / "train_config.json").write_text(json.dumps({"epochs": epochs}))
    if summary is not None:
        (folder / "train_summary.json").write_text(json.dumps({"early_stopping": summary}))


def _stop(epoch, best, fired=True, patience=8, on="accuracy_or_loss"):
    return {"patience": patience, "stop_on": on, "stopped_epoch": epoch, "fired": fired,
            "best_val_acc": best}


def test_the_rule_is_replayed_on_the_full_curve_and_set_beside_the_long_run(tmp_path, script):
    # 60-epoch curve: accuracy rises to 0.9 at epoch 30 then stays; the loss stops falling there
    # too, so patience 8 on either fires at epoch 38 keeping epoch 30's 0.9
    acc = [0.1 + 0.8 * min(i, 29) / 29 for i in range(60)]
    loss = [3.0 - 2.0 * min(i, 29) / 29 for i in range(60)]
    _write(tmp_path / "full" / "run_a", acc, loss, 60)
    _write(tmp_path / "long" / "run_a", [0.5] * 20, [1.0] * 20, 120, _stop(20, 0.55),
           lr=[1e-3] * 19 + [5e-4])
    _write(tmp_path / "long" / "only_here", [0.5], [1.0], 120, _stop(1, 0.5))  # no 60 curve
    [row] = script.compare(tmp_path / "full", tmp_path / "long")
    assert row["run"] == "run_a" and row["epochs60"] == 38 and row["fired60"]
    assert row["kept60"] == pytest.approx(90.0) and row["best60"] == pytest.approx(90.0)
    assert row["kept"] == pytest.approx(55.0) and row["lr_at_stop"] == pytest.approx(0.5)
    assert script.main([str(tmp_path / "full"), str(tmp_path / "long")]) == 0


def test_a_run_trained_with_another_rule_is_refused(tmp_path, script):
    _write(tmp_path / "full" / "r", [0.5] * 3, [1.0] * 3, 60)
    _write(tmp_path / "long" / "r", [0.5] * 3, [1.0] * 3, 120, _stop(3, 0.5, on="accuracy"))
    with pytest.raises(SystemExit, match="not the rule compared"):
        script.compare(tmp_path / "full", tmp_path / "long")


def test_no_common_run_is_exit_2(tmp_path, script):
    (tmp_path / "full").mkdir()
    _write(tmp_path / "long" / "r", [0.5], [1.0], 120, _stop(1, 0.5))
    assert script.main([str(tmp_path / "full"), str(tmp_path / "long")]) == 2
