"""The report's text (posenc.report.markdown): what it says about its own statistics."""

from synthetic_runs import sweep

from posenc.report.markdown import ceiling_text, multiplicity_text
from posenc.verdicts.accuracy_deposit import evaluate


def test_the_report_states_its_multiplicity_method_with_its_own_counts():
    verdicts = evaluate(sweep({("distance", r): [0.5, 0.6, 0.55] for r in ("nope", "rope")}
                              | {("count", r): [0.5, 0.6] for r in ("nope", "rope", "mla")}))
    text = multiplicity_text(verdicts)
    tested = sum(v.seeds >= 2 for v in verdicts)
    shown = sum(not p["primary"] for v in verdicts for p in v.parts)
    assert "one primary statistic per claim" in text
    assert f"{tested} primary tests had two or more seeds" in text
    assert f"({shown} in this report) are shown" in text
    assert "no correction is applied across claims" in text
    assert 0 < tested < len(verdicts) and shown > 0  # both counts are this report's, not constants


def test_the_report_states_the_ceiling_thresholds_it_used():
    clean = {("distance", r): [0.9, 0.95] for r in ("nope", "rope")} | {("count", "nope"): [0.9] * 2}
    assert ceiling_text(sweep(clean)) == ">= 98%"
    paper = sweep({k: v for k, v in clean.items() if k[0] == "distance"}, bayes_ceiling=0.975)
    rule = ">= 95.5% (2 points below the task's Bayes ceiling as its runs recorded it, 97.5%)"
    assert ceiling_text(paper) == rule
    assert ceiling_text(paper + sweep({("count", "nope"): [0.9] * 2})) == \
        f"at the ceiling of their task (count: >= 98%; distance: {rule})"
