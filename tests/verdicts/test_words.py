"""The words a verdict is shown with (posenc.verdicts.words): each names its regime, and below the
paper's own size a decision against a claim is "not reproduced at PRESET", never "refuted"."""

import json

import pytest
from hypothesis import given, strategies as st
from synthetic_runs import sweep

from posenc.training_presets import PRESET_NAMES
from posenc.verdicts.accuracy_deposit import evaluate
from posenc.verdicts.verdict import VERDICTS
from posenc.verdicts.words import PAPER_PRESET, regime_of, verdict_word, with_regime

SCALED_DOWN = [p for p in PRESET_NAMES if p != PAPER_PRESET]


@given(st.sampled_from(VERDICTS), st.sampled_from(SCALED_DOWN + ["", "mixed presets (a, b)"]))
def test_a_scaled_down_regime_never_reads_refuted(decision, regime):
    word = verdict_word(decision, regime)
    assert "refuted" not in word
    if regime:
        assert word.endswith(f" at {regime}")
    if decision == "against":
        assert word.startswith("not reproduced")


def test_only_the_papers_own_size_reads_refuted():
    assert verdict_word("against", PAPER_PRESET) == "refuted at paper"
    assert verdict_word("against", "paper-small") == "not reproduced at paper-small"
    assert verdict_word("confirmed", "quick") == "confirmed at quick"
    assert verdict_word("ceiling", "quick") == "ceiling at quick"
    assert verdict_word("inconclusive", "") == "inconclusive"


def _against_runs(preset):
    """E10 decided against: RoPE 10 points below the other PEs on every seed."""
    runs = sweep({("distance", "rope"): [0.70, 0.71, 0.70],
                  **{("distance", r): [0.80, 0.81, 0.80]
                     for r in ("nope", "absolute", "relative", "alibi")}})
    for r in runs:
        r["summary"]["preset"] = preset
    return runs


@pytest.mark.parametrize("preset", SCALED_DOWN)
def test_a_claim_decided_against_at_a_scaled_down_preset_is_not_reproduced(preset):
    """On runs of a scaled-down preset the report's word and report.json carry "not reproduced at
    PRESET" and keep the decision "against" beside it; no word says "refuted"."""
    runs = _against_runs(preset)
    assert regime_of(runs) == preset
    verdicts = with_regime(evaluate(runs), regime_of(runs))
    e10 = next(v for v in verdicts if v.claim == "E10")
    assert e10.verdict == "against" and e10.word == f"not reproduced at {preset}"
    entry = e10.to_dict()
    assert entry["verdict"] == f"not reproduced at {preset}" and entry["decision"] == "against"
    assert entry["regime"] == preset
    assert "refuted" not in json.dumps([v.to_dict() for v in verdicts])


def test_the_same_runs_at_the_papers_size_read_refuted():
    runs = _against_runs(PAPER_PRESET)
    e10 = next(v for v in with_regime(evaluate(runs), regime_of(runs)) if v.claim == "E10")
    assert e10.word == "refuted at paper" and e10.to_dict()["decision"] == "against"


def test_runs_of_several_presets_are_a_mixed_scaled_down_regime():
    runs = _against_runs("quick") + [
        {**r, "summary": {**r["summary"], "preset": "paper", "seed": 10 + r["summary"]["seed"]}}
        for r in _against_runs("paper")]
    regime = regime_of(runs)
    assert regime == "mixed presets (paper, quick)"
    assert verdict_word("against", regime) == f"not reproduced at {regime}"
