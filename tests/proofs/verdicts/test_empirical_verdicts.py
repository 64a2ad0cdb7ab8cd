"""Empirical claims judged on constructed sweep results: the ceiling rule both ways, the parts'
runs, and the accuracy table's bounded intervals and test-set standard errors."""

import math

import pytest
from synthetic_runs import sweep

from posenc.proofs.verdicts.empirical import accuracy_table, evaluate
from posenc.proofs.verdicts.verdict import binomial_se

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
