"""Verdicts of the claims measured as the paper states them (posenc.verdicts.measured), on
constructed results: each statistic comes out both ways, and runs without the new recordings
give "inconclusive (not recorded)" instead of an error."""

import pytest
from hypothesis import given, settings, strategies as st

from posenc.empirical.pipeline.experiment_result import ExperimentResult
from posenc.empirical.training.schedule import OptimizerSchedule
from posenc.verdicts import measured
from posenc.verdicts.drift_null import null_attenuation
from posenc.verdicts.accuracy_deposit import Runs, evaluate
from posenc.verdicts.measured import evaluate_measured, retained_excess, span_drop


def run(task, role, seed, acc=0.9, drops=(0.1,), index=0.5, share=None, trace=None, chance=None,
        span_chance=None, schedule=None, table_mean=None):
    layers = [{"layer": l, "largest_drop": d, "deposit_index": index, "runner_up_gap": 0.0,
               "deposit_head": 0, "baseline_acc": acc} for l, d in enumerate(drops)]
    res = {"summary": {"task": task, "pe": role, "seed": seed, "preset": "smoke",
                       "test_acc": acc, "n_test": 900, "tags": {"role": role},
                       **({"chance": chance} if chance is not None else {})},
           "ablation": {"zero": {"layers": layers}},
           "probe": {"probe_r2": {"embed": 1.0}, **({"pe_span_share": share} if share else {}),
                     **({"pe_span_chance": span_chance} if span_chance is not None else {})}}
    if trace is not None:
        res["trace"] = trace
    if schedule is not None:
        res["summary"]["schedule"] = schedule.to_dict()
    if table_mean is not None:
        res["table_mean"] = {"test_acc": table_mean[0], "baseline_acc": table_mean[1],
                             "n_test": 900}
    return ExperimentResult.from_stored(res)


def verdicts(results):
    return {v.claim: v for v in evaluate_measured(Runs(results))}


def shares(embed, after):
    return {"embed": embed, "block0": embed, **{f"block{l}": a for l, a in enumerate(after, 1)}}


def test_span_drop_is_the_input_share_minus_the_mean_after_layer_2():
    assert span_drop(run("distance", "x", 0, share=shares(0.9, [0.5, 0.3]))) == pytest.approx(0.5)
    assert span_drop(run("distance", "x", 0)) is None  # an old probe without the share


def eh_runs(hybrid_after, sinusoidal_after, chance=0.15, seeds=3):
    results = []
    for s in range(seeds):
        results.append(run("distance", "absolute", s, span_chance=chance,
                           share=shares(0.9, [sinusoidal_after + 0.01 * s] * 3)))
        results.append(run("distance", "absolute+rope", s, span_chance=chance,
                           share=shares(0.9, [hybrid_after + 0.005 * s] * 3)))
    return results


@pytest.mark.parametrize("hybrid_after,expected", [(0.2, "confirmed"), (0.85, "against")])
def test_eh_judges_the_hybrids_share_against_chance(hybrid_after, expected):
    v = verdicts(eh_runs(hybrid_after, 0.6))["EH"]
    assert v.verdict == expected and v.parts[0]["primary"]
    # R = (after - chance) / (input - chance): the input's excess over chance still in the span
    assert v.parts[0]["values"][0] == pytest.approx((hybrid_after - 0.15) / (0.9 - 0.15))
    # the comparison with the sinusoidal-only model, shown beside it
    assert v.parts[1]["values"][0] == pytest.approx((0.9 - hybrid_after) - (0.9 - 0.6))
    assert v.parts[1]["verdict"] == "shown"


