"""The report's E13-both-ways section on constructed runs: each mode's MLA deposit per seed,
DI(rope) - DI(mla) with each, "not measured" for a missing table, the mean over the seeds that
have it, and no section without MLA runs."""

from synthetic_runs import result

from posenc.report.mla_both_ways import NOT_MEASURED, SECTION, mla_both_ways_markdown

D = "distance"


def _layer(layer, drops):
    d = sorted(drops, reverse=True)
    pos = sum(max(x, 0.0) for x in drops)
    return {"layer": layer, "baseline_acc": 0.9, "drops": drops, "largest_drop": max(drops),
            "deposit_head": drops.index(max(drops)), "runner_up_gap": d[0] - d[1],
            "deposit_index": max(drops) / pos}


def _runs(latent_on_seed_1):
    zero = [_layer(0, [0.05, 0.05, 0.0, 0.0]), _layer(1, [0.2, 0.2, 0.1, 0.0])]  # DI 0.4, layer 1
    latent = [_layer(0, [0.6, 0.1, 0.0, 0.0]), _layer(1, [0.05, 0.0, 0.0, 0.0])]  # DI 6/7, layer 0
    out = [result(D, "rope", s, 0.95, drop=0.6, index=0.9) for s in (0, 1)]
    for seed in (0, 1):
        mla = result(D, "mla", seed, 0.9)
        mla["ablation"] = {"zero": {"layers": zero}}
        if seed == 0 or latent_on_seed_1:
            mla["ablation"]["latent-columns"] = {"layers": latent}
        out.append(mla)
    return out


def test_each_seed_shows_both_modes_and_a_missing_table_is_not_measured():
    lines, entry = mla_both_ways_markdown(_runs(latent_on_seed_1=False))
    assert lines[0] == SECTION
    rows = [x for x in lines if x.startswith("| 0 |") or x.startswith("| 1 |")]
    assert rows[0] == ("| 0 | layer 1, head 0: 20.0 pts, DI 0.40 | layer 0, block 0: 60.0 pts, "
                       "DI 0.86 | +0.50 | +0.04 |")
    assert rows[1].endswith(f"| {NOT_MEASURED} | +0.50 | {NOT_MEASURED} |")
    summary = next(x for x in lines if x.startswith("- DI(rope) - DI(mla) over seeds"))
    assert "heads: +0.50 (range +0.50 to +0.50; 2 seeds)" in summary
    assert "latent columns: +0.04 (range +0.04 to +0.04; 1 seed)" in summary
    assert entry["measured"] == {"zero": 2, "latent-columns": 1}
    assert entry["seeds"][1]["rope - mla latent-columns"] is None


def test_no_mla_runs_no_section():
    rope_only = [r for r in _runs(True) if r["summary"]["pe"] == "rope"]
    assert mla_both_ways_markdown(rope_only) == ([], {})
