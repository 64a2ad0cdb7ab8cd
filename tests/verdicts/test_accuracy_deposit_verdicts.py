"""Empirical claims judged on constructed sweep results: the ceiling rule both ways, the parts'
runs, and the accuracy table's bounded intervals and test-set standard errors."""

import math

import pytest
from synthetic_runs import result, sweep

from posenc.verdicts.accuracy_deposit import (accuracy_table, deposit_table, evaluate, layer_means,
                                             single_head_layers)
from posenc.verdicts.verdict import binomial_se

D = "distance"
OTHERS = ("nope", "absolute", "relative", "alibi")


def e10(rope, other):
    accs = {(D, "rope"): rope, **{(D, r): other for r in OTHERS}}
    return next(v for v in evaluate(sweep(accs)) if v.claim == "E10")


def test_every_pe_at_the_ceiling_gives_ceiling_not_a_verdict():
    # RoPE 100.0 vs 99.9: a consistent 0.1-point lead, which would otherwise be "confirmed"
    v = e10([1.0, 1.0, 1.0], [0.999, 0.9991, 0.999])
    assert v.verdict == "ceiling" and v.parts[0]["verdict"] == "ceiling"
    assert "98%" in v.parts[0]["note"]


def test_below_the_ceiling_the_same_lead_is_judged():
    v = e10([0.90, 0.901, 0.90], [0.80, 0.801, 0.80])  # consistent 10-point lead
    assert v.verdict == "confirmed"
    v = e10([0.99, 0.99, 0.99], [0.97, 0.971, 0.97])  # one PE under 98%: not a ceiling
    assert v.verdict == "confirmed"
    v = e10([0.99, 0.80, 0.95], [0.985, 0.99, 0.99])  # RoPE's mean 91% < 98: inconclusive
    assert v.verdict == "inconclusive"


def test_with_the_paper_sampler_the_ceiling_is_two_points_below_its_bayes_ceiling():
    """Both sides at ~96% on a task whose best possible accuracy is 97.5% (the paper's sampler):
    at the ceiling (threshold 95.5), where a fixed 98% would judge the 0.2-point lead."""
    def e10_at(bayes):
        accs = {(D, "rope"): [0.962, 0.9625, 0.962], **{(D, r): [0.96, 0.9605, 0.96] for r in OTHERS}}
        return next(v for v in evaluate(sweep(accs, bayes_ceiling=bayes)) if v.claim == "E10")
    paper = e10_at(0.975)
    assert paper.verdict == "ceiling" and paper.parts[0]["verdict"] == "ceiling"
    assert paper.parts[0]["note"].endswith(
        "average >= 95.5% (2 points below the task's Bayes ceiling as its runs recorded it, 97.5%)")
    assert e10_at(1.0).verdict == e10_at(None).verdict == "confirmed"  # clean: the 98% rule
    # one side under the paper task's threshold: judged
    accs = {(D, "rope"): [0.962] * 3, **{(D, r): [0.95, 0.951, 0.95] for r in OTHERS}}
    assert next(v for v in evaluate(sweep(accs, bayes_ceiling=0.975))
                if v.claim == "E10").verdict == "confirmed"


def test_each_pe_is_held_to_its_own_tasks_ceiling():
    """The recorded ceiling is read per (task, PE): one rule where the runs share it (three seeds
    and two of the same estimate), each PE's where they do not; a run without it: 100%."""
    from posenc.verdicts.accuracy_runs import Runs
    bayes = 0.9762323409778928  # paper-small's recorded estimate
    runs = Runs(sweep({(D, "rope"): [0.96] * 3, (D, "nope"): [0.05] * 2}, bayes_ceiling=bayes)
                + sweep({(D, "alibi"): [0.96] * 2}))
    assert runs.ceiling_threshold(D, "rope") == pytest.approx(95.623, abs=1e-3)
    assert runs.ceiling_threshold(D, "alibi") == 98.0
    assert runs.ceiling_rule(D, ("rope", "nope")).startswith(">= 95.6% (2 points below")
    assert runs.ceiling_rule(D, ("rope", "alibi")) == (
        ">= each PE's own threshold (rope >= 95.6% (2 points below the task's Bayes ceiling as "
        "its runs recorded it, 97.6%), alibi >= 98%)")