def test_eh_is_refuted_when_the_hybrid_displaces_more_than_sinusoidal_but_keeps_half():
    """The hybrid's share after layer 2 at 0.5 (R ~ 0.47) while the sinusoidal model keeps 0.6:
    the old primary (the drop against sinusoidal, +0.1 on every seed) said "confirmed"; the
    statement "vanish after layer 2" is refuted (this test fails when the old one is primary)."""
    v = verdicts(eh_runs(0.5, 0.6))["EH"]
    assert v.parts[1]["interval"][0] > 0  # what the old primary judged: confirmed
    assert v.verdict == "against"
    # a probe without the chance share (runs before it was recorded): not recorded
    bare = [run(r.task, r.role, r.seed, share=r.probe["pe_span_share"])
            for r in eh_runs(0.5, 0.6)]
    v = verdicts(bare)["EH"]
    assert v.verdict == "inconclusive" and "not recorded" in v.parts[0]["note"]


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 0.3), st.floats(0.0, 1.0), st.floats(0.5, 1.0))
def test_retained_excess_is_zero_at_chance_and_one_without_displacement(chance, frac, embed):
    """R is 0 when the share after layer 2 is at chance, 1 when it equals the input's, and
    linear between (the input's excess over chance that is left)."""
    after = chance + frac * (embed - chance)
    r = run("distance", "absolute+rope", 0, span_chance=chance, share=shares(embed, [after] * 3))
    assert retained_excess(r) == pytest.approx(frac, abs=1e-9)


def test_eh_on_runs_without_the_share_is_not_recorded():
    results = [run("distance", r, s) for r in ("absolute", "absolute+rope") for s in (0, 1)]
    v = verdicts(results)["EH"]
    assert v.verdict == "inconclusive" and "not recorded" in v.parts[0]["note"]
    # and the whole evaluation (E10-E14 too) does not fail on such runs
    assert {x.claim for x in evaluate(results)} >= {"EH", "NC1", "NC2 (layer 0)", "NC2 (layer 1)",
                                                   "NC2 (shallower half)", "NC3", "S", "RA"}


@pytest.mark.parametrize("count_index,expected", [(0.2, "confirmed"), (0.95, "against")])
def test_nc1_count_deposit(count_index, expected):
    results = []
    for s in range(3):
        results.append(run("distance", "rope", s, drops=(0.6 + 0.01 * s,), index=0.8 + 0.01 * s))
        results.append(run("count", "rope", s, drops=(0.6 + count_index - 0.5 + 0.02 * s,),
                           index=count_index))
    v = verdicts(results)["NC1"]
    assert v.parts[0]["verdict"] == expected
    assert v.parts[0]["configs"] == [["distance", "rope"], ["count", "rope"]]
    # seeds only on one task: nothing to compare
    lone = verdicts([run("distance", "rope", 0), run("count", "rope", 1)])["NC1"]
    assert lone.verdict == "inconclusive" and lone.parts[0]["n"] == 0


@pytest.mark.parametrize("drops,expected", [((0.7, 0.1, 0.05), "confirmed"),
                                            ((0.05, 0.6, 0.1), "against")])
def test_nc2_deposit_depth(drops, expected):
    results = [run("distance", "rope", s, drops=tuple(d + 0.01 * s * (i == 0)
                                                      for i, d in enumerate(drops)))
               for s in range(3)]
    v = verdicts(results)["NC2 (layer 0)"]
    assert v.verdict == expected
    assert v.parts[0]["values"][0] == pytest.approx(100 * (drops[0] - max(drops[1:])))


@pytest.mark.parametrize("learned_acc,learned_index,expected",
                         [(0.6, 0.3, "confirmed"), (0.99, 0.95, "against")])
def test_nc3_learned_absolute(learned_acc, learned_index, expected):
    results = []
    for s in range(3):
        results.append(run("distance", "rope", s, acc=0.9 + 0.01 * s, index=0.8 + 0.01 * s))
        results.append(run("distance", "learned", s, acc=learned_acc, index=learned_index))
    assert verdicts(results)["NC3"].verdict == expected


def trace(cv, spikes, t90, att=None, epochs=3, steps=None):
    """A run's trace summary: whole-run CV ``cv`` and, per epoch, CV ``cv`` after a first
    (warm-up) epoch of 9.0 that S's matched window leaves out; ``steps`` trained."""
    out = {"grad_norm_cv": cv, "spike_rate": spikes, "steps_to_90": t90,
           "grad_norm_epoch_cv": [9.0] + [cv] * (epochs - 1),
           **({"steps": steps} if steps is not None else {})}
    if att is not None:
        out["tables"] = {"log_attenuation": att, "centred_rms": [1.0, 1.0]}
    return out


@pytest.mark.parametrize("rope,expected", [((0.1, 0.0, 0.2), "confirmed"),
                                           ((0.9, 0.5, 0.9), "against")])
