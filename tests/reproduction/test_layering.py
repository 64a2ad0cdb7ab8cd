"""The reproduction sits above the report and the verdicts: no import, at any depth (inside
functions too), runs from a lower package up to posenc.reproduction, nor from any package below
the faces up to posenc.api, posenc.commands or posenc.cli.  The report only renders: it never
imports the sweep, the plan or the rounds."""

from __future__ import annotations

import pytest
from test_import_cycles import graph

#: the packages allowed to import posenc.reproduction: itself and the faces above it
ABOVE = ("posenc.reproduction", "posenc.api", "posenc.commands", "posenc.cli")
FACES = ("posenc.api", "posenc.commands", "posenc.cli")


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _upward(edges: dict[str, dict[str, int]], targets: tuple[str, ...],
            allowed: tuple[str, ...]) -> list[str]:
    return sorted(f"{src} -> {dst} (line {line})" for src, out in edges.items()
                  if src != "posenc" and not _within(src, allowed)
                  for dst, line in out.items() if _within(dst, targets))


@pytest.fixture(scope="module")
def edges():
    return graph()


def test_nothing_below_imports_the_reproduction(edges):
    assert _upward(edges, ("posenc.reproduction",), ABOVE) == []


def test_nothing_below_the_faces_imports_them(edges):
    assert _upward(edges, FACES, FACES) == []


def test_the_report_imports_no_plan_sweep_or_rounds(edges):
    report = {src: out for src, out in edges.items() if _within(src, ("posenc.report",))}
    assert report, "posenc.report has modules"
    assert _upward(report, ("posenc.reproduction", "posenc.empirical.pipeline.sweep"), ()) == []


def test_the_check_sees_an_upward_import():
    """The check itself: a report module importing the reproduction is found."""
    fake = {"posenc.report.build": {"posenc.reproduction.sweep": 3}}
    assert _upward(fake, ("posenc.reproduction",), ABOVE) == [
        "posenc.report.build -> posenc.reproduction.sweep (line 3)"]
