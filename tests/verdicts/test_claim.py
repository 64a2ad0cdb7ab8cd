"""The record of an empirical claim (posenc.verdicts.claim): a record's parts judge as the
functions they name would, called directly (accuracy_runs.judged_part, learned_part,
conjunction.conjunction); a claim's verdict is its primary part's; a malformed record is refused
where it is written; and evaluate_measured is the loop over posenc.verdicts.measured.CLAIMS."""

import pytest
from hypothesis import given, settings, strategies as st

from posenc.empirical.pipeline.experiment_result import ExperimentResult
from posenc.verdicts.accuracy_runs import Runs, judged_part, learned_part
from posenc.verdicts.claim import (Conjunction, JudgedElsewhere, MeasuredClaim, Part,
                                   evaluate_claims)
from posenc.verdicts.conjunction import conjunction
from posenc.verdicts.measured import CLAIMS, evaluate_measured


def run(task, role, seed, acc, chance=None):
    summary = {"task": task, "pe": role, "seed": seed, "preset": "smoke", "test_acc": acc,
               "n_test": 900, "tags": {"role": role}}
    if chance is not None:
        summary["chance"] = chance
    layer = {"layer": 0, "largest_drop": 0.1, "deposit_index": 0.5, "runner_up_gap": 0.0,
             "deposit_head": 0, "baseline_acc": acc}
    return ExperimentResult.from_stored({"summary": summary,
                                         "ablation": {"zero": {"layers": [layer]}}})


def pair_runs(a, b, task="distance", chance=None):
    """Runs of roles "p" (accuracies ``a``) and "q" (``b``), seed i from the i-th of each."""
    return Runs([run(task, "p", s, x, chance) for s, x in enumerate(a)]
                + [run(task, "q", s, x, chance) for s, x in enumerate(b)])


def acc_diff(runs, s, mode):
    return runs.acc("distance", "p", s) - runs.acc("distance", "q", s)


accs = st.lists(st.floats(0.0, 1.0), min_size=0, max_size=6)


@settings(max_examples=60, deadline=None)
@given(accs, accs, st.floats(-20.0, 20.0), st.sampled_from(["above", "below"]), st.booleans(),
       st.booleans())
def test_a_part_judges_as_judged_part_called_directly(a, b, threshold, side, ordering, noise):
    runs = pair_runs(a, b)
    part = Part("p - q", "distance", ("p", "q"), acc_diff, threshold, side, ordering=ordering,
                noise=noise, missing="none here")
    direct = judged_part("p - q", runs, "distance", ("p", "q"),
                         lambda s: acc_diff(runs, s, "zero"), threshold, side, ordering=ordering,
                         noise=noise, missing_note="none here")
    assert part.judge(runs, "zero") == direct


def test_a_part_passes_its_mode_configs_and_bounds():
    seen = []

    def stat(runs, s, mode):
        seen.append(mode)
        return 0.1 * s

    runs = pair_runs([0.9, 0.8, 0.7], [0.5, 0.5, 0.5])
    got = Part("x", "distance", ("p",), stat, 0.0, "above", bounds=(-1.0, 1.0),
               configs=(("distance", "p"), ("distance", "q"))).judge(runs, "mean")
    assert set(seen) == {"mean"}
    assert got["configs"] == [["distance", "p"], ["distance", "q"]]
    assert got == judged_part("x", runs, "distance", ("p",), lambda s: 0.1 * s, 0.0, "above",
                              bounds=(-1.0, 1.0),
                              configs=[("distance", "p"), ("distance", "q")])


@pytest.mark.parametrize("q_acc", [0.95, 0.21])
def test_a_learned_part_is_refused_when_its_models_did_not_learn(q_acc):
    """With chance 20%, q at 21% did not learn: the part is the inconclusive one learned_part
    gives, naming q; at 95% it is the judged part itself."""
    runs = pair_runs([0.97, 0.99, 0.98], [q_acc, q_acc + 0.001, q_acc + 0.002], chance=0.2)
    part = Part("p - q", "distance", ("p", "q"), acc_diff, 0.0, "above", learned=True)
    got = part.judge(runs, "zero")
    assert got == learned_part("p - q", runs, "distance", ("p", "q"),
                               lambda: Part("p - q", "distance", ("p", "q"), acc_diff, 0.0,
                                            "above").judge(runs, "zero"))
    if q_acc < 0.5:
        assert got["verdict"] == "inconclusive" and "q did not learn" in got["note"]
    else:
        assert got["verdict"] == "confirmed"