def test_stability_rope_against_every_additive_pe(rope, expected):
    results = []
    for s in range(3):
        e = 0.01 * s
        results.append(run("distance", "rope", s, trace=trace(rope[0] + e, rope[1] + e, rope[2] + e)))
        for i, r in enumerate(("absolute", "relative", "alibi")):
            results.append(run("distance", r, s, trace=trace(0.4 + 0.1 * i, 0.1 + 0.1 * i, 0.5)))
    v = verdicts(results)["S"]
    assert [p["verdict"] for p in v.parts] == [expected, "shown", "shown"] and v.verdict == expected
    # (a), matched epochs, is against the additive PE with the smallest CV (0.4), not their mean
    assert v.parts[0]["values"][0] == pytest.approx(0.4 - rope[0])
    assert v.parts[1]["values"][0] == pytest.approx(0.4 - rope[0])        # (b) whole-run, shown


def test_stability_does_not_judge_steps_to_90():
    """Steps to 90% of a PE's own final accuracy is not comparable across PEs that learn to
    different levels (one that stays near chance gets there first): it cannot refute S."""
    results = []
    for s in range(3):
        e = 0.01 * s
        results.append(run("distance", "rope", s, trace=trace(0.4 + e, 0.0, 0.9 + e)))
        for r in ("absolute", "relative", "alibi"):
            results.append(run("distance", r, s, trace=trace(0.4 + e, 0.0, 0.1)))
    v = verdicts(results)["S"]
    assert len(v.parts) == 3 and v.verdict == "inconclusive"
    assert "steps to 90%" not in v.measured


def test_stability_without_a_trace_is_not_recorded():
    results = [run("distance", r, s) for r in ("rope", "absolute", "relative", "alibi")
               for s in (0, 1)]
    v = verdicts(results)["S"]
    assert v.verdict == "inconclusive"
    assert all("not recorded" in p["note"] for p in v.parts)


#: a short schedule for RA's drift null (200 steps: A_null 1.53 after 200 and 160 steps, 1.48
#: after 100)
SCHEDULE = OptimizerSchedule(lr=1e-2, betas=(0.9, 0.98), weight_decay=1e-5, warmup_frac=0.06,
                             epochs=10, steps_per_epoch=20)
STEPS = (200, 160, 100)  # per seed: runs stopped early trained fewer steps


def ra_runs(count, distance, table_mean=None, schedule=SCHEDULE):
    """Relative-PE runs on both tasks, seeds 0-2: A(count) = count + 0.01 s, A(distance) =
    ``distance``, each seed's steps from STEPS; ``table_mean``: per seed (flattened, as trained)
    accuracies of the count runs, or None (not recorded)."""
    results = []
    for s in range(3):
        results.append(run("count", "relative", s, schedule=schedule,
                           table_mean=None if table_mean is None else table_mean[s],
                           trace=trace(0.1, 0, 0.5, count + 0.01 * s, steps=STEPS[s])))
        results.append(run("distance", "relative", s, schedule=schedule,
                           trace=trace(0.1, 0, 0.5, distance, steps=STEPS[s])))
    return results


@pytest.mark.parametrize("count,expected", [(0.5, "confirmed"), (2.5, "against")])
def test_relative_table_attenuation_is_judged_beyond_drift(count, expected):
    v = verdicts(ra_runs(count, 1.0))["RA"]
    assert [p["verdict"] for p in v.parts] == [expected, "shown", "shown", "shown"]
    assert v.verdict == expected
    # (a) each seed's A minus the drift null of its own schedule and trained steps
    assert v.parts[0]["values"] == pytest.approx(
        [count + 0.01 * s - null_attenuation(SCHEDULE, STEPS[s]) for s in range(3)])
    assert v.parts[1]["values"][0] == pytest.approx(count - 1.0)
    # (c) the old primary, shown: in units of the run-to-run noise (the seeds' sd, 0.01 here)
    assert v.parts[2]["noise"] == pytest.approx(0.01) and not v.parts[2]["primary"]
    assert v.parts[2]["estimate"] == pytest.approx((count + 0.01) / 0.01)
    # (d) runs measured before the flattened accuracy was recorded: not recorded, no error
    assert "not recorded" in v.parts[3]["note"] and v.parts[3]["n"] == 0
    # a trace without tables (a relative PE that is not a learned table): not recorded
    bare = [run(t, "relative", s, schedule=SCHEDULE, trace=trace(0.1, 0, 0.5, steps=200))
            for t in ("count", "distance") for s in (0, 1)]
    v = verdicts(bare)["RA"]
    assert v.verdict == "inconclusive" and "not recorded" in v.parts[0]["note"]
    # a result read without its schedule (neither recorded nor read from its config)
    v = verdicts(ra_runs(count, 1.0, schedule=None))["RA"]
    assert v.verdict == "inconclusive" and "no optimiser schedule" in v.parts[0]["note"]


