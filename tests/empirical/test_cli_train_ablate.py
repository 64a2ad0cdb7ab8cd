"""``posenc train`` and ``posenc ablate``: an end-to-end smoke run, and user errors as one line
with exit status 2."""

import json
import subprocess
import sys

import pytest

from posenc.cli import main


def test_train_smoke_then_ablate_with_plot(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "posenc", "train", "--task", "distance", "--pe", "rope",
                           "--preset", "smoke", "--out", str(run)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "test accuracy" in proc.stdout
    acc = json.loads((run / "train_summary.json").read_text())["final"]["test_acc"]
    assert acc > 0.6  # chance is 1/8
    proc = subprocess.run([sys.executable, "-m", "posenc", "ablate", str(run), "--mode", "mean",
                           "--plot", str(tmp_path / "abl.png"), "--examples", "200"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "abl.png").stat().st_size > 1000
    table = json.loads((run / "ablation-mean.json").read_text())
    assert table["n_examples"] == 200 and len(table["layers"]) == 2
    assert "deposit" in proc.stdout


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("cli") / "run"
    assert main(["train", "--preset", "smoke", "--epochs", "1", "--samples", "300", "--out", str(run)]) == 0
    return run


def _one_line_error(capsys, argv, match):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and match in err, err


def test_bad_input_gives_one_line_and_status_2(tmp_path, capsys, finished_run):
    _one_line_error(capsys, ["train", "--task", "sorting", "--preset", "smoke"], "unknown task")
    _one_line_error(capsys, ["train", "--preset", "huge"], "unknown preset")
    _one_line_error(capsys, ["train", "--preset", "smoke", "--pe", "custom:frequencies=1;2;3;4;5",
                             "--out", str(tmp_path / "x")], "frequencies")
    _one_line_error(capsys, ["ablate", str(tmp_path / "missing")], "does not exist")
    _one_line_error(capsys, ["ablate", str(finished_run), "--mode", "shuffle"], "unknown ablation mode")
    cfg = json.loads((finished_run / "train_config.json").read_text())
    cfg["model"]["d_model"], cfg["model"]["n_heads"] = 12, 4  # RoPE on head dim 3
    (tmp_path / "odd.json").write_text(json.dumps(cfg))
    _one_line_error(capsys, ["train", "--config", str(tmp_path / "odd.json"), "--out", str(tmp_path / "o")],
                    "even head dimension")
    cfg["model"]["heads"] = 4
    (tmp_path / "unknown.json").write_text(json.dumps(cfg))
    _one_line_error(capsys, ["train", "--config", str(tmp_path / "unknown.json")],
                    "unknown config key 'model.heads'")


def test_corrupt_checkpoint_gives_one_line(tmp_path, capsys, finished_run):
    import shutil
    broken = tmp_path / "broken"
    shutil.copytree(finished_run, broken)
    data = (broken / "checkpoint.pt").read_bytes()
    (broken / "checkpoint.pt").write_bytes(data[: len(data) // 2])  # truncated
    _one_line_error(capsys, ["ablate", str(broken)], "corrupt")


def test_latent_columns_ablation_of_an_mla_run(tmp_path, capsys, finished_run):
    """``--mode latent-columns`` on an MLA run: one variant per head index, saved as
    ablation-latent-columns.json; on a run without MLA (the RoPE run) one line, exit 2, no file."""
    import posenc
    run = tmp_path / "mla"
    assert main(["train", "--preset", "smoke", "--pe", "mla", "--epochs", "1", "--samples", "300",
                 "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["ablate", str(run), "--mode", "latent-columns", "--examples", "50", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["mode"] == "latent-columns" and table["n_examples"] == 50
    assert [len(la["head_acc"]) for la in table["layers"]] == [4, 4]
    assert all(la["mean_distance"] is None for la in table["layers"])
    assert json.loads((run / "ablation-latent-columns.json").read_text()) == table
    api = posenc.ablate(str(run), "latent-columns", examples=50)
    assert json.loads(json.dumps(api.to_dict())) == table
    _one_line_error(capsys, ["ablate", str(finished_run), "--mode", "latent-columns"],
                    "has no latent")
    assert not (finished_run / "ablation-latent-columns.json").exists()
