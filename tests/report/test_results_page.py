"""The results page (posenc.report.results_page): rebuilt from the committed stores it is the
committed docs/results.md; its cells and caveats read the report.json words and numbers; bad
input is one line and writes nothing."""

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.cli import main
from posenc.errors import PosencError
from posenc.report.results_figure import top_two
from posenc.report.results_page import (CAVEAT_CHARS, Anchor, SeedSet, anchor_rows, caveat,
                                        regimes, replicated_cell, statistic_cell)

ROOT = Path(__file__).resolve().parents[2]
#: the sources docs/results.md is built from, in its order
SOURCES = ("quick-store", "quick-store-replicate", "paper-small", "paper-small-replicate",
           "paper-anchor")


def test_the_committed_results_page_is_what_the_stores_give(tmp_path):
    """Rebuilt from the committed stores (their reports and runs, no training), the page is the
    committed one byte for byte: regenerate it with the command in its first paragraph."""
    docs = tmp_path / "docs"
    docs.mkdir()
    os.symlink(ROOT / "docs" / "figures", docs / "figures")  # the page names its sources relative
    out = docs / "results.md"
    assert main(["results", *[str(docs / "figures" / s) for s in SOURCES], "--out", str(out)]) == 0
    committed = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert out.read_text(encoding="utf-8") == committed, (
        "docs/results.md is stale: run `posenc results " +
        " ".join(f"docs/figures/{s}" for s in SOURCES) + " --out docs/results.md`")
    for name in ("quick.png", "paper-small.png", "paper-anchor.png"):
        assert (docs / "results" / name).stat().st_size > 10_000
        assert f"](results/{name})" in committed
        assert (ROOT / "docs" / "results" / name).is_file()
    assert [line for line in committed.splitlines() if line.startswith("## ")] == [
        "## quick", "## paper-small", "## paper (anchor)"]


def _verdict(claim="X", decision="confirmed", estimate=1.234, interval=(0.5, 2.0), note=None,
             exact=None, measured=None, conditions=None):
    part = {"part": "a - b", "primary": True, "estimate": estimate,
            "interval": list(interval) if interval else None, "note": note, "n": 6}
    if conditions:
        part["conditions"] = conditions
    shown = {"part": "c - d", "primary": False, "estimate": 9.0, "interval": [8.0, 10.0], "n": 6}
    if measured is None:
        measured = "" if estimate is None else f"a - b: {estimate:+.2f} [{interval[0]:+.2f}, " \
                                               f"{interval[1]:+.2f}]"
    return {"claim": claim, "decision": decision, "verdict": f"{decision} at quick",
            "statement": "s", "parts": [shown, part], "measured": measured, "exact": exact}


def test_the_statistic_is_the_judged_part_with_the_reports_digits():
    assert statistic_cell(_verdict()) == "a - b: +1.23 [+0.50, +2.00]"
    one_digit = _verdict(measured="a - b: +1.2 [+0.5, +2.0]; c - d [shown, not judged]: ...")
    assert statistic_cell(one_digit) == "a - b: +1.2 [+0.5, +2.0]"
    assert statistic_cell(_verdict(estimate=None, interval=None, note="no runs for xpos")) == "-"
    assert statistic_cell(None) == "-"
    conds = [{"part": "big", "estimate": 45.0, "interval": [30.0, 61.0]},
             {"part": "small", "estimate": 30.3, "interval": [20.6, 40.1]}]
    both = _verdict(conditions=conds, measured="all of: big: +45.0 [+30.0, +61.0], small: +30.3 "
                                               "[+20.6, +40.1]")
    assert statistic_cell(both) == "big: +45.0 [+30.0, +61.0]; small: +30.3 [+20.6, +40.1]"


def test_the_caveat_names_what_limits_the_reading_in_one_line():
    ceiling = _verdict(decision="ceiling", note="both sides of the ordering (the PE and, per "
                                                "seed, the PE it is compared with) average >= 98%")
    assert caveat([ceiling, _verdict()]) == "at the ceiling: both sides of the ordering average >= 98%"
    missing = _verdict(decision="inconclusive", estimate=None, interval=None, note="no runs for xpos")
    assert caveat([_verdict(), missing]) == "not measured: no runs for xpos"
    word = "undecided (sign-flip p 0.031 > 0.025 on seeds 2000-2005)"
    assert replicated_cell(word) == ("undecided", "sign-flip p 0.031 > 0.025 on seeds 2000-2005")
    assert replicated_cell("confirmed at quick") == ("confirmed at quick", "")
    assert caveat([_verdict(), _verdict()], word) == "sign-flip p 0.031 > 0.025 on seeds 2000-2005"
    weak = _verdict(exact={"p": 0.03125, "alpha": 0.025, "agrees": False})
    assert caveat([weak]) == "sign-flip p 0.031 > 0.025"
    assert caveat([_verdict(exact={"p": 0.015625, "alpha": 0.025, "agrees": True})]) == "-"
    long = "the null's assumption fails on seed(s) [5]: " + "coherence and sign balance " * 8
    assert caveat([_verdict(decision="inconclusive", note=long)]) == \
        "the null's assumption fails on seed(s) [5]"
    assert len(caveat([_verdict(note="x" * 300)])) <= CAVEAT_CHARS