def test_ra_judges_the_table_against_a_table_of_noise_not_against_no_change(monkeypatch):
    """A(count) 0.50-0.52: the table grew, which the old primary (mean A / sd > -1) and a
    comparison with no change both call refuted; AdamW grows a table of pure noise by A_null
    1.48-1.53 in the same steps, so the trained table was held back: attenuated beyond drift,
    confirmed.  With the null swapped for zero drift (the old reading) the verdict flips."""
    results = ra_runs(0.5, 1.0)
    v = verdicts(results)["RA"]
    assert v.verdict == "confirmed"
    assert v.parts[2]["interval"][0] > -1.0  # what the old primary judged: refuted
    monkeypatch.setattr(measured, "null_attenuation", lambda schedule, steps: 0.0)
    assert verdicts(results)["RA"].verdict == "against"


def test_ra_shows_the_count_accuracy_with_flattened_tables():
    """(d): the count test accuracy with each head's table replaced by its mean minus as
    trained, in points, shown beside the judged part; a seed without it is named."""
    flat = [(0.60, 0.90), (0.62, 0.91), (0.59, 0.90)]
    v = verdicts(ra_runs(0.5, 1.0, table_mean=flat))["RA"]
    d = v.parts[3]
    assert d["verdict"] == "shown" and d["values"] == pytest.approx([-30.0, -29.0, -31.0])
    assert "tables flattened" in v.measured and v.verdict == "confirmed"
    v = verdicts(ra_runs(0.5, 1.0, table_mean=flat[:2] + [None]))["RA"]
    assert v.parts[3]["n"] == 2 and "not recorded" in v.parts[3]["note"] \
        and "seed(s) [2]" in v.parts[3]["note"]


def test_the_deposit_parts_leave_out_a_pe_that_did_not_learn():
    """Each deposit part names the runs it needs learned: NC1 the count RoPE too (a count model
    at chance has no deposit to compare), NC3 (b) the learned absolute PE, E13 (a) MLA.  The same
    runs with the PE learned are judged (the filter decides, not missing data)."""
    def nc1(count_acc):
        results = []
        for s in range(3):
            results.append(run("distance", "rope", s, drops=(0.6 + 0.01 * s,), index=0.8 + 0.01 * s,
                               chance=0.025))
            results.append(run("count", "rope", s, acc=count_acc, drops=(0.1,), index=0.2,
                               chance=0.06))
        return verdicts(results)["NC1"]
    assert all("count/rope did not learn" in p["note"] for p in nc1(0.07).parts)
    assert nc1(0.9).verdict == "confirmed"

    def nc3(learned_acc):
        results = []
        for s in range(3):
            results.append(run("distance", "rope", s, acc=0.9 + 0.01 * s, index=0.8 + 0.01 * s,
                               chance=0.025))
            results.append(run("distance", "learned", s, acc=learned_acc, index=0.95, chance=0.025))
        return verdicts(results)["NC3"].parts[1]
    assert nc3(0.03)["verdict"] == "inconclusive" and "learned did not learn" in nc3(0.03)["note"]
    assert nc3(0.6)["verdict"] == "against"  # learned, and more concentrated than RoPE

    def e13a(mla_acc):
        results = []
        for s in range(3):
            results.append(run("distance", "rope", s, acc=0.9, index=0.8 + 0.01 * s, chance=0.025))
            results.append(run("distance", "mla", s, acc=mla_acc, index=0.3, chance=0.025))
        return next(v for v in evaluate(results) if v.claim == "E13").parts[0]
    assert e13a(0.03)["verdict"] == "inconclusive" and "mla did not learn" in e13a(0.03)["note"]
    assert e13a(0.85)["verdict"] == "confirmed"