def test_a_margin_claim_stays_decidable_at_the_ceiling():
    accs = {(D, "rope"): [1.0, 1.0, 0.999], (D, "rope-1head"): [0.999, 1.0, 0.999],
            (D, "rope-2heads"): [1.0, 0.999, 1.0]}
    v = next(v for v in evaluate(sweep(accs)) if v.claim == "E14")
    assert v.verdict == "confirmed"


def test_parts_name_the_runs_they_need():
    v = e10([0.9, 0.8], [0.5, 0.6])
    assert v.parts[0]["task"] == D and set(v.parts[0]["roles"]) == {"rope", *OTHERS}


def test_accuracy_table_interval_stays_in_range_and_reports_the_test_se():
    table = accuracy_table(sweep({(D, "alibi"): [0.965, 0.855]}, n_test=900))
    row = table[D]["alibi"]
    assert row["mean"] == pytest.approx(91.0)
    assert 0 <= row["low"] < 85.5 and 96.5 < row["high"] <= 100
    assert row["test_se"] == pytest.approx((binomial_se(96.5, 900) + binomial_se(85.5, 900)) / 2)
    assert math.isclose(binomial_se(85.5, 900), 100 * math.sqrt(0.855 * 0.145 / 900))


def _deposit_runs(alibi_acc, chance, rope_acc=0.9, alibi_index=0.99):
    """RoPE with a clear deposit (index 0.8, drop 60 points) against absolute and relative PEs
    that spread it (0.3, 10 points) and an ALiBi run whose single-head numbers are extreme
    (index ``alibi_index``, drop 90 points) at accuracy ``alibi_acc``."""
    out = []
    for s in range(4):
        j = 0.01 * s
        out.append(result(D, "rope", s, rope_acc + j, drop=0.6 + j, index=0.8 + j, chance=chance))
        for role in ("absolute", "relative"):
            out.append(result(D, role, s, 0.5 + j, drop=0.1 + j, index=0.3 + j, chance=chance))
        out.append(result(D, "alibi", s, alibi_acc + j / 10, drop=0.9 - j, index=alibi_index - j,
                          chance=chance))
    return out


def test_a_pe_at_chance_leaves_the_additive_contrasts():
    # ALiBi at 2% with chance 1.4%: it learned nothing, and its 90-point "drop" is noise
    v = next(v for v in evaluate(_deposit_runs(0.02, 0.014)) if v.claim == "E12")
    assert v.verdict == "confirmed", v.parts
    assert all("alibi did not learn" in p["note"] for p in v.parts)
    # the same runs with the chance rate unrecorded: ALiBi counts, and its noise refutes E12 --
    # the filter is what decides here (and it fails if the filter is removed)
    runs = _deposit_runs(0.02, None)
    assert next(v for v in evaluate(runs) if v.claim == "E12").verdict == "against"
    # a learned ALiBi (50% against chance 1.4%) keeps its contrast, which refutes E12
    learned = next(v for v in evaluate(_deposit_runs(0.5, 0.014)) if v.claim == "E12")
    assert learned.verdict == "against"
    assert not any("did not learn" in p.get("note", "") for p in learned.parts)
    assert "against by rope - alibi" in learned.parts[1]["note"]


def test_within_the_margin_of_chance_is_not_learned():
    from posenc.verdicts.accuracy_deposit import LEARNED_MARGIN, Runs
    chance = 0.1
    just_below = chance + (LEARNED_MARGIN - 0.5) / 100
    just_above = chance + (LEARNED_MARGIN + 0.5) / 100
    runs = Runs([result(D, "alibi", 0, just_below, chance=chance),
                 result(D, "relative", 0, just_above, chance=chance),
                 result(D, "absolute", 0, 0.0)])
    assert not runs.learned(D, "alibi") and runs.learned(D, "relative")
    assert runs.learned(D, "absolute")  # chance not recorded: nothing excluded
    assert runs.not_learned(D, ("alibi", "relative", "absolute", "mla")) == ["alibi"]


