"""report.json's format version (posenc.report.report_json): written in every report, read by
every reader in posenc (``--beside``), an unknown format refused in one line."""

import json

import pytest

from posenc.errors import PosencError
from posenc.report.beside import load_other
from posenc.report.report_json import REPORT_FORMAT, read_report_json, report_format


def _write(tmp_path, **fields):
    payload = {"preset": "quick", "model_code": "paper-code", "verdicts": []}
    payload.update(fields)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(payload))
    return path


def test_a_report_without_the_key_is_format_1_and_the_current_one_reads():
    assert report_format({}, "x") == 1
    assert report_format({"format": REPORT_FORMAT}, "x") == REPORT_FORMAT == 3


@pytest.mark.parametrize("fmt,message", [
    (4, "format 4, written by a newer posenc; this version reads formats 1-3"),
    (0, "format 0, not a report.json format"), ("2", "format '2', not a report.json format"),
    (True, "format True, not a report.json format"), (None, "format None, not a report.json")])
def test_an_unknown_format_is_refused_in_one_line(tmp_path, fmt, message):
    path = _write(tmp_path, format=fmt)
    with pytest.raises(PosencError) as err:
        read_report_json(tmp_path)
    assert message in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(PosencError, match="written by a newer posenc" if fmt == 4 else "format"):
        load_other(path, "quick", "standard")  # --beside reads through the same check


def test_known_formats_load(tmp_path):
    for fmt in (2, 3):
        path = _write(tmp_path, format=fmt)
        assert read_report_json(path)[1]["format"] == fmt
    assert load_other(_write(tmp_path), "quick", "standard")["model_code"] == "paper-code"