def test_a_conjunction_is_the_conjunction_of_its_conditions():
    runs = pair_runs([0.9, 0.92, 0.91], [0.5, 0.52, 0.51])
    above = Part("p - q > 30", "distance", ("p", "q"), acc_diff, 30.0, "above")
    below = Part("p - q < 50", "distance", ("p", "q"), acc_diff, 50.0, "below")
    both = Conjunction("both", "distance", ("p",), (above, below)).judge(runs, "zero")
    assert both == conjunction("both", [above.judge(runs, "zero"), below.judge(runs, "zero")])
    assert both["verdict"] == "confirmed"
    fails = Conjunction("both", "distance", ("p",), (above, Part(
        "p - q < 10", "distance", ("p", "q"), acc_diff, 10.0, "below"))).judge(runs, "zero")
    assert fails["verdict"] == "against"


def test_a_claims_verdict_is_its_primary_parts():
    runs = pair_runs([0.9, 0.92, 0.91], [0.5, 0.52, 0.51])
    confirmed = Part("p - q > 0", "distance", ("p", "q"), acc_diff, 0.0, "above")
    against = Part("p - q < 0", "distance", ("p", "q"), acc_diff, 0.0, "below")
    for primary, word in ((0, "confirmed"), (1, "against")):
        claim = MeasuredClaim("X", "p beats q", "acc(p) - acc(q)", "p best",
                              (confirmed, against), primary=primary, digits=2)
        v = claim.verdict(runs)
        assert v.claim == "X" and v.statement == "p beats q" and v.paper == "p best"
        assert v.verdict == word
        assert [p["primary"] for p in v.parts] == [i == primary for i in range(2)]
        assert v.parts[1 - primary]["verdict"] == "shown"


@pytest.mark.parametrize("kwargs,message", [
    ({"parts": ()}, "no parts"),
    ({"primary": None}, "need a primary"),
    ({"primary": 2}, "primary part 2 of 2"),
    ({"id": ""}, "non-empty"),
    ({"id": " X"}, "surrounding space"),
])
def test_a_malformed_claim_is_refused_where_it_is_written(kwargs, message):
    part = Part("p - q", "distance", ("p", "q"), acc_diff, 0.0, "above")
    fields = {"id": "X", "statement": "s", "statistic": "t", "paper": "w", "parts": (part, part),
              "primary": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        MeasuredClaim(**fields)


def test_a_part_names_a_side():
    with pytest.raises(ValueError, match="predicted side 'over'"):
        Part("p - q", "distance", ("p", "q"), acc_diff, 0.0, "over")


def test_claims_judged_elsewhere_keep_their_place():
    runs = pair_runs([0.9, 0.92, 0.91], [0.5, 0.52, 0.51])
    one = MeasuredClaim("A", "s", "t", "w",
                        (Part("p - q", "distance", ("p", "q"), acc_diff, 0.0, "above"),))
    two = MeasuredClaim("C", "s", "t", "w",
                        (Part("q - p", "distance", ("p", "q"), acc_diff, 0.0, "below"),))
    elsewhere = JudgedElsewhere("B", lambda r: [one.verdict(r)] * 2)
    assert [v.claim for v in evaluate_claims((one, elsewhere, two), runs)] == ["A", "A", "A", "C"]


def test_a_claim_is_judged_only_on_the_runs_its_when_admits():
    runs = pair_runs([0.9, 0.92, 0.91], [0.5, 0.52, 0.51])
    part = Part("p - q", "distance", ("p", "q"), acc_diff, 0.0, "above")
    always = MeasuredClaim("A", "s", "t", "w", (part,))
    held = MeasuredClaim("B", "s", "t", "w", (part,), when=lambda r: ("distance", "p") in r.by)
    refused = MeasuredClaim("C", "s", "t", "w", (part,), when=lambda r: ("count", "p") in r.by)
    assert [v.claim for v in evaluate_claims((always, held, refused), runs)] == ["A", "B"]


def test_evaluate_measured_is_the_loop_over_the_records():
    """Every record's id once, in CLAIMS' order, with S and ALiBi's claims in their places."""
    ids = [c.id for c in CLAIMS if isinstance(c, MeasuredClaim)]
    assert len(ids) == len(set(ids))
    runs = pair_runs([0.9, 0.92], [0.5, 0.52])
    got = [v.claim for v in evaluate_measured(runs)]
    expected = []
    for c in CLAIMS:
        if isinstance(c, JudgedElsewhere):
            expected += [v.claim for v in c.verdicts(runs)]
        elif c.when is None or c.when(runs):
            expected.append(c.verdict(runs).claim)
    assert got == expected
    assert got[:got.index("S")] == ["EH", "NC1", "NC2 (layer 0)", "NC2 (layer 1)",
                                    "NC2 (shallower half)", "NC3"]
    assert got[got.index("S"):got.index("MX") + 1] == ["S", "RA", "AD", "MX"]
    assert got[got.index("MX") + 1].startswith("AL1")
