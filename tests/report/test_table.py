"""The report renders (posenc.report.table): every cell of every Markdown table escaped, so each
row of each table of report.md has as many cells as its header -- checked on the small store's
report with a table parser that honours ``\\|`` (a GitHub-flavoured Markdown renderer's rule)."""

import csv
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc.report.table import md_cell, md_header, md_row


def split_row(line: str) -> list[str]:
    """A table row's cells as a GFM renderer splits it: at each ``|`` that no backslash
    escapes (a backslash escapes the character after it), the row's outer pipes dropped."""
    cells, cur, i = [], "", 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            cur += line[i:i + 2]
            i += 2
            continue
        if line[i] == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += line[i]
        i += 1
    cells.append(cur)
    if cells and not cells[0].strip():
        cells = cells[1:]
    if cells and not cells[-1].strip():
        cells = cells[:-1]
    return [c.strip() for c in cells]


def tables(text: str) -> list[list[str]]:
    """Each Markdown table of ``text``: its consecutive lines that start with ``|``."""
    out, cur = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    return out


def check_tables(text: str) -> int:
    """Assert every table has a rule after its header and as many cells in every row as in its
    header; returns the number of tables."""
    found = tables(text)
    for table in found:
        header = split_row(table[0])
        assert len(table) >= 2 and set(table[1]) <= {"|", "-", ":"}, table[:2]
        assert len(split_row(table[1])) == len(header), table[:2]
        for row in table[2:]:
            assert len(split_row(row)) == len(header), (len(split_row(row)), len(header), row)
    return len(found)


def test_a_pipe_in_a_cell_is_escaped_and_a_line_break_removed():
    assert md_cell("|seed| margin") == r"\|seed\| margin"
    assert md_cell("two\nlines\r\n here") == "two lines here"
    assert md_cell(3) == "3"
    assert md_row(["a|b", "c"]) == r"| a\|b | c |"
    assert md_header(["x", "y|z"]) == [r"| x | y\|z |", "|---|---|"]
    # a backslash before a pipe is doubled, so it cannot escape the escape
    assert split_row(md_row(["a\\|b", "c"])) == [r"a\\\|b", "c"]


@given(st.lists(st.text(alphabet="ab |\\\n*`", max_size=12), min_size=1, max_size=6))
def test_any_cells_make_a_row_of_that_many_cells(cells):
    parsed = split_row(md_row(cells))
    assert len(parsed) == len(cells)
    for got, want in zip(parsed, cells):
        if "\\" not in want:  # without backslashes the cell reads back as it was, on one line
            assert got.replace("\\|", "|") == re.sub(r"\s*\n+\s*", " ", want).strip()


def test_the_parser_sees_a_broken_row():
    """The checker fails on the rows as they were written before the escape (14 pipes)."""
    broken = "| a | b |\n|---|---|\n| x |seed| | y |\n"
    with pytest.raises(AssertionError):
        check_tables(broken)
    assert check_tables("| a | b |\n|---|---|\n| x \\|seed\\| | y |\n") == 1


@pytest.mark.slow
def test_every_table_of_the_small_report_has_as_many_cells_as_its_header(small_store):
    report = (small_store / "report" / "report.md").read_text()
    assert check_tables(report) >= 10
    # the rows that broke the table: their statistic holds |seed|
    thm = next(line for line in report.splitlines() if line.startswith("| Thm 6.1 |"))
    assert len(split_row(thm)) == 10 and r"\|seed\|" in thm
    data = json.loads((small_store / "report" / "report.json").read_text())
    assert data["format"] == 3 and data["accuracy_unit"] == "percent"
    assert data["until_decided"] is None
    with open(small_store / "report" / "runs.csv", newline="") as fh:  # percent there too
        rows = list(csv.DictReader(fh))
    assert "test_acc" not in rows[0] and max(float(r["test_acc_pct"]) for r in rows) > 50
    # the probe table in layer order: the input embedding first
    assert "| PE (role) | embed | block0 | block1 |" in report
    # the ablation figure of a PE shows all its seeds
    assert "**rope** (seeds 0-1; table: seed 0) ![rope](ablation_rope.png)" in report