def test_the_floor_is_the_larger_of_chance_and_the_length_only_rate():
    """A distance PE at 11% with chance 3.6% learned something by chance's measure but nothing
    of positions: the example's length alone gives 14.7% at the quick size."""
    from posenc.verdicts.accuracy_deposit import Runs
    runs = Runs([result(D, "relative", s, 0.11, chance=0.036, length_rate=0.147) for s in range(3)]
                + [result(D, "alibi", s, 0.11, chance=0.036) for s in range(3)]
                + [result(D, "rope", s, 0.25, chance=0.036, length_rate=0.147) for s in range(3)]
                + [result("count", "nope", s, 0.06, chance=0.04, length_rate=0.03)
                   for s in range(3)])
    assert runs.floor(D, "relative") == pytest.approx(14.7)
    assert runs.floor(D, "alibi") == pytest.approx(3.6)  # not recorded: chance alone
    assert runs.floor("count", "nope") == pytest.approx(4.0)  # the larger of the two
    assert not runs.learned(D, "relative") and runs.learned(D, "alibi")
    assert runs.learned(D, "rope") and not runs.learned("count", "nope")
    # the accuracy table shows it
    from posenc.verdicts.accuracy_deposit import accuracy_table
    table = accuracy_table([result(D, "relative", 0, 0.11, chance=0.036, length_rate=0.147)])
    row = table[D]["relative"]
    assert row["floor"] == pytest.approx(14.7) and row["learned"] is False


def test_a_deposit_claim_whose_rope_did_not_learn_is_inconclusive():
    runs = _deposit_runs(0.5, 0.014, rope_acc=0.02)
    runs += [result(D, "mla", s, 0.5, drop=0.1, index=0.3, chance=0.014) for s in range(4)]
    by = {v.claim: v for v in evaluate(runs)}
    for claim in ("E12", "NC2 (layer 0)"):
        assert by[claim].verdict == "inconclusive"
        assert all("rope did not learn" in p["note"] for p in by[claim].parts), by[claim].parts
    di, acc = by["E13"].parts
    assert di["verdict"] == "inconclusive" and "rope did not learn" in di["note"]
    # an accuracy margin keeps the PE (at chance is a result): measured, shown beside the primary
    assert acc["verdict"] == "shown" and acc["n"] == 4 and acc["interval"][0] > -10


def test_accuracy_table_reports_chance_and_learned():
    table = accuracy_table([result(D, "alibi", s, 0.02, chance=0.014) for s in range(2)]
                           + [result(D, "rope", s, 0.9, chance=0.014) for s in range(2)])
    assert table[D]["alibi"]["chance"] == pytest.approx(1.4)
    assert table[D]["alibi"]["learned"] is False and table[D]["rope"]["learned"] is True


def test_a_run_without_an_ablation_table_leaves_the_deposit_parts_on_its_seed():
    # a run that diverged to a non-finite model has no ablation: its seed is left out and named
    runs = [result(D, "rope", s, 0.9, drop=0.6, index=0.9) for s in range(4)] + \
        [result(D, r, s, 0.6, drop=0.1, index=0.3) for r in OTHERS for s in range(4)] + \
        [result(D, "mla", s, 0.85, drop=0.1, index=0.3) for s in range(4)]
    runs[1]["ablation"] = {}  # rope seed 1
    by = {v.claim: v for v in evaluate(runs)}
    for claim in ("E12", "E13"):
        part = by[claim].parts[0]
        assert part["seeds"] == [0, 2, 3], (claim, part)
        assert "no ablation table" in part["note"] and "[1]" in part["note"]
    assert by["E10"].parts[0]["n"] == 4  # the accuracy ordering keeps the seed


