"""``posenc report STORE --beside OTHER``: each claim's verdict beside the report of the same preset
run with the other model code (paper-code vs standard), or of another preset (the paper's regime
beside the easy task), with the claims whose verdicts differ named; the other report is checked
before any work, and a wrong one is refused in one line."""

import json
import re

import pytest

from posenc.errors import PosencError
from posenc.report.beside import (SECTION, SECTION_PRESET, beside_markdown, beside_rows, load_other,
                                  verdict_seeds)
from small_sweep import SMALL, posenc


def _v(claim, word, seeds=(0, 1)):
    return {"claim": claim, "verdict": word, "measured": f"{claim}:{word}",
            "parts": [{"seeds": list(seeds)}]}


def _report(tmp_path, name="other", **fields):
    payload = {"preset": "quick", "model_code": "paper-code",
               "verdicts": [_v("E10", "ceiling"), _v("E10 (code rope)", "inconclusive")]}
    payload.update(fields)
    path = tmp_path / name / "report.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload))
    return path


def test_rows_say_same_differs_and_which_report_lacks_a_claim():
    here = [_v("E10", "ceiling"), _v("E14", "confirmed"), _v("RA", "against")]
    there = [_v("E10", "ceiling"), _v("E14", "inconclusive"), _v("E10 (code rope)", "against")]
    rows = beside_rows(here, there)
    assert [(r["claim"], r["compare"]) for r in rows] == [
        ("E10", "same"), ("E14", "differs"), ("RA", "only here"), ("E10 (code rope)", "only there")]
    assert rows[1]["here_measured"] == "E14:confirmed" and rows[1]["there_measured"] == \
        "E14:inconclusive"
    assert rows[3]["here"] == "-" and rows[3]["there"] == "against"
    md = "\n".join(beside_markdown(rows, "standard", "paper-code", "x/report.json", [0, 1], [0, 1]))
    # the count reads only the claims judged in both reports
    assert "1 of 2 claims judged on runs in both have a different verdict (E14)" in md
    assert "not the same seeds" not in md
    md = "\n".join(beside_markdown(rows, "standard", "paper-code", "x", [0, 1], [0, 2]))
    assert "seeds 0, 2: not the same seeds" in md


def test_another_preset_names_both_regimes_and_says_a_difference_is_the_whole_regimes():
    rows = beside_rows([_v("E10", "confirmed"), _v("E12", "inconclusive")],
                       [_v("E10", "ceiling"), _v("E12", "inconclusive")])
    md = beside_markdown(rows, "paper-code", "standard", "../quick/report.json", [0, 1], [0, 1],
                         "paper-small", "quick")
    text = "\n".join(md)
    assert SECTION_PRESET in md and SECTION not in md
    assert "This report (paper-small, paper-code, seeds 0-1) beside `../quick/report.json` " \
           "(quick, standard, seeds 0-1)" in text
    assert "1 of 2 claims judged on runs in both have a different verdict (E10)" in text
    assert "difference of the two regimes -- everything the two presets set differently and " \
        "the two model codes together" in text
    one_code = "\n".join(beside_markdown(rows, "standard", "standard", "q", [0], [0],
                                         "paper-small", "quick"))
    assert "everything the two presets set differently together" in one_code
    assert "model code" not in one_code.split("A verdict that differs")[1].split("\n")[0]
    assert "| claim | paper-small, paper-code: measured | verdict | quick, standard: measured |" \
        in text
    # the same preset (or none given) keeps the model-code section and its wording
    for presets in (("quick", "quick"), (None, None)):
        same = beside_markdown(rows, "standard", "paper-code", "x", [0], [0], *presets)
        assert SECTION in same and SECTION_PRESET not in same
        assert "This report (standard, seeds 0) beside `x` (paper-code, seeds 0)" in "\n".join(same)


