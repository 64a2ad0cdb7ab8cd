"""Gaps of ``posenc check`` closed: Llama 4's llama3 scaling with low_freq_factor ==
high_freq_factor == 1 is taken and computed as transformers does; ``--expect scaling=dynamic``
written as docs/usage.md shows (no seq_len) works; a bias that differs from the expected ALiBi by
bfloat16 rounding alone says to pass ``--expect dtype=bfloat16``; and the ``posenc check``
section's examples of docs/usage.md run as written."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from posenc.checker import check_callable
from posenc.checker.expect import parse_expect

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realistic as R  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HAS_TF = importlib.util.find_spec("transformers") is not None


def _failures(report) -> str:
    return " | ".join(f"{p.name}: {p.detail}" for p in report.failures)


# --- Llama 4 ------------------------------------------------------------------------------------

LLAMA4_ROPE = {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
               "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}


@pytest.mark.skipif(not HAS_TF, reason="transformers is not installed")
def test_llama4_scaling_is_checked_against_transformers_own_code():
    from posenc.checker.hf_code import check_hf
    config = {"model_type": "llama", "hidden_size": 128, "num_attention_heads": 4,
              "rope_theta": 500000.0, "max_position_embeddings": 131072,
              "rope_scaling": LLAMA4_ROPE}
    report, spec, _ = check_hf(config)
    assert spec == ("rope:base=500000,pairing=half,scaling=llama3,factor=16,original=8192,"
                    "high_freq_factor=1")
    assert report.ok, report.text()


def test_llama4_expectation_is_checked_not_waved_through():
    """An unscaled RoPE is not Llama 4's: its slow planes are not divided by the factor."""
    report = check_callable(lambda x, p: R.neox(x, p, base=500000.0), "rope", dim=32,
                            expect="base=500000,scaling=llama3,factor=16,original=8192,"
                                   "low_freq_factor=1,high_freq_factor=1")
    assert not report.ok and "θ_m are not the frequencies" in _failures(report)


def test_llama4_expectation_parses_where_it_was_refused():
    parsed = parse_expect("scaling=llama3,factor=16,original=8192,low_freq_factor=1,"
                          "high_freq_factor=1")
    assert parsed["low_freq_factor"] == parsed["high_freq_factor"] == 1.0


# --- dynamic NTK as the doc writes it -----------------------------------------------------------

DYN_DOC = "scaling=dynamic,factor=2,original=2048"          # usage.md: scaling=dynamic,factor=F,original=L


def test_dynamic_expectation_without_seq_len_checks_the_scaling():
    assert check_callable(R.dynamic_ntk, "rope", dim=32, expect=DYN_DOC).ok
    report = check_callable(R.dynamic_ntk_never_updates, "rope", dim=32, expect=DYN_DOC)
    assert "dynamic NTK that never updates with length" in _failures(report)
    report = check_callable(R.dynamic_ntk_chunk_length, "rope", dim=32, expect=DYN_DOC)
    assert "sized by the chunk length" in _failures(report)


def test_dynamic_expectation_from_the_command_line():
    out = subprocess.run([sys.executable, "-m", "posenc", "check",
                          "tests/checker/realistic.py:dynamic_ntk", "--head-dim", "32",
                          "--expect", DYN_DOC], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"\n  dynamic scaling +pass ", out.stdout), out.stdout


# --- bfloat16 ALiBi: the hint where the rounding explains the difference --------------------

def test_falcon_style_alibi_against_stated_slopes_hints_at_bfloat16():
    report = check_callable(R.falcon_style, "bias", expect="slopes=press")
    expected = {p.name: p for p in report.properties}["expected"]
    assert expected.status == "fail"
    assert "differs from it by bfloat16 rounding alone" in expected.detail
    assert "pass --expect dtype=bfloat16" in expected.detail
    assert check_callable(R.falcon_style, "bias", expect="slopes=press,dtype=bfloat16").ok


def test_no_bfloat16_hint_where_the_slopes_are_wrong():
    report = check_callable(R.alibi_head_from_zero, "bias", expect="slopes=press")
    expected = {p.name: p for p in report.properties}["expected"]
    assert expected.status == "fail" and "dtype=" not in expected.detail


# --- the doc's examples -------------------------------------------------------------------------

def _section() -> str:
    text = (ROOT / "docs" / "usage.md").read_text()
    start = text.index("### `posenc check")
    return text[start:text.index("\n### ", start + 10)]


def _sessions() -> list[tuple[str, list[str]]]:
    """Each ```text block of the section that starts with ``$ posenc check``: (args, lines)."""
    out = []
    for block in re.findall(r"```text\n(.*?)```", _section(), re.S):
        lines = block.rstrip("\n").split("\n")
        if lines[0].startswith("$ posenc check "):
            out.append((lines[0][len("$ posenc check "):], lines[1:]))
    return out


def _norm(line: str) -> str:
    return " ".join(line.split())


@pytest.mark.parametrize("args, lines", _sessions(), ids=[a for a, _ in _sessions()])
def test_each_shown_session_prints_what_the_doc_shows(args, lines):
    if "thirdparty.py:rope_x_transformers" in args and importlib.util.find_spec(
            "x_transformers") is None:
        pytest.skip("x-transformers is not installed")
    out = subprocess.run([sys.executable, "-m", "posenc", "check", *args.split()], cwd=ROOT,
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    got = [_norm(x) for x in out.stdout.splitlines()]
    at = 0
    for want in (_norm(x) for x in lines if x.strip() != "..."):
        prefix = want.endswith("...")
        want = want.removesuffix("...").rstrip()
        hit = next((k for k in range(at, len(got))
                    if (got[k].startswith(want) if prefix else got[k] == want)), None)
        assert hit is not None, f"{want!r} not printed (in order):\n{out.stdout}{out.stderr}"
        at = hit + 1
    assert out.returncode == (1 if any("DOES NOT CONFORM" in x or " fail " in x for x in lines)
                              else 0), out.stderr


def _expectations() -> list[str]:
    """Every ``--expect VALUE`` the section writes, its placeholders given values (F = 2, L =
    2048, N = 32, M = 128) and each of ``a|b`` alternatives taken."""
    found = []
    for m in re.finditer(r"--expect[ =]([^`\s)]+(?:\s+[a-z_]+=[^`\s)]+)*)", _section()):
        value = re.sub(r"\s+", "", m.group(1)).rstrip(",")
        if "..." in value or ".." in value or "K=V" in value:
            continue
        value = re.sub(r"=F\b", "=2", value)
        value = re.sub(r"=L\b", "=2048", value)
        value = re.sub(r"=N\b", "=32", value)
        value = re.sub(r"=M\b", "=128", value)
        for alt in re.findall(r"=([a-z0-9]+(?:\|[a-z0-9]+)+)", value):
            for one in alt.split("|"):
                found.append(value.replace(alt, one))
            break
        else:
            found.append(value)
    return found


def test_the_section_writes_expectations_at_all():
    assert "scaling=dynamic,factor=2,original=2048" in _expectations()
    assert len(_expectations()) >= 5


@pytest.mark.parametrize("value", _expectations())
def test_every_expectation_the_doc_writes_is_taken(value):
    kind = "t5" if "bidirectional" in value or "buckets" in value else None
    assert parse_expect(value, kind) is not None
