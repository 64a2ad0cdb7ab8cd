"""docs/real-models.md and docs/real-models/tables.md say what the committed sweep results
(docs/real-models/*.json, ``posenc ablate --out``) hold: tables.md is rebuilt from the JSON files
and compared whole, and the page's summary table is the one tables.md opens with."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FOLDER = ROOT / "docs" / "real-models"


def _tables_module():
    spec = importlib.util.spec_from_file_location("real_models_table",
                                                  ROOT / "scripts" / "real_models_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _summary_rows(text: str) -> list[str]:
    """The rows of the table that starts at the summary header, up to its first non-table line."""
    rows = []
    for line in text[text.index("| model | probe (seed) |"):].splitlines():
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_tables_md_is_what_the_json_files_hold():
    tables = _tables_module()
    assert (FOLDER / "tables.md").read_text() == tables.build(tables.read_runs(FOLDER))


def test_the_page_shows_the_summary_of_tables_md():
    page = (ROOT / "docs" / "real-models.md").read_text()
    tables = (FOLDER / "tables.md").read_text()
    assert _summary_rows(page) == _summary_rows(tables)
    assert len(_summary_rows(page)) == 2 + len(list(FOLDER.glob("*.json")))


def test_the_page_quotes_the_json_on_the_headline_heads():
    """The prose's headline numbers, read from the JSON, not typed from memory."""
    page = (ROOT / "docs" / "real-models.md").read_text()

    def drop(name: str, layer: int, head: int) -> str:
        data = json.loads((FOLDER / f"{name}.json").read_text())
        return f"{100 * data['layers'][layer]['drops'][head]:.1f}"

    for value in (drop("smollm2-induction-mean", 16, 0), drop("smollm2-induction-mean-seed1", 16, 0),
                  drop("smollm2-induction-zero", 1, 4), drop("smollm2-induction-zero", 1, 5),
                  drop("smollm2-induction-zero", 1, 3), drop("smollm2-induction-mean-kv", 18, 2),
                  drop("gemma3-induction-mean", 4, 1), drop("gemma3-induction-resample", 4, 1),
                  drop("gemma3-induction-zero", 10, 1)):
        assert re.search(rf"(?<![\d.]){re.escape(value)}(?![\d])", page), value

    def with_width(name: str, layer: int, head: int) -> str:
        la = json.loads((FOLDER / f"{name}.json").read_text())["layers"][layer]
        return f"{100 * la['drops'][head]:.1f} ± {100 * la['drop_half_width'][head]:.1f}"

    for value in (with_width("smollm2-induction-mean", 16, 0),
                  with_width("smollm2-induction-mean-seed1", 16, 0),
                  with_width("gemma3-induction-mean", 11, 2)):
        assert value in page, value