def test_a_claim_judged_on_no_seed_is_no_difference():
    """A claim one report judged on no seed (its store ran none of the configurations it needs:
    the count task of a distance-only preset) reads "inconclusive" there; set beside a decided
    verdict that is no difference of the two, and it is not counted as one."""
    runless = dict(_v("NC1", "inconclusive", seeds=()), seeds=0)
    here = [_v("E10", "confirmed"), runless, dict(_v("RA", "inconclusive", ()), seeds=0),
            _v("E14", "against")]
    there = [_v("E10", "confirmed"), _v("NC1", "confirmed"), dict(_v("RA", "inconclusive", ()),
                                                                   seeds=0),
             dict(_v("E14", "inconclusive", ()), seeds=0)]
    rows = beside_rows(here, there)
    assert [r["compare"] for r in rows] == ["same", "not measured here",
                                            "not measured in either", "not measured there"]
    assert beside_rows(there, here)[1]["compare"] == "not measured there"
    md = "\n".join(beside_markdown(rows, "paper-code", "standard", "q", [0], [0], "paper-small",
                                   "quick"))
    assert "0 of 1 claims judged on runs in both have a different verdict." in md
    # only the integer 0 says "no seed": a missing, boolean or string count is a judged verdict
    for odd in ({}, {"seeds": False}, {"seeds": "0"}, {"seeds": 0.0}, {"seeds": None}):
        assert beside_rows([dict(_v("E10", "against"), **odd)],
                           [_v("E10", "confirmed")])[0]["compare"] == "differs"
    assert "| NC1 | NC1:inconclusive | inconclusive | NC1:confirmed | confirmed | **not measured here** |" \
        in md


def test_the_seeds_of_a_verdict_are_those_of_its_parts():
    assert verdict_seeds({"parts": [{"seeds": [3, 1]}, {"seeds": [2, 1]}, {}]}) == [1, 2, 3]
    assert verdict_seeds({"claim": "NC3"}) == []


def test_a_report_of_the_other_code_and_the_same_preset_loads(tmp_path):
    path = _report(tmp_path)
    assert load_other(path, "quick", "standard")["model_code"] == "paper-code"
    assert load_other(path.parent, "quick", "standard")["verdicts"][0]["claim"] == "E10"


@pytest.mark.parametrize("code", ["standard", "paper-code"])
def test_a_report_of_another_preset_loads_with_either_model_code(tmp_path, code):
    path = _report(tmp_path, preset="quick", model_code=code)
    assert load_other(path, "paper-small", "paper-code")["model_code"] == code
    assert load_other(path, "paper-small", "standard")["preset"] == "quick"


