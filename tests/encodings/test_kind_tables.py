"""The hand-written tables of part kinds cannot go stale: the roles-and-kinds table of
``posenc/encodings/parts.py``'s docstring and of ``docs/adding-a-pe.md`` ("The parts") hold
exactly the kinds the catalogue is made of (:func:`posenc.encodings.registry.kinds`), and the
spec-to-components table of ``posenc/empirical/model/pe/plan.py`` has a row for exactly the
catalogue's entries (:data:`~posenc.encodings.registry.REGISTRY`).  A kind or entry added to the
catalogue without its rows fails here (the last test adds one)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import ClassVar

import posenc
from posenc.encodings import registry
from posenc.encodings.base import PESpec
from posenc.encodings.parts import ROLES, Part

PACKAGE = Path(posenc.__file__).parent
GUIDE = Path(__file__).parents[2] / "docs" / "adding-a-pe.md"


def _docstring(relative: str) -> str:
    """A module's docstring, read without importing it (plan.py imports torch)."""
    return ast.get_docstring(ast.parse((PACKAGE / relative).read_text(encoding="utf-8")))


def rst_table(text: str) -> list[list[str]]:
    """The body rows of the one reStructuredText simple table in ``text``, a row continued on
    lines whose first cell is blank joined into it (cells joined by a space)."""
    lines = text.splitlines()
    borders = [i for i, line in enumerate(lines) if re.fullmatch(r"\s*=+(\s+=+)+\s*", line)]
    assert len(borders) == 3, f"expected one simple table (3 border lines), found {len(borders)}"
    starts = [m.start() for m in re.finditer(r"=+", lines[borders[0]])]
    rows: list[list[str]] = []
    for line in lines[borders[1] + 1:borders[2]]:
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [len(line)])]
        if cells[0]:
            rows.append(cells)
        else:
            rows[-1] = [f"{old} {new}".strip() for old, new in zip(rows[-1], cells)]
    return rows


def markdown_table(text: str, header: str) -> list[list[str]]:
    """The body rows of the markdown table whose header line is ``header``."""
    lines = text.splitlines()
    at = lines.index(header)
    rows = []
    for line in lines[at + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def registry_kinds() -> dict[str, set[str]]:
    """role -> the kinds of that role the catalogue is made of."""
    out: dict[str, set[str]] = {role: set() for role in ROLES}
    for kind, role in registry.kinds().items():
        out[role].add(kind)
    return out


def parts_docstring_kinds() -> dict[str, set[str]]:
    return {role: set(re.split(r"[,\s]+", kinds.strip()))
            for role, _, kinds in rst_table(_docstring("encodings/parts.py"))}


def guide_kinds() -> dict[str, set[str]]:
    rows = markdown_table(GUIDE.read_text(encoding="utf-8"),
                          "| role | where it enters the logit | kinds today |")
    return {role.strip("`"): set(re.findall(r"`([^`]+)`", kinds)) for role, _, kinds in rows}


def plan_docstring_specs() -> set[str]:
    """The catalogue names of plan.py's rows ("custom kernel" and "custom frequencies" are the
    two ways of ``custom``)."""
    return {spec.split()[0] for spec, _ in rst_table(_docstring("empirical/model/pe/plan.py"))}


def test_the_parts_docstring_lists_every_kind_by_role():
    assert parts_docstring_kinds() == registry_kinds()


def test_the_guide_lists_every_kind_by_role():
    assert guide_kinds() == registry_kinds()


def test_the_plan_docstring_has_a_row_per_catalogue_entry():
    assert plan_docstring_specs() == set(registry.REGISTRY)


@dataclasses.dataclass(frozen=True)
class _FakeBias(PESpec):
    name: ClassVar[str] = "fake_bias"

    @property
    def family(self) -> str:
        return "additive-bias"

    def parts(self) -> tuple[Part, ...]:
        return (Part("bias", "fake_kind", self),)


def test_an_entry_added_without_its_rows_fails_every_table(monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, _FakeBias.name, _FakeBias)
    assert "fake_kind" in registry_kinds()["bias"]
    assert parts_docstring_kinds() != registry_kinds()
    assert guide_kinds() != registry_kinds()
    assert plan_docstring_specs() != set(registry.REGISTRY)
