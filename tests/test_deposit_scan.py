"""scripts/deposit_scan.py: its four regimes make valid paper-code configs that differ from
paper-small only in the attention's shape; its table is what the committed stores hold; and its
single-head reading follows the report's thresholds."""

from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def scan(monkeypatch):
    return load_script(monkeypatch, "deposit_scan")


def test_each_regime_changes_only_the_attention_shape(scan):
    base = scan.plan("h8x8-w64", 1).experiments()[0].train
    shapes = {}
    for regime in scan.REGIMES:
        exps = scan.plan(regime, 2).experiments()
        assert {e.tags["role"] for e in exps} == set(scan.ROLES)
        assert {e.train.seed for e in exps} == {1000, 1001}
        assert all(e.ablation_modes == ("zero", "mean") for e in exps)
        cfg = next(e.train for e in exps if e.tags["role"] == "rope")
        assert cfg.model.code == "paper"
        assert cfg.replace(model=base.model, preset=base.preset) == base.replace(seed=cfg.seed)
        shapes[regime] = (cfg.model.n_heads, cfg.model.head_dim, cfg.model.d_model)
        assert cfg.model.n_layers == 4   # the table's "L0-1" names the shallower half of 4
    assert shapes == {"h8x8-w64": (8, 8, 64), "h4x16-w64": (4, 16, 64),
                      "h8x16-w128": (8, 16, 128), "h16x8-w128": (16, 8, 128)}


def test_the_committed_table_is_the_stores(scan):
    out = ROOT / "docs/figures/deposit-scan"
    assert (out / "table.md").read_text() == scan.table(out, list(scan.REGIMES), 2)


class _Run:
    def __init__(self, drops):
        self.test_acc, self.seed, self.summary = 0.9, 1000, {"cpu_seconds": 1.0}
        self.metrics = []
        layers = [{"layer": i, "drops": d, "largest_drop": max(d),
                   "deposit_head": d.index(max(d)), "deposit_index": max(d) / sum(d)}
                  for i, d in enumerate(drops)]
        self.ablation = {"zero": {"layers": layers}}


@pytest.mark.parametrize("drops, single", [
    ([[0.01, 0.02], [0.40, 0.04]], [1]),      # one head 40 points, the other 4: the pattern
    ([[0.01, 0.02], [0.40, 0.05]], []),       # the other head at 5: not
    ([[0.29, 0.0], [0.30, 0.0]], [1]),        # 29 points is under the 30 threshold
])
def test_single_head_layers_follow_the_thresholds(scan, drops, single):
    row = scan.run_row(_Run(drops))
    assert row["zero"]["single"] == single and row["mean"] is None


@pytest.mark.parametrize("vals, best_epoch, late", [
    ([0.1, 0.5, 0.5, 0.4, 0.6], 5, 10.0),     # the gain is last - the one 3 epochs before
    ([0.1, 0.7, 0.7, 0.7, 0.6], 2, -10.0),    # the earliest of tied bests; a late loss
    ([0.2, 0.3, 0.3], 2, None),               # too few epochs to say
])
def test_learning_reads_the_validation_history(scan, vals, best_epoch, late):
    got = scan.learning([{"epoch": i + 1, "val_acc": v} for i, v in enumerate(vals)])
    assert got["best_epoch"] == best_epoch and got["epochs"] == len(vals)
    assert got["best_val"] == pytest.approx(100 * max(vals))
    assert (got["late_gain"] is None) if late is None else got["late_gain"] == pytest.approx(late)


@pytest.mark.parametrize("summary, complete", [
    ({"cpu_seconds": 5.0}, True),                                              # in one go
    ({"cpu_seconds": 5.0, "resumed": {"from_epoch": 8, "earlier_seconds": 1.0,
                                      "earlier_cpu_seconds": 3.0}}, True),     # the sum
    ({"cpu_seconds": 5.0, "resumed": {"from_epoch": 8, "earlier_seconds": 1.0,
                                      "earlier_cpu_seconds": None},
      "cpu_seconds_complete": False}, False),                                  # not kept
    ({"cpu_seconds": 5.0, "resumed": {"from_epoch": 8, "earlier_seconds": 1.0}}, False),  # older
])
def test_a_resumed_runs_cpu_seconds_are_marked_where_they_miss_its_earlier_calls(scan, summary,
                                                                                  complete):
    run = _Run([[0.4, 0.0]])
    run.summary = summary
    assert scan.cpu_complete(run) is complete
    assert scan.run_row(run)["cpu_complete"] is complete


def test_the_layer_table_gives_each_layers_top_two_and_bolds_the_pattern(scan):
    row = scan.run_row(_Run([[0.01, 0.02, 0.0], [0.40, 0.04, 0.03], [0.5, 0.3, 0.1]]))
    text = scan.layer_table({"h8x8-w64": [("rope", row)]})
    cells = text.splitlines()[2].split(" | ")
    assert cells[4:] == ["2.0 / 1.0", "**40.0 / 4.0**", "50.0 / 30.0 |"]


def test_the_seed_summary_counts_runs_with_a_single_head_layer_per_mode(scan):
    patterned = scan.run_row(_Run([[0.40, 0.01], [0.01, 0.0]]))   # layer 0 of 2: shallower half
    patterned["mean"] = dict(patterned["zero"], single=[])
    plain = scan.run_row(_Run([[0.40, 0.20], [0.01, 0.0]]))
    plain["acc"], plain["cpu_complete"] = 80.0, False
    text = scan.seed_summary({"h4x16-w64": [("absolute", patterned), ("absolute", plain)]}, 3)
    cells = text.splitlines()[2].split(" | ")
    assert cells[2:] == ["2", "85.0 [80.0, 90.0]", "1 of 2 / 0 of 1", "1",
                         f"{(0.40 / 0.41 + 0.40 / 0.60) / 2:.2f}", "1 (1 of 2) |"]


@pytest.mark.parametrize("name, first", [("paper-small", 0), ("paper-small-replicate", 2000)])
def test_the_report_stores_are_read_whole_as_the_h8x8_shape(scan, name, first):
    found = scan.report_results(ROOT / "docs/figures", name)
    assert sorted((r.role, r.seed) for r in found) == sorted(
        (role, first + k) for role in scan.ROLES for k in range(6))
    # each run was checked against the report plan's config; that plan is the scan's h8x8-w64
    # but for its seeds and ablation modes
    scan_cfgs = {e.tags["role"]: e.train for e in scan.plan("h8x8-w64", 1).experiments()}
    for e in scan.report_plan(first).experiments():
        assert e.train == scan_cfgs[e.tags["role"]].replace(seed=e.train.seed)


def test_the_pattern_table_counts_runs_and_the_shallower_half_per_role_and_regime(scan):
    deep = scan.run_row(_Run([[0.01, 0.0], [0.01, 0.0], [0.5, 0.0]]))    # layer 2 only
    shallow = scan.run_row(_Run([[0.5, 0.0], [0.01, 0.0], [0.01, 0.0]]))  # layer 0
    none = scan.run_row(_Run([[0.5, 0.3]]))
    text = scan.pattern_table({"a": [("rope", deep), ("rope", shallow), ("rope", none)],
                               "b": [("absolute", deep)], "c": []})
    head, _, rope, _, absolute, _ = text.splitlines()[2:]
    assert head == "| role | a | b |"
    assert rope == "| rope | 2 of 3 (1 in L0-1) | - |"
    assert absolute == "| absolute | - | 1 of 1 (0 in L0-1) |"