@pytest.mark.parametrize("fields,message", [
    ({"model_code": "standard"}, "own preset 'quick' and model code 'standard'; --beside needs "
                                 "the other model code than this report's 'standard' or another"),
    ({"model_code": "mixed"}, "model code 'mixed'"),
    ({"model_code": "mixed", "preset": "paper"}, "model code 'mixed'"),
    ({"preset": None}, "names no preset"),
    ({"preset": ""}, "names no preset"),
    ({"verdicts": None}, "no verdict list"),
    ({"verdicts": [{"claim": "E10", "verdict": "ceiling"}]}, "without its claim, verdict and"),
])
def test_a_report_that_does_not_fit_the_comparison_is_refused(tmp_path, fields, message):
    with pytest.raises(PosencError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_other(_report(tmp_path, **fields), "quick", "standard")


def test_a_missing_or_unreadable_report_is_refused(tmp_path):
    with pytest.raises(PosencError, match="no report at"):
        load_other(tmp_path / "nothing" / "report.json", "quick", "standard")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(PosencError, match="not a readable report.json"):
        load_other(bad, "quick", "standard")
    with pytest.raises(PosencError, match="mixed model code"):
        load_other(_report(tmp_path), "quick", "mixed")


@pytest.mark.slow
def test_report_sets_the_other_codes_verdicts_beside_its_own(tmp_path, small_store_copy):
    std, pc = small_store_copy, tmp_path / "pc"  # std: the SMALL store (conftest), standard code
    proc = posenc("reproduce", *SMALL, "--paper-code", "--out", str(pc), timeout=900)
    assert proc.returncode == 0, proc.stderr
    before = (std / "report" / "report.md").read_text()
    proc = posenc("report", str(std), "--no-theory", "--beside", str(pc / "report"), timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = (std / "report" / "report.md").read_text()
    assert SECTION in report and SECTION not in before
    data = json.loads((std / "report" / "report.json").read_text())
    other = json.loads((pc / "report" / "report.json").read_text())
    assert data["model_code"] == "standard" and other["model_code"] == "paper-code"
    # the setup names what each store's ablations ran on, read from its runs' configs: the paper
    # code's mode of a non-paper-small preset ablates the whole data set, the standard the test split
    assert "- ablation: zero mode at `hook_z`, on the whole data set of each run (" in \
        (pc / "report" / "report.md").read_text()
    assert re.search(r"- ablation: zero mode at `hook_z`, on the first \d+(-\d+)? test examples "
                     r"of each run;", report)
    mine = {v["claim"]: v["verdict"] for v in data["verdicts"]}
    theirs = {v["claim"]: v["verdict"] for v in other["verdicts"]}
    rows = {r["claim"]: r for r in data["beside"]}
    seeds = {v["claim"]: v["seeds"] for v in data["verdicts"]}
    other_runless = {v["claim"] for v in other["verdicts"] if v["seeds"] == 0}
    assert 0 in seeds.values() and 0 < max(seeds.values())  # both kinds of row are exercised
    assert set(rows) == set(mine) | set(theirs)
    for claim, row in rows.items():
        assert row["here"] == mine.get(claim, "-") and row["there"] == theirs.get(claim, "-")
        runless = {c for c, n in seeds.items() if n == 0}
        want = ("only here" if claim not in theirs else "only there" if claim not in mine
                else "not measured in either" if claim in runless and claim in other_runless
                else "not measured here" if claim in runless
                else "not measured there" if claim in other_runless
                else "same" if mine[claim] == theirs[claim] else "differs")
        assert row["compare"] == want
        assert f"| {claim} | " in report
    assert "This report (standard, seeds 0-1) beside" in report
    # a report of the same model code is refused in one line, and the report stays as it was
    same = posenc("report", str(std), "--no-theory", "--beside", str(std / "report"), timeout=300)
    assert same.returncode == 2 and "needs the other model code" in same.stderr
    assert "or another preset" in same.stderr
    assert "Traceback" not in same.stderr and len(same.stderr.strip().splitlines()) == 1
    assert (std / "report" / "report.md").read_text() == report
    missing = posenc("report", str(std), "--beside", str(tmp_path / "nowhere"), timeout=300)
    assert missing.returncode == 2 and "no report at" in missing.stderr
    assert "Traceback" not in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    # the Python API refuses what the CLI refuses, with the same line
    from posenc.report import build_report
    with pytest.raises(PosencError) as api:
        build_report(std, theory=False, beside=tmp_path / "nowhere")
    assert missing.stderr.strip() == f"posenc: error: {api.value}"
    # a report of another preset (here the standard code's own verdicts, named for another
    # preset) is set beside as a regime: the section names both presets
    elsewhere = dict(data, preset="paper-small")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "report.json").write_text(json.dumps(elsewhere))
    proc = posenc("report", str(std), "--no-theory", "--beside", str(tmp_path / "elsewhere"),
                  timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = (std / "report" / "report.md").read_text()
    assert SECTION_PRESET in report and SECTION not in report
    assert re.search(r"This report \(smoke, standard, seeds 0-1\) beside `\S+` \(paper-small, "
                     r"standard, seeds 0-1\)\. 0 of \d+ claims judged on runs in both", report)
    again = json.loads((std / "report" / "report.json").read_text())
    assert {r["compare"] for r in again["beside"]} == {"same", "not measured in either"}
    assert all((r["compare"] == "same") == (seeds[r["claim"]] > 0) for r in again["beside"])


def test_words_of_two_regimes_compare_by_their_decisions(tmp_path):
    """Format 3 words name each side's regime ("not reproduced at quick" beside "not reproduced at
    paper-small"): the comparison reads their decisions, so the same decision is "same"; a report
    of formats 1-2 (its verdict the decision, "refuted" for against) is read with its decision and
    shown with its regime's word."""
    here = [{**_v("NC2 (layer 0)", "not reproduced at paper-small"), "decision": "against"},
            {**_v("E14", "confirmed at paper-small"), "decision": "confirmed"}]
    there = [{**_v("NC2 (layer 0)", "not reproduced at quick"), "decision": "against"},
             {**_v("E14", "inconclusive at quick"), "decision": "inconclusive"}]
    assert [r["compare"] for r in beside_rows(here, there)] == ["same", "differs"]
    old = load_other(_report(tmp_path, verdicts=[_v("NC2 (layer 0)", "refuted")]),
                     "paper-small", "paper-code")
    assert old["verdicts"][0]["verdict"] == "not reproduced at quick"
    assert old["verdicts"][0]["decision"] == "against"
    assert beside_rows(here[:1], old["verdicts"])[0]["compare"] == "same"