def test_nc1_is_not_confirmed_by_its_secondary_part_alone():
    """NC1's judged part is the deposit index; the top drop (distance - count, 50 points on every
    seed here) is shown beside it and cannot confirm the claim when the index does not move."""
    results = []
    for s in range(3):
        results.append(run("distance", "rope", s, drops=(0.6 + 0.01 * s,), index=0.5 + 0.01 * s))
        results.append(run("count", "rope", s, drops=(0.1,), index=0.5 - 0.012 * s))
    v = verdicts(results)["NC1"]
    di, drop = v.parts
    assert drop["values"] == pytest.approx([50.0, 51.0, 52.0]) and drop["verdict"] == "shown"
    assert di["primary"] and di["verdict"] == "inconclusive" and v.verdict == "inconclusive"


def test_relative_table_change_within_its_run_to_run_noise_is_not_attenuation():
    """Eight seeds whose table shrinks a little (mean A -0.05) against a seed-to-seed sd of 0.05:
    below 0 on a t interval, but not beyond one run-to-run sd (part (c), the primary until
    without a schedule the primary reads not recorded)."""
    offsets = [-1.2, 0.9, -0.4, 1.5, 0.1, -1.0, 0.6, -0.5]
    mean, sd = sum(offsets) / 8, (sum((x - sum(offsets) / 8) ** 2 for x in offsets) / 7) ** 0.5
    counts = [-0.05 + 0.05 * (x - mean) / sd for x in offsets]
    results = []
    for s, a in enumerate(counts):
        results.append(run("count", "relative", s, trace=trace(0.1, 0, 0.5, a)))
        results.append(run("distance", "relative", s, trace=trace(0.1, 0, 0.5, 1.0)))
    v = verdicts(results)["RA"]
    assert v.parts[2]["estimate"] == pytest.approx(-1.0) and v.verdict == "inconclusive"
    assert "not recorded" in v.parts[0]["note"]
    from posenc.verdicts.verdict import judge
    assert judge(counts, 0.0, "below")["verdict"] == "confirmed"  # what comparing with 0 said


# --- AD: a claim of the paper that had no verdict row (AL1 and AL2 are in
# test_alibi_claims.py) ---

def ablated(seed, drops_by_layer, acc=0.95, role="rope", code=None):
    """A RoPE distance run (``role``; in paper-code mode with ``code="paper"``) whose zero
    ablation gives these per-head drops (fractions)."""
    layers = []
    for l, drops in enumerate(drops_by_layer):
        head = max(range(len(drops)), key=lambda h: (drops[h], -h))
        rest = sorted(drops, reverse=True)
        layers.append({"layer": l, "largest_drop": drops[head], "deposit_index": 0.5,
                       "runner_up_gap": rest[0] - rest[1], "deposit_head": head,
                       "baseline_acc": acc, "drops": list(drops), "head_acc": []})
    return ExperimentResult.from_stored({
        "summary": {"task": "distance", "pe": role, "seed": seed, "preset": "quick",
                    "test_acc": acc, "n_test": 900, "tags": {"role": role},
                    **({"code": code} if code else {})},
        "ablation": {"zero": {"layers": layers}}})


def ad_runs(top, second, seeds=4):
    return [ablated(s, [[0.0, top + 0.01 * s, second, 0.0], [0.0, second / 2, 0.0, 0.0]])
            for s in range(seeds)]


@pytest.mark.parametrize("top,second,expected", [
    (0.60, 0.01, "confirmed"),   # the paper's picture: both conditions hold
    (0.12, 0.01, "against"),     # a deposit head, but small
    (0.60, 0.20, "against")])    # large, but another head matters too: the statement fails
def test_ad_judges_the_whole_statement(top, second, expected):
    v = verdicts(ad_runs(top, second))["AD"]
    assert v.verdict == expected and len(v.parts) == 1
    drop, others = v.parts[0]["conditions"]
    assert drop["values"] == pytest.approx([100 * (top + 0.01 * s) for s in range(4)])
    # the other heads: the second head of the deposit layer and every head of the other layers
    assert others["values"] == pytest.approx([100 * second] * 4)
    assert "(all of)" in v.measured and "other heads' top drop" in v.measured


