"""The report's text (posenc.report.markdown): what it says about its own statistics."""

import dataclasses

from synthetic_runs import sweep

from posenc.empirical.pipeline.experiment_result import ExperimentResult
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


def test_the_setup_names_a_fixed_budget_and_early_stopping_apart():
    """paper-small trains every epoch (patience of the maximum): the setup says so instead of an
    early stopping that cannot fire; a store with a patience below the maximum keeps the words
    of early stopping."""
    from posenc.report.markdown import _epochs
    res = _fixed_results({("distance", "rope"): [0.9, 0.91]}, (15, 14, 15, 15), 15)
    assert _epochs(res) == "a fixed budget of 15 epochs (no early stopping: a patience of the " \
                           "maximum; the best validation epoch's weights kept)"
    res = _fixed_results({("distance", "rope"): [0.9, 0.91]}, (9, 6, 15, 3), 9)
    assert _epochs(res) == "early stopping (patience 3 on validation accuracy) at most 15 " \
                           "epochs, 9 trained"


def test_the_dynamics_section_states_how_often_its_runs_recorded():
    """Read from the runs' configs (paper-small: every 100 steps), not the recorder's defaults."""
    from posenc.report.dynamics import dynamics_markdown, recording_text
    every = {"dynamics": {"every": 100, "ablation_every": 8, "probe_examples": 64}}
    assert recording_text([every, every, {"dynamics": None}]) == \
        "a record every 100 steps, importance every 8 records"
    assert recording_text([every, {"dynamics": {"every": 25, "ablation_every": 8}}]) == \
        "a record every 25 steps, importance every 8 records; " \
        "a record every 100 steps, importance every 8 records"
    assert recording_text([]) == "a record every 25 steps, importance every 8 records"
    lines, _ = dynamics_markdown([], recording_text([every]))
    assert "(`posenc.empirical.analysis.dynamics`: a record every 100 steps, importance every " \
           "8 records)" in "\n".join(lines)


def _fixed_results(accs, stop, epochs):
    out = sweep(accs, stop=stop)
    for r in out:
        r["summary"]["epochs"] = epochs
    return [ExperimentResult.from_stored(r) for r in out]


def test_the_training_section_of_a_fixed_budget_store_says_so_in_its_words_and_cells():
    from types import SimpleNamespace

    from posenc.report.markdown import _training
    fixed = _fixed_results({("distance", "rope"): [0.9, 0.91]}, (15, 14, 15, 15), 15)
    text = "\n".join(_training(SimpleNamespace(results=fixed)))
    assert "A fixed budget: every run trains its maximum epochs" in text
    assert "a run stops once" not in text
    assert "| distance | rope | 2 | fixed budget | 15 | 14 | 15 |" in text
    # a store trained with early stopping keeps its words and its count of early stops
    early = _fixed_results({("distance", "rope"): [0.9, 0.91]}, (9, 6, 15, 3), 9)
    text = "\n".join(_training(SimpleNamespace(results=early)))
    assert "Early stopping: after every epoch" in text and "fixed budget" not in text
    assert "| distance | rope | 2 | 2 of 2 | 9 | 6 | 15 |" in text


def test_the_setup_gives_the_parameter_range_and_which_ceiling_the_verdicts_read():
    from posenc.empirical.bayes_ceiling import RECORDED_EXAMPLES
    from posenc.report.markdown import _ceilings, _params
    res = _fixed_results({("distance", "rope"): [0.9], ("distance", "mla"): [0.8]},
                         (15, 14, 15, 15), 15)
    res = [dataclasses.replace(r, summary={**r.summary, "n_params": n})
           for r, n in zip(res, (336062, 207934))]
    assert _params(res) == "207934-336062 parameters (by PE)"
    assert _params(res[:1]) == "336062 parameters (rope)"
    clean = [{"task": "distance", "sampler": "clean", "accuracy": 100.0, "text": "100.0%"}]
    assert _ceilings(clean) == ["- best possible accuracy (Bayes ceiling) of each task: "
                                "distance (clean sampler) 100.0%;"]
    paper = [{"task": "distance", "sampler": "paper", "accuracy": 97.49, "text": "97.49%"}]
    line = _ceilings(paper)[0]
    assert line.startswith("- best possible accuracy (Bayes ceiling) of each task: distance "
                           "(paper sampler) 97.49% (the verdicts' ceiling rule reads instead "
                           "the estimate each run recorded")
    assert f"over {RECORDED_EXAMPLES:,} examples" in line and _ceilings([]) == []


def test_the_deposit_table_leaves_out_layers_no_head_of_which_matters():
    from types import SimpleNamespace

    from posenc.report.markdown import _deposits
    inp = SimpleNamespace(deposits={"nope": [[None, None], [None, None]],
                                    "rope": [[0.8, None], [0.6, 0.4]]}, single_head={})
    lines = _deposits(inp, {"n_layers": 2})
    rows = {line.split(" | ")[0].strip("| "): line for line in lines if line.startswith("| ")}
    assert rows["nope"] == "| nope | - | - |"  # not the 1.00 a 0.2-point drop would give
    assert rows["rope"] == "| rope | 0.70 | 0.40 (1 of 2) |"
    assert any("below 5 points" in line for line in lines)


def test_the_single_head_table_counts_runs_and_marks_unrecorded_ones():
    from posenc.report.markdown import _single_head
    lines = _single_head({"absolute": [[1], [], [1, 2]], "rope": [[0], None]})
    rows = {line.split(" | ")[0].strip("| "): line for line in lines if line.startswith("| ")}
    assert rows["absolute"] == "| absolute | 2 of 3 | 1 / - / 1,2 |"
    assert rows["rope"] == "| rope | 1 of 1 | 0 / ? |"  # the unrecorded run is not counted
    assert _single_head({}) == []


def test_a_long_verdict_cell_is_cut_at_a_word_with_its_whole_text_in_a_note():
    from posenc.report.markdown import CELL_CHARS, short_cell
    notes: list[str] = []
    assert short_cell("short text", "E10", "measured", notes) == "short text" and notes == []
    long = "word " * 60 + "end"
    cell = short_cell(long, "AD", "measured", notes)
    assert len(cell) <= CELL_CHARS and cell.endswith(" ... [1]")
    assert long.startswith(cell[:-len(" ... [1]")])  # a prefix of the text, cut between words
    assert notes == [f"- [1] AD, measured: {long}"]
    assert short_cell("x" * 200, "S", "paper", notes).endswith("[2]") and len(notes) == 2


def test_a_smoke_report_says_its_verdicts_mean_nothing():
    from posenc.report.markdown import smoke_notice
    from types import SimpleNamespace
    runs = [SimpleNamespace(seed=s, summary={"n_params": 18_000, "pe": "rope"}) for s in (0, 1, 1)]
    text = smoke_notice(runs)
    assert text.startswith("**A smoke run: its verdicts mean nothing.**")
    assert "2 seed(s)" in text and "18000 parameters (rope)" in text
