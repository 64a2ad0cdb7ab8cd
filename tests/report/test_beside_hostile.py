"""``report --beside OTHER`` on hostile input: OTHER is read through the bounded reader of
``--from-hf`` (a FIFO, a device, an oversized or deeply nested file refused in one line before
anything blocks or fills memory), its text is shown literally in report.md (no HTML or markup of
it renders), and a claim given twice with different verdicts is refused."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc.errors import PosencError
from posenc.report.beside import beside_markdown, beside_rows, load_other
from posenc.report.report_json import MAX_REPORT_BYTES, MAX_REPORT_DEPTH
from posenc.report.table import MARKUP, md_code, md_text

ROOT = Path(__file__).resolve().parents[2]


def _v(claim, word, measured=None, seeds=(0, 1)):
    return {"claim": claim, "verdict": word, "measured": measured or f"{claim}:{word}",
            "parts": [{"seeds": list(seeds)}]}


def _report(tmp_path, verdicts, **fields):
    payload = {"preset": "quick", "model_code": "paper-code", "verdicts": verdicts, **fields}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(payload))
    return path


def _load_in_child(path: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """load_other(path) in a fresh interpreter: a read that blocks or never ends shows as a
    timeout of the child, not as a hung test run."""
    code = ("import sys\nfrom posenc.errors import PosencError\n"
            "from posenc.report.beside import load_other\n"
            "try:\n    load_other(sys.argv[1], 'quick', 'standard')\n"
            "except PosencError as exc:\n    print(exc)\n    sys.exit(2)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                          env=env, timeout=timeout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)                     # no writer: an open() without O_NONBLOCK blocks forever
    out = _load_in_child(str(tmp_path))
    assert out.returncode == 2 and "not a regular file" in out.stdout, out
    assert "Traceback" not in out.stderr


@pytest.mark.skipif(not os.path.exists("/dev/urandom"), reason="no /dev/urandom")
def test_a_device_is_refused_before_any_read():
    out = _load_in_child("/dev/urandom")
    assert out.returncode == 2 and "--beside: /dev/urandom is not a regular file" in out.stdout, out


def test_an_oversized_file_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "report.json"
    with open(path, "wb") as fh:        # sparse: the size is there, the bytes are not written
        fh.truncate(MAX_REPORT_BYTES + 1)
    with pytest.raises(PosencError, match=r"bytes; a report.json is under 1 MB \(the limit is 16 MiB\)"):
        load_other(path, "quick", "standard")


@pytest.mark.parametrize("depth", [MAX_REPORT_DEPTH + 1, 100_000])
def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path, depth):
    path = tmp_path / "report.json"
    path.write_text('{"verdicts": [], "x": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(PosencError) as err:
        load_other(path, "quick", "standard")
    assert f"nests {depth + 1} levels deep" in str(err.value) and "\n" not in str(err.value)


def test_nesting_at_the_limit_still_reads(tmp_path):
    inner = "[" * (MAX_REPORT_DEPTH - 3) + "]" * (MAX_REPORT_DEPTH - 3)   # object, list, dict
    path = tmp_path / "report.json"
    path.write_text('{"preset": "quick", "model_code": "paper-code", "verdicts": '
                    '[{"claim": "E10", "verdict": "ceiling", "measured": "m", "x": ' + inner + "}]}")
    assert load_other(path, "quick", "standard")["verdicts"][0]["claim"] == "E10"


def test_text_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "report.json"
    path.write_bytes(b'{"verdicts": ["\xff"]}')
    with pytest.raises(PosencError, match="not UTF-8 text"):
        load_other(path, "quick", "standard")


def test_a_claim_twice_with_conflicting_verdicts_is_refused(tmp_path):
    path = _report(tmp_path, [_v("E10", "confirmed"), _v("E12", "refuted"), _v("E10", "refuted")])
    with pytest.raises(PosencError) as err:
        load_other(path, "quick", "standard")
    assert ("holds claim 'E10' twice, with verdicts 'confirmed at quick' and 'not reproduced at "
            "quick'") in str(err.value)   # a format-2 verdict is read in its regime's words
    path = _report(tmp_path, [_v("E10", "confirmed", "a: +1"), _v("E10", "confirmed", "a: +2")])
    with pytest.raises(PosencError, match="twice, with the same verdict but another measurement"):
        load_other(path, "quick", "standard")


def test_a_claim_twice_alike_is_read_once(tmp_path):
    path = _report(tmp_path, [_v("E10", "confirmed"), _v("E12", "refuted"), _v("E10", "confirmed")])
    other = load_other(path, "quick", "standard")["verdicts"]
    assert [v["claim"] for v in other] == ["E10", "E12"]
    rows = beside_rows([_v("RA", "refuted")], other)
    assert [r["claim"] for r in rows] == ["RA", "E10", "E12"]   # "only there" once each


# --- foreign text shown literally -------------------------------------------------------------

def unescape(text: str) -> str:
    """What a CommonMark renderer shows of md_text's output: each backslash escape read as its
    character (the reference of the round trip below, written from the CommonMark rule)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in MARKUP:
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def bare_markup(text: str) -> list[int]:
    """Offsets of MARKUP characters in ``text`` that no backslash escapes."""
    bare, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in MARKUP:
            i += 2
            continue
        if text[i] in MARKUP:
            bare.append(i)
        i += 1
    return bare