def _set(tmp_path, name, preset="quick", replica=None):
    (tmp_path / name).mkdir(exist_ok=True)
    payload = {"preset": preset, "verdicts": [], "replication_store": replica}
    return SeedSet(tmp_path / name, payload, [0, 1])


def test_a_regimes_second_store_is_the_replication_its_first_names(tmp_path):
    a, b = _set(tmp_path, "a", replica="../b"), _set(tmp_path, "b", replica="../a")
    p = _set(tmp_path, "p", "paper-small")
    assert [(r.preset, r.sets) for r in regimes([a, p, b])] == [("quick", [a, b]),
                                                                 ("paper-small", [p])]
    with pytest.raises(PosencError, match="names the replication store '../b', not"):
        regimes([a, _set(tmp_path, "c")])
    with pytest.raises(PosencError, match="3 stores of the preset quick"):
        regimes([a, b, _set(tmp_path, "c")])


class _Run:
    def __init__(self, drops, role="absolute+rope", code="paper"):
        self.role, self.seed, self.task = role, 0, "distance"
        self.paper_code = code == "paper"
        self.ablation = {"zero": {"layers": [{"drops": d} for d in drops]}}


def test_the_anchors_rows_carry_the_ids_of_the_model_they_measure():
    """A paper-code run of trans.py's rope is filed under the code-rope readings (the reports'
    ids for that model), posenc's RoPE and a standard-mode hybrid under the plain ids."""
    drops = [[0.0, 0.6], [0.1, 0.0]]
    ids = [r[0] for r in anchor_rows(Anchor(Path("."), [_Run(drops)]), {"AD (code rope)": "s"})]
    assert ids == ["NC2 (layer 0, code rope)", "NC2 (layer 1, code rope)",
                   "NC2 (shallower half, code rope)", "AD (code rope)"]
    assert anchor_rows(Anchor(Path("."), [_Run(drops)]), {"AD (code rope)": "s"})[3][1] == "s"
    for run in (_Run(drops, role="rope"), _Run(drops, code=None)):
        assert [r[0] for r in anchor_rows(Anchor(Path("."), [run]), {})] == [
            "NC2 (layer 0)", "NC2 (layer 1)", "NC2 (shallower half)", "AD"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(-0.2, 1.0), min_size=2, max_size=6), min_size=2, max_size=5))
def test_the_anchors_statistics_against_a_loop(drops):
    rows = {r[0]: r for r in anchor_rows(Anchor(Path("."), [_Run(drops)]), {})}
    pts = [[100.0 * d for d in layer] for layer in drops]
    best = [max(layer) for layer in pts]
    layer0 = best[0] - max(best[1:])
    assert rows["NC2 (layer 0, code rope)"][2] == f"layer 0 - other layers: {layer0:+.1f}"
    half = len(pts) // 2
    if half:
        depth = max(best[:half]) - max(best[half:])
        assert rows["NC2 (shallower half, code rope)"][2] == \
            f"layers < n/2 - other layers: {depth:+.1f}"
    flat = sorted((d for layer in pts for d in layer), reverse=True)
    assert f"deposit head's drop: {flat[0]:+.1f}" in rows["AD (code rope)"][2]
    assert rows["AD (code rope)"][2].endswith(f"other heads' top drop: {flat[1]:+.1f}")
    assert all(r[3] == "no verdict (one run)" for r in rows.values())


@given(st.lists(st.floats(-100, 100), min_size=1, max_size=16))
def test_top_two_is_the_largest_and_the_runner_up(drops):
    top, second = top_two(drops)
    rest = list(drops)
    rest.remove(max(rest))
    assert top == max(drops) and second == (max(rest) if rest else 0.0)


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "results.md"
    cases = [([str(tmp_path / "nowhere")], "no results store or anchor folder"),
             ([str(tmp_path)], "has no report/report.json"),
             ([str(ROOT / "docs" / "figures" / "quick-store"), "--out", str(tmp_path / "r.txt")],
              "needs a Markdown file name")]
    (tmp_path / "anchor").mkdir()
    (tmp_path / "anchor" / "done.json").write_text('{"roles": ["rope"]}')
    cases.append(([str(tmp_path / "anchor")], "not a readable paper-size anchor"))
    for args, message in cases:
        if "--out" not in args:
            args = [*args, "--out", str(out)]
        assert main(["results", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["anchor"]
