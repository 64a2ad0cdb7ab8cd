"""A claim of several conditions judged as one part (posenc.verdicts.conjunction): confirmed only
when every condition is, refuted when one is at the Bonferroni level, and rendered with each
condition."""

import pytest
from hypothesis import given, settings, strategies as st

from posenc.verdicts.conjunction import conjunction
from posenc.verdicts.verdict import (agreement_text, judge, measured_text, resolution_text,
                                     t_interval)


def cond(name, values, threshold=0.0, predicted="above", seeds=None):
    part = judge(values, threshold, predicted)
    return {"part": name, **part, "seeds": list(seeds or range(len(values))), "task": "distance",
            "roles": ["rope", name]}


values = st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=8)


@settings(max_examples=30, deadline=None)
@given(st.lists(values, min_size=1, max_size=4))
def test_the_word_follows_the_conditions(conditions):
    parts = [cond(f"c{i}", v) for i, v in enumerate(conditions)]
    out = conjunction("all", parts)
    words = [p["verdict"] for p in parts]
    strict = 1 - 0.05 / len(parts)
    refuted_strict = [t_interval(v, strict).high < 0 for v in conditions]
    if out["verdict"] == "confirmed":
        assert all(w == "confirmed" for w in words)  # never confirmed beyond a condition
    if out["verdict"] == "against":
        assert any(refuted_strict)
    if all(w == "confirmed" for w in words):
        assert out["verdict"] == "confirmed"
    if any(refuted_strict):
        assert out["verdict"] == "against"
    # the order of the conditions does not matter
    assert conjunction("all", parts[::-1])["verdict"] == out["verdict"]
    # one condition: the conjunction is that condition
    if len(parts) == 1:
        assert out["verdict"] == words[0]


def test_a_refutation_needs_the_bonferroni_level():
    """Two conditions: one refuted at 95% but not at 97.5% does not refute the conjunction (a
    union of two tests at 95% would err up to 5% when the claim is true); at 97.5% it does."""
    weak = [-3.0, -1.4, -0.8, -2.0]  # 95% interval below 0, 97.5% interval not
    assert t_interval(weak, 0.95).high < 0 < t_interval(weak, 0.975).high
    ok = cond("ok", [3.0, 3.1, 2.9, 3.05])
    assert conjunction("two", [ok, cond("weak", weak)])["verdict"] == "inconclusive"
    assert conjunction("one", [cond("weak", weak)])["verdict"] == "against"
    strong = [-3.0, -3.1, -2.9, -3.05]
    out = conjunction("two", [ok, cond("strong", strong)])
    assert out["verdict"] == "against" and "against by strong: its 97.5% interval" in out["note"]
    assert "against by strong" in measured_text([out])


def test_the_part_shows_the_weakest_condition_and_every_condition():
    a = cond("drop", [40.0, 45.0, 50.0], 30.0, "above")  # margin +15
    b = cond("others", [2.0, 3.0, 2.5], 5.0, "below")  # margin +2.5: the weakest
    out = conjunction("AD", [a, b])
    assert out["verdict"] == "confirmed" and out["weakest"] == "others"
    assert out["estimate"] == pytest.approx(2.5) and out["n"] == 3
    assert out["agree"] == 3 and out["agree_of"] == 3
    text = measured_text([out])
    assert text.startswith("AD (all of): drop: +45.0") and "others: +2.5" in text
    assert "every condition on 3 of 3 seeds" in agreement_text([out])
    assert "drop: ±" in resolution_text([out])


def test_a_condition_without_seeds_leaves_it_undecided():
    empty = {"part": "missing", "verdict": "inconclusive", "n": 0, "estimate": None,
             "interval": None, "note": "no runs for xpos", "task": "distance", "roles": ["xpos"]}
    out = conjunction("all", [cond("ok", [3.0, 3.1, 2.9]), empty])
    assert out["verdict"] == "inconclusive" and "no runs for xpos" in out["note"]
    none = conjunction("none", [empty, {**empty, "part": "also missing"}])
    assert none["estimate"] is None and measured_text([none]) == "none: no runs for xpos"
    with pytest.raises(ValueError):
        conjunction("none", [])