def test_the_ceiling_is_judged_on_the_two_sides_of_the_ordering():
    # RoPE 100% vs the best other (sinusoidal) at 99.5-99.7%: a ceiling, although NoPE, one of the
    # compared PEs, learned nothing (the old rule asked every compared PE to average >= 98%, so a
    # PE at chance turned a comparison of two solved models into "confirmed")
    accs = {(D, "rope"): [1.0, 1.0, 1.0], (D, "absolute"): [0.995, 0.996, 0.997],
            (D, "nope"): [0.12, 0.11, 0.12], (D, "relative"): [0.9, 0.95, 0.9],
            (D, "alibi"): [0.8, 0.8, 0.8]}
    v = next(v for v in evaluate(sweep(accs)) if v.claim == "E10")
    assert v.verdict == "ceiling" and "both sides" in v.parts[0]["note"]
    # the same lead below the ceiling is judged
    accs[(D, "absolute")] = [0.96, 0.961, 0.962]
    accs[(D, "rope")] = [0.975, 0.976, 0.977]
    assert next(v for v in evaluate(sweep(accs)) if v.claim == "E10").verdict == "confirmed"
    # the best other changes by seed: it is the per-seed maximum that must average >= 98%
    accs = {(D, "rope"): [1.0, 1.0, 1.0], (D, "absolute"): [0.99, 0.5, 0.99],
            (D, "relative"): [0.5, 0.99, 0.5], (D, "nope"): [0.1] * 3, (D, "alibi"): [0.1] * 3}
    assert next(v for v in evaluate(sweep(accs)) if v.claim == "E10").verdict == "ceiling"


def test_one_seed_is_never_a_ceiling_verdict():
    """Like every verdict, ``ceiling`` needs two seeds: one run at 100% vs 99% is one run, and a
    replication of one such run must not count as a decided claim."""
    v = e10([1.0], [0.99])
    assert v.verdict == "inconclusive" and v.parts[0]["n"] == 1
    assert e10([1.0, 1.0], [0.99, 0.99]).verdict == "ceiling"


def test_paper_code_runs_get_e10_for_the_code_rope_too():
    """trans.py's `rope` is RoPE plus its cat[sin, cos] table (posenc's absolute+rope role in
    paper-code mode): judged beside pure RoPE, only for paper-code runs."""
    accs = {(D, "rope"): [0.70, 0.71, 0.70], (D, "absolute+rope"): [0.93, 0.92, 0.93],
            **{(D, r): [0.80, 0.81, 0.80] for r in OTHERS}}
    runs = sweep(accs)
    assert "E10 (code rope)" not in {v.claim for v in evaluate(runs)}  # standard runs
    for r in runs:
        r["summary"]["code"] = "paper"
    by = {v.claim: v for v in evaluate(runs)}
    assert by["E10"].verdict == "against" and by["E10 (code rope)"].verdict == "confirmed"
    assert by["E10 (code rope)"].parts[0]["part"] == "absolute+rope - best other"


def test_e12_contrasts_rope_with_each_additive_pe_not_their_max():
    """RoPE's index 0.8 on 6 seeds; each additive PE spreads it (0.55) but has one noisy seed at
    0.85, a different seed for each PE.  Each contrast RoPE - PE is positive (+0.20 [+0.07,
    +0.33]), so RoPE concentrates more than each; the max of the three noisy indices exceeds
    RoPE's on half the seeds, and the old primary (RoPE - max over additive) was inconclusive --
    this test fails when the max is restored."""
    runs = []
    for s in range(6):
        runs.append(result(D, "rope", s, 0.9, drop=0.6, index=0.8))
        for i, role in enumerate(("absolute", "relative", "alibi")):
            runs.append(result(D, role, s, 0.9, drop=0.1, index=0.85 if s == i else 0.55))
    v = next(v for v in evaluate(runs) if v.claim == "E12")
    di = v.parts[1]
    assert di["primary"] and v.verdict == "confirmed"
    assert [c["part"] for c in di["conditions"]] == ["rope - absolute", "rope - relative",
                                                     "rope - alibi"]
    for c in di["conditions"]:
        assert c["verdict"] == "confirmed" and c["estimate"] == pytest.approx(0.2)
    from posenc.verdicts.verdict import judge
    old = [0.8 - max(0.85 if s == i else 0.55 for i in range(3)) for s in range(6)]
    assert judge(old)["verdict"] == "inconclusive"  # what the max over the additive PEs said


