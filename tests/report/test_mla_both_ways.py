"""The report's E13-both-ways section: each mode's MLA deposit per seed, DI(rope) - DI(mla) with
each, the mean and range over the seeds that have it, "not measured" for an MLA run without a
mode's table and "no RoPE table" for a seed without RoPE's; no section without MLA runs; and on
the committed paper-small report, the heads column equals E13's own per-seed statistic."""

import json
from pathlib import Path

import pytest
from synthetic_runs import result

from posenc.report.mla_both_ways import NO_ROPE, NOT_MEASURED, SECTION, mla_both_ways_markdown

D = "distance"
ROOT = Path(__file__).resolve().parents[2]


def _layer(layer, drops):
    d = sorted(drops, reverse=True)
    pos = sum(max(x, 0.0) for x in drops)
    return {"layer": layer, "baseline_acc": 0.9, "drops": drops, "largest_drop": max(drops),
            "deposit_index": max(drops) / pos, "deposit_head": drops.index(max(drops)),
            "runner_up_gap": d[0] - d[1]}


#: seed -> (RoPE's deposit index or None for no RoPE run, MLA's zero drops of its deposit
#: layer, MLA's latent-columns drops or None for no table)
SEEDS = {0: (0.9, [0.2, 0.2, 0.1, 0.0], [0.6, 0.1, 0.0, 0.0]),    # mla DI 0.4, latent 6/7
         1: (0.7, [0.5, 0.1, 0.0, 0.0], [0.3, 0.3, 0.2, 0.2]),    # mla DI 5/6, latent 0.3
         2: (0.6, [0.1, 0.1, 0.1, 0.1], None),                    # mla DI 0.25, no latent table
         3: (None, [0.3, 0.1, 0.0, 0.0], [0.2, 0.0, 0.0, 0.0])}   # no RoPE run


def _runs():
    out = []
    for seed, (rope, zero, latent) in SEEDS.items():
        if rope is not None:
            out.append(result(D, "rope", seed, 0.95, drop=0.6, index=rope))
        mla = result(D, "mla", seed, 0.9)
        mla["ablation"] = {"zero": {"layers": [_layer(0, [0.01, 0.0, 0.0, 0.0]), _layer(1, zero)]}}
        if latent is not None:
            mla["ablation"]["latent-columns"] = {"layers": [_layer(0, latent)]}
        out.append(mla)
    return out


def _row(lines, seed):
    return next(x for x in lines if x.startswith(f"| {seed} |"))


def test_each_seed_shows_both_modes_and_says_what_is_missing():
    lines, entry = mla_both_ways_markdown(_runs())
    assert lines[0] == SECTION
    assert _row(lines, 0) == ("| 0 | layer 1, head 0: 20.0 pts, DI 0.40 | layer 0, block 0: 60.0 "
                              "pts, DI 0.86 | +0.50 | +0.04 |")
    assert _row(lines, 1).endswith("| -0.13 | +0.40 |")
    assert _row(lines, 2).endswith(f"| {NOT_MEASURED} | +0.35 | {NOT_MEASURED} |")
    assert _row(lines, 3).endswith(f"DI 1.00 | {NO_ROPE} | {NO_ROPE} |")  # both MLA tables there
    summary = next(x for x in lines if x.startswith("- DI(rope) - DI(mla) over seeds"))
    heads = (0.9 - 0.4 + 0.7 - 5 / 6 + 0.6 - 0.25) / 3
    assert f"heads: {heads:+.2f} (range -0.13 to +0.50; 3 seeds)" in summary
    latent = (0.9 - 6 / 7 + 0.7 - 0.3) / 2
    assert f"latent columns: {latent:+.2f} (range +0.04 to +0.40; 2 seeds)" in summary
    assert entry["task"] == D and entry["measured"] == {"zero": 3, "latent-columns": 2}
    by_seed = {s["seed"]: s for s in entry["seeds"]}
    assert by_seed[2]["mla"]["latent-columns"] is None
    assert by_seed[1]["mla"]["zero"]["index"] == pytest.approx(5 / 6)
    assert by_seed[3]["rope - mla zero"] is None


def test_no_mla_runs_no_section():
    rope_only = [r for r in _runs() if r["summary"]["pe"] == "rope"]
    assert mla_both_ways_markdown(rope_only) == ([], {})


def test_the_committed_report_shows_e13s_own_statistic_in_the_heads_column():
    report = json.loads((ROOT / "docs/figures/paper-small/report/report.json").read_text())
    e13 = next(v for v in report["verdicts"] if v["claim"] == "E13")
    primary = next(p for p in e13["parts"] if p["primary"])
    both = {s["seed"]: s["rope - mla zero"] for s in report["e13_both_ways"]["seeds"]}
    assert [both[s] for s in primary["seeds"]] == pytest.approx(primary["values"])
    assert SECTION in (ROOT / "docs/figures/paper-small/report/report.md").read_text()
    # and the code-rope columns hold E13 (code rope)'s own statistic
    e13 = next(v for v in report["verdicts"] if v["claim"] == "E13 (code rope)")
    primary = next(p for p in e13["parts"] if p["primary"])
    both = {s["seed"]: s["absolute+rope - mla zero"] for s in report["e13_both_ways"]["seeds"]}
    assert [both[s] for s in primary["seeds"]] == pytest.approx(primary["values"])


def test_paper_code_runs_read_trans_pys_rope_both_ways_beside_ropes():
    """In paper-code mode the section has trans.py's rope (absolute+rope) beside RoPE: two more
    columns from that model's own runs; standard runs do not get them."""
    runs = _runs()
    for seed in (0, 1):
        runs.append(result(D, "absolute+rope", seed, 0.95, drop=0.6, index=0.5))
    plain, _ = mla_both_ways_markdown(runs)
    assert "DI(absolute+rope)" not in plain[4] and plain[4].count("|") == 6
    for r in runs:
        r["summary"]["code"] = "paper"
    lines, entry = mla_both_ways_markdown(runs)
    assert "DI(rope) - DI(mla, heads) | DI(rope) - DI(mla, latent columns) | DI(absolute+rope) " \
           "- DI(mla, heads) | DI(absolute+rope) - DI(mla, latent columns) |" in lines[4]
    assert _row(lines, 0).endswith("| +0.50 | +0.04 | +0.10 | -0.36 |")   # 0.5 - 0.4, 0.5 - 6/7
    assert _row(lines, 2).endswith(f"| {NOT_MEASURED} | {NO_ROPE} | {NO_ROPE} |")
    by_seed = {s["seed"]: s for s in entry["seeds"]}
    assert by_seed[1]["absolute+rope - mla zero"] == pytest.approx(0.5 - 5 / 6)
    assert by_seed[1]["rope - mla zero"] == pytest.approx(0.7 - 5 / 6)
    assert entry["measured_by_role"]["absolute+rope"] == {"zero": 2, "latent-columns": 2}
    assert any(x.startswith("- DI(absolute+rope) - DI(mla) over seeds, heads: ") for x in lines)