TEXT = st.text(st.sampled_from(list(MARKUP) + list("ab 1()#-:<>\n\r\t") + ["é", "\u2028"]),
               max_size=40)


@given(TEXT)
def test_md_text_leaves_no_markup_and_shows_the_text_itself(text):
    out = md_text(text)
    assert "\n" not in out and "\r" not in out
    assert bare_markup(out) == []
    flat = " ".join(part.strip() for part in text.replace("\r", "\n").split("\n"))
    assert unescape(out).split() == flat.split()     # the same words, breaks made spaces


@given(TEXT)
def test_md_code_is_one_code_span_no_backtick_run_closes(text):
    """CommonMark closes a code span at the first backtick run as long as its opening fence: no
    run inside may be that long, and the span holds the text (breaks made spaces, one pad space
    each side where it starts or ends with a backtick)."""
    out = md_code(text)
    k = len(out) - len(out.lstrip("`"))
    inner = out[k:len(out) - k]
    assert out.endswith("`" * k) and "\n" not in out and "\r" not in out
    assert k not in [len(r) for r in re.findall("`+", inner)]
    flat = re.sub(r"\s*[\r\n]+\s*", " ", text)
    padded = flat.startswith("`") or flat.endswith("`")
    assert inner == (f" {flat} " if padded else flat)


def test_the_section_shows_foreign_html_as_text(tmp_path):
    evil = "<script>alert(1)</script>"
    path = _report(tmp_path, [_v(evil, "<b>refuted</b>", "[x](javascript:y) ![i](z) $a$ *e* a|b"),
                              _v("E10", "confirmed")], preset="<i>quick</i>")
    other = load_other(path, "quick", "standard")
    rows = beside_rows([_v("E10", "refuted")], other["verdicts"])
    md = "\n".join(beside_markdown(rows, "standard", other["model_code"], "o`dd/<b>/report.json",
                                   [0, 1], [0, 1], "quick", other["preset"]))
    assert "<script>" not in md and "<b>" not in md.replace("``o`dd/<b>/report.json``", "")
    assert "\\<script\\>alert(1)\\</script\\>" in md and "\\<b\\>refuted\\</b\\>" in md
    assert "\\[x\\](javascript:y) \\!\\[i\\](z) \\$a\\$ \\*e\\* a\\|b" in md
    assert "beside ``o`dd/<b>/report.json`` (\\<i\\>quick\\</i\\>, paper-code" in md
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert all(len([i for i in bare_markup(line) if line[i] == "|"]) == 7 for line in table)


def test_a_markdown_renderer_shows_the_foreign_text_literally(tmp_path):
    markdown_it = pytest.importorskip("markdown_it")
    evil = "<img src=x onerror=alert(1)> [l](javascript:x) `c` **b** &amp; a|b"
    rows = beside_rows([_v("E10", "refuted")], [_v("E10", evil, evil)])
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(
        "\n".join(beside_markdown(rows, "standard", "paper-code", "x", [0], [0])))
    assert "<img" not in html and "<a " not in html and "<code>" not in html.split("<table>")[1]
    assert "&lt;img src=x onerror=alert(1)&gt; [l](javascript:x) `c` **b** &amp;amp; a|b" in html