def test_ad_large_deposit_with_a_second_important_head_is_not_confirmed():
    """A 60-point deposit head beside a 20-point second head: the old primary (the deposit
    head's size alone) confirmed it; the statement ("any other head almost nothing") is
    refuted -- this test fails when the old primary is restored."""
    v = verdicts(ad_runs(0.60, 0.20))["AD"]
    drop, others = v.parts[0]["conditions"]
    assert drop["verdict"] == "confirmed" and others["verdict"] == "against"
    assert v.verdict == "against"


def test_ad_needs_the_per_head_drops_and_a_learned_model():
    old = [run("distance", "rope", s, drops=(0.5 + 0.01 * s, 0.1)) for s in range(3)]
    v = verdicts(old)["AD"]  # no per-head drops: half the statement cannot be measured
    assert v.verdict == "inconclusive"
    assert v.parts[0]["conditions"][1]["n"] == 0
    unlearned = [ablated(s, [[0.6, 0.0], [0.0, 0.0]], acc=0.03) for s in range(3)]
    for r in unlearned:
        r.summary["chance"] = 0.025
    v = verdicts(unlearned)["AD"]
    assert v.verdict == "inconclusive" and "rope did not learn" in v.parts[0]["note"]


@pytest.mark.parametrize("xpos_index,expected", [(0.9, "confirmed"), (0.2, "against")])
def test_mx_xpos_deposit_against_the_additive_pes(xpos_index, expected):
    results = [run("distance", r, s, index=0.4 + 0.01 * s) for r in ("absolute", "relative", "alibi")
               for s in range(4)]
    v = verdicts(results)["MX"]
    assert v.verdict == "inconclusive" and "xpos" in v.parts[0]["note"]  # no xPos runs
    results += [run("distance", "xpos", s, index=xpos_index) for s in range(4)]
    v = verdicts(results)["MX"]
    assert v.verdict == expected
    # one contrast per additive PE (all required), not xPos against their max
    conds = v.parts[0]["conditions"]
    assert [c["part"] for c in conds] == ["xpos - absolute", "xpos - relative", "xpos - alibi"]
    for c in conds:
        assert c["values"] == pytest.approx([xpos_index - 0.4 - 0.01 * s for s in range(4)])
    # an additive PE at its floor leaves the contrasts (as in E12) instead of voiding the
    # row: ALiBi at 12% with the quick distance size's length-only rate 14.7%, its index extreme
    for r in results:
        r.summary["length_rate"] = 0.147
        if r.role == "alibi":
            r.summary["test_acc"] = 0.12
            r.ablation["zero"]["layers"][0]["deposit_index"] = 0.99
    v = verdicts(results)["MX"]
    assert v.verdict == expected and "left out of the conditions: alibi" in v.parts[0]["note"]
    assert len(v.parts[0]["conditions"]) == 2


@pytest.mark.parametrize("drops,expected", [
    # the deposit in layer index 1: the reading "layer 0" is decided against, the others hold
    ((0.10, 0.60, 0.05, 0.05), ("against", "confirmed", "confirmed")),
    # in layer index 0: "layer 1" is decided against, "layer 0" and the shallower half hold
    ((0.60, 0.05, 0.10, 0.10), ("confirmed", "against", "confirmed")),
    # in layer index 2 (the deeper half): every reading decided against
    ((0.05, 0.10, 0.60, 0.05), ("against", "against", "against")),
])
def test_nc2_three_readings_differ_on_a_constructed_store(drops, expected):
    """NC2 read as layer index 0, as layer index 1 (the paper code's 0-indexed "layer 1") and as
    the shallower half: each its own claim with its own statistic, the layer(s) of the reading
    minus the other layers' largest drop.  Fails when one reading's layers stand in for
    another's."""
    results = [run("distance", "rope", s, drops=tuple(d + 0.01 * s * (d == max(drops))
                                                      for d in drops))
               for s in range(3)]
    by = verdicts(results)
    claims = ("NC2 (layer 0)", "NC2 (layer 1)", "NC2 (shallower half)")
    assert tuple(by[c].verdict for c in claims) == expected
    d = [100 * x for x in drops]
    assert by["NC2 (layer 1)"].parts[0]["values"][0] == pytest.approx(
        d[1] - max(d[0], d[2], d[3]))
    assert by["NC2 (shallower half)"].parts[0]["values"][0] == pytest.approx(
        max(d[:2]) - max(d[2:]))