def test_a_layer_no_head_of_which_matters_has_no_deposit_index():
    # one 0.2-point drop makes the ratio 1.0: a number that looks like a single-head deposit
    runs = [result(D, "nope", 0, 0.045, drop=0.002, index=1.0),
            result(D, "nope", 1, 0.045, drop=0.049, index=0.9),
            result(D, "rope", 0, 0.9, drop=0.05, index=0.7),  # 5 points: it matters
            result(D, "rope", 1, 0.9, drop=0.60, index=0.5)]
    table = deposit_table(runs)
    assert table == {"nope": [[None], [None]], "rope": [[0.7], [0.5]]}
    assert layer_means(table["nope"]) == [(None, 0)]
    assert layer_means(table["rope"]) == [(pytest.approx(0.6), 2)]


def test_layer_means_count_the_seeds_where_a_layer_matters_against_a_loop():
    rows = [[0.9, None, 0.3], [None, None, 0.5], [0.5, None, None]]
    means = layer_means(rows)
    for layer, (mean, k) in enumerate(means):
        vals = [r[layer] for r in rows if r[layer] is not None]
        assert k == len(vals)
        assert (mean is None) == (not vals)
        if vals:
            assert mean == pytest.approx(sum(vals) / len(vals))
    assert means[0] == (pytest.approx(0.7), 2) and means[1] == (None, 0)


def _with_drops(role, seed, layers):
    r = result(D, role, seed, 0.9)
    r["ablation"]["zero"]["layers"] = [{"layer": l, "drops": drops, "largest_drop": max(drops),
                                        "deposit_index": 0.5, "runner_up_gap": 0.0,
                                        "deposit_head": 0, "baseline_acc": 0.9}
                                       for l, drops in enumerate(layers)]
    return r


def test_single_head_layers_need_one_large_drop_and_the_layers_others_small():
    runs = [_with_drops("rope", 0, [[0.30, 0.049, 0.0], [0.60, 0.05, 0.0], [0.299, 0.0, 0.0]]),
            _with_drops("rope", 1, [[0.10, 0.0, 0.0], [0.45, 0.02, 0.01], [0.0, 0.0, 0.0]]),
            _with_drops("absolute", 0, [[0.80, 0.76, 0.0], [0.81, 0.004, 0.0], [0.0, 0.0, 0.0]])]
    # layer 0 of rope seed 0: 30 points and 4.9 -- the pattern; layer 1: its runner-up is 5 points;
    # layer 2: 29.9 points; absolute layer 0: two heads each fatal, layer 1: one head alone
    assert single_head_layers(runs) == {"absolute": [[1]], "rope": [[0], [1]]}


def test_single_head_layers_against_a_loop_over_heads():
    import random
    rng = random.Random(7)
    for _ in range(200):
        layers = [[rng.choice([0.0, 0.02, 0.049, 0.05, 0.2, 0.3, 0.7]) for _ in range(4)]
                  for _ in range(3)]
        want = []
        for l, drops in enumerate(layers):
            big = [h for h, d in enumerate(drops) if 100 * d >= 30]
            for h in big:
                if all(100 * drops[o] < 5 for o in range(4) if o != h):
                    want.append(l)
                    break
        assert single_head_layers([_with_drops("rope", 0, layers)]) == {"rope": [want]}


def test_a_run_without_per_head_drops_is_marked_not_counted():
    assert single_head_layers([result(D, "rope", 0, 0.9)]) == {"rope": [None]}


