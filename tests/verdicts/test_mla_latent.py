"""E13 read both ways on constructed results: MLA's deposit from the zero and the latent-columns
tables, DI(rope) - DI(mla) with each, and None where a table is missing."""

import pytest
from synthetic_runs import result

from posenc.verdicts.mla_latent import e13_index_both_ways, mla_deposit_both_ways

D = "distance"


def _layer(layer, drops):
    d = sorted(drops, reverse=True)
    pos = sum(max(x, 0.0) for x in drops)
    return {"layer": layer, "baseline_acc": 0.9, "drops": drops, "largest_drop": max(drops),
            "deposit_head": drops.index(max(drops)), "runner_up_gap": d[0] - d[1],
            "deposit_index": max(max(drops), 0.0) / pos if pos else 0.0}


def _mla(seed, zero, latent):
    res = result(D, "mla", seed, 0.9)
    res["ablation"] = {"zero": {"layers": zero}}
    if latent is not None:
        res["ablation"]["latent-columns"] = {"layers": latent}
    return res


def results():
    # seed 0: heads spread (index 0.25 in layer 1), latent columns concentrated in layer 0
    # (index 0.8; variants 2, 3 remove nothing); seed 1: no latent-columns table
    zero0 = [_layer(0, [0.01, 0.0, 0.0, 0.0]), _layer(1, [0.1, 0.1, 0.1, 0.1])]
    latent0 = [_layer(0, [0.4, 0.1, 0.0, 0.0]), _layer(1, [0.05, 0.0, 0.0, 0.0])]
    rope = [result(D, "rope", s, 0.95, drop=0.6, index=0.9) for s in (0, 1)]
    return rope + [_mla(0, zero0, latent0), _mla(1, zero0, None)]


def test_mla_deposit_both_ways_reads_each_modes_table():
    both = mla_deposit_both_ways(results())
    assert sorted(both) == [0, 1]
    z, lc = both[0]["zero"], both[0]["latent-columns"]
    assert (z["layer"], z["index"], z["drop"]) == (1, pytest.approx(0.25), pytest.approx(10.0))
    assert (lc["layer"], lc["index"], lc["drop"], lc["head"]) == \
        (0, pytest.approx(0.8), pytest.approx(40.0), 0)
    assert both[1]["latent-columns"] is None and both[1]["zero"]["index"] == pytest.approx(0.25)


def test_e13_index_both_ways():
    rows = e13_index_both_ways(results())
    assert rows[0] == {"rope": 0.9, "mla zero": pytest.approx(0.25),
                       "mla latent-columns": pytest.approx(0.8),
                       "rope - mla zero": pytest.approx(0.65),
                       "rope - mla latent-columns": pytest.approx(0.1)}
    assert rows[1]["mla latent-columns"] is None and rows[1]["rope - mla latent-columns"] is None
    assert rows[1]["rope - mla zero"] == pytest.approx(0.65)
    assert e13_index_both_ways(results()[2:]) == {}  # no rope runs: no shared seeds