def test_nc2_readings_need_a_layer_on_each_side():
    one = verdicts([run("distance", "rope", s, drops=(0.5,)) for s in range(3)])
    two = verdicts([run("distance", "rope", s, drops=(0.5, 0.1)) for s in range(3)])
    for claim in ("NC2 (layer 0)", "NC2 (layer 1)", "NC2 (shallower half)"):
        assert one[claim].verdict == "inconclusive" and one[claim].parts[0]["n"] == 0
    assert two["NC2 (layer 1)"].verdict == "against"  # layer 1 below layer 0
    assert two["NC2 (shallower half)"].parts[0]["values"][0] == pytest.approx(40.0)


CODE_ROPE_DEPOSIT_CLAIMS = ("AD (code rope)", "NC2 (layer 0, code rope)", "NC2 (layer 1, code rope)",
                            "NC2 (shallower half, code rope)")


def test_the_deposit_claims_are_read_for_the_paper_codes_rope_model_too():
    """The paper's head ablation (dis_gen/transvis.py) ablates trans.py's ``rope`` model, RoPE
    plus its sinusoidal table (posenc's absolute+rope in paper-code mode): AD and NC2 are read
    for it beside posenc's RoPE, each on its own runs, and only for paper-code runs that hold
    it.  Here RoPE spreads its reasoning over two heads of layer 1 and trans.py's rope has the
    paper's picture in layer 0; the test fails when a reading reads the other model's runs."""
    def runs(code):
        return ([ablated(s, [[0.0, 0.02, 0.0], [0.40 + 0.01 * s, 0.30, 0.0]], code=code)
                 for s in range(4)]
                + [ablated(s, [[0.01, 0.60 + 0.01 * s, 0.0], [0.02, 0.0, 0.01]],
                           role="absolute+rope", code=code) for s in range(4)])
    standard = verdicts(runs(None))
    assert not set(CODE_ROPE_DEPOSIT_CLAIMS) & set(standard)
    assert not set(CODE_ROPE_DEPOSIT_CLAIMS) & set(
        verdicts([r for r in runs("paper") if r.role == "rope"]))  # paper code, no such runs
    by = verdicts(runs("paper"))
    assert by["AD"].verdict == "against" and by["AD (code rope)"].verdict == "confirmed"
    drop, others = by["AD (code rope)"].parts[0]["conditions"]
    assert drop["values"] == pytest.approx([60.0 + s for s in range(4)])
    assert others["values"] == pytest.approx([2.0] * 4)
    assert by["AD (code rope)"].parts[0]["roles"] == ["absolute+rope"]
    assert by["NC2 (layer 0)"].verdict == "against"
    assert by["NC2 (layer 0, code rope)"].verdict == "confirmed"
    assert by["NC2 (layer 1, code rope)"].verdict == "against"
    assert by["NC2 (layer 0, code rope)"].parts[0]["values"] == pytest.approx(
        [60.0 + s - 2.0 for s in range(4)])
    assert by["NC2 (layer 0, code rope)"].parts[0]["roles"] == ["absolute+rope"]
    # each reading is refused on its own model's learning: RoPE at its floor, trans.py's rope
    # learned, and the reverse
    for floored, judged in (("rope", "absolute+rope"), ("absolute+rope", "rope")):
        results = runs("paper")
        for r in results:
            r.summary["chance"] = 0.025
            if r.role == floored:
                r.summary["test_acc"] = 0.03
        by = verdicts(results)
        ad = {"rope": "AD", "absolute+rope": "AD (code rope)"}
        nc2 = {"rope": "NC2 (layer 1)", "absolute+rope": "NC2 (layer 1, code rope)"}
        assert f"{floored} did not learn" in by[ad[floored]].parts[0]["note"]
        assert by[ad[judged]].verdict != "inconclusive"
        assert by[nc2[floored]].verdict == "inconclusive"
        assert by[nc2[judged]].verdict != "inconclusive"
    # the posenc-RoPE claims read the same with or without the other model's runs
    for claim in ("AD", "NC2 (layer 0)", "NC2 (layer 1)", "NC2 (shallower half)"):
        assert by[claim].parts[0].get("values") == standard[claim].parts[0].get("values")
