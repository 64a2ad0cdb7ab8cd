"""scripts/diagnostic_grid.py: the cells of the paper's-regime diagnostic grid are the configs
its docstring says they are, and its table reads a run folder's curve end points
(no training here)."""

import json

import pytest

from script_loader import load_script

@pytest.fixture
def grid(monkeypatch):
    return load_script(monkeypatch, "diagnostic_grid")


def test_the_cells_differ_only_where_their_names_say(grid):
    from posenc.empirical.config import preset

    quick = preset("quick", "distance", "rope", 1000)
    std = grid.cell_config("standard/clean42", 1000)
    paper = grid.cell_config("paper/clean42", 1000)
    # the quick optimiser and task sizes, a patience that never fires before the maximum
    for cfg in (std, paper):
        assert (cfg.lr, cfg.batch_size, cfg.epochs, cfg.warmup_frac, cfg.grad_clip) == \
            (quick.lr, quick.batch_size, quick.epochs, quick.warmup_frac, quick.grad_clip)
        assert cfg.patience == cfg.epochs and cfg.seed == 1000
        assert (cfg.task.max_gap, cfg.task.n_samples, cfg.task.vocab_size, cfg.task.sampler) == \
            (40, 3000, 42, "clean")
    assert (std.model.code, std.model.kv_source) == ("posenc", "previous")
    assert (paper.model.code, paper.model.kv_source, paper.model.mask_padding) == \
        ("paper", "input", False)
    assert std.model.d_model == paper.model.d_model == quick.model.d_model
    p574 = grid.cell_config("paper/paper574", 1000)
    assert (p574.task.sampler, p574.task.vocab_size) == ("paper", 574)
    assert p574.replace(task=paper.task) == paper  # the data are all that differ
    ten = grid.cell_config("paper/paper574/data10x", 1000)
    assert (ten.task.n_samples, ten.epochs, ten.patience) == (30000, 6, 6)
    opt = grid.cell_config("paper/clean42/paperopt", 1000)
    assert (opt.lr, opt.betas, opt.model.dropout, opt.patience) == (1e-4, (0.98, 0.9), 0.1, None)
    regime = grid.cell_config("paper/regime", 1000, "alibi")
    assert (regime.task.max_left, regime.task.max_gap, regime.task.max_right,
            regime.task.length, regime.task.vocab_size) == (25, 70, 25, 128, 574)
    assert regime.model.pe == "alibi:slopes=exp0"  # the role's paper-code spec


@pytest.mark.parametrize("cell", ["standard/clean", "paper/paper42/more", "posenc/clean42", "x"])
def test_an_unknown_cell_is_refused(grid, cell):
    with pytest.raises(SystemExit, match="unknown cell"):
        grid.cell_config(cell, 1000)


def test_the_table_reads_the_curve_end_points(grid, tmp_path):
    cfg = grid.cell_config("paper/paper42", 1001)
    folder = tmp_path / "paper_paper42" / cfg.run_id()
    folder.mkdir(parents=True)
    (folder / "train_config.json").write_text(cfg.to_json())
    curve = [(0.5, 0.2), (0.9, 0.35), (1.0, 0.30)]  # (train, val): best val at epoch 2
    (folder / "metrics.jsonl").write_text("".join(
        json.dumps({"epoch": i + 1, "lr": 1e-4, "train_acc": t, "val_acc": v}) + "\n"
        for i, (t, v) in enumerate(curve)))
    (folder / "train_summary.json").write_text(json.dumps(
        {"final": {"test_acc": 0.3333}, "seconds": 12.0}))
    (row,) = grid._rows(tmp_path)
    assert (row["cell"], row["seed"], row["epochs"], row["best_epoch"]) == \
        ("paper_paper42", 1001, 3, 2)
    assert row["train_acc"] == pytest.approx(100.0) and row["val_acc"] == pytest.approx(30.0)
    assert row["best_val"] == pytest.approx(35.0) and row["test_acc"] == pytest.approx(33.33)
    assert "| paper_paper42 | rope | 1001 | 3 | 100.0 | 30.0 | 35.0 (2) | 33.3 | 12 |" in \
        grid.table(tmp_path)