def test_e10_with_mla_among_the_competitors_is_its_own_reading():
    """The paper's table holds MLA: with MLA ahead of RoPE on every seed, the additive-only
    reading (E10) is confirmed and the table's reading (E10 (with MLA)) is decided against; in
    paper-code mode the same two readings for trans.py's rope.  Fails when MLA is left out of the
    second reading or put into the first."""
    accs = {(D, "rope"): [0.90, 0.91, 0.90], (D, "absolute+rope"): [0.92, 0.93, 0.92],
            (D, "mla"): [0.95, 0.96, 0.95], **{(D, r): [0.80, 0.81, 0.80] for r in OTHERS}}
    runs = sweep(accs)
    for r in runs:
        r["summary"]["code"] = "paper"
    by = {v.claim: v for v in evaluate(runs)}
    assert by["E10"].verdict == "confirmed" and by["E10 (with MLA)"].verdict == "against"
    assert by["E10 (code rope)"].verdict == "confirmed"
    assert by["E10 (code rope, with MLA)"].verdict == "against"
    assert by["E10 (with MLA)"].parts[0]["roles"] == ["rope", *OTHERS, "mla"]
    assert "mla" not in by["E10"].parts[0]["roles"]
    assert by["E10 (with MLA)"].parts[0]["values"] == pytest.approx([-5.0, -5.0, -5.0])


def test_e12_and_e13_are_read_for_the_paper_codes_rope_model_on_its_own_runs():
    """In paper-code mode E12 and E13 are read for trans.py's ``rope`` model (absolute+rope,
    the model the paper's transvis.py ablates) beside posenc's RoPE: here RoPE spreads (index
    0.5, below the additive PEs' 0.6 and MLA's 0.55) and trans.py's rope concentrates (0.9), so
    each reading must read its own model's runs.  Standard runs get no such reading."""
    runs = []
    for s in range(4):
        runs.append(result(D, "rope", s, 0.9, drop=0.5, index=0.5 - 0.01 * s))
        runs.append(result(D, "absolute+rope", s, 0.95, drop=0.6, index=0.9 - 0.01 * s))
        runs.append(result(D, "mla", s, 0.88, drop=0.3, index=0.55))
        runs += [result(D, r, s, 0.85, drop=0.3, index=0.6) for r in ("absolute", "relative",
                                                                      "alibi")]
    assert not {"E12 (code rope)", "E13 (code rope)"} & {v.claim for v in evaluate(runs)}
    for r in runs:
        r["summary"]["code"] = "paper"
    by = {v.claim: v for v in evaluate(runs)}
    assert by["E12"].verdict == "against" and by["E12 (code rope)"].verdict == "confirmed"
    di = by["E12 (code rope)"].parts[1]
    assert [c["part"] for c in di["conditions"]] == [
        "absolute+rope - absolute", "absolute+rope - relative", "absolute+rope - alibi"]
    assert di["conditions"][0]["values"] == pytest.approx([0.3 - 0.01 * s for s in range(4)])
    assert by["E13"].verdict == "against" and by["E13 (code rope)"].verdict == "confirmed"
    assert by["E13 (code rope)"].parts[0]["values"] == pytest.approx(
        [0.35 - 0.01 * s for s in range(4)])
    assert by["E13 (code rope)"].parts[1]["values"] == pytest.approx([-7.0] * 4)
    assert by["E13"].parts[1]["values"] == pytest.approx([-2.0] * 4)
    assert by["E13 (code rope)"].parts[0]["roles"] == ["absolute+rope", "mla"]
    shown = by["E12 (code rope)"].parts[0]
    assert [c["part"] for c in shown["conditions"]] == [
        "absolute+rope - absolute", "absolute+rope - relative", "absolute+rope - alibi"]
    assert shown["conditions"][0]["values"] == pytest.approx([30.0] * 4)  # 60 - 30 (RoPE: 20)
