"""Markdown table rows of the report, every cell escaped so that a table renders.

A cell's text may hold ``|`` (``|seed|`` in a statistic, a claim's formula) and, in principle, a
line break; either breaks a Markdown table (GitHub-flavoured Markdown splits a row at every
unescaped ``|`` and ends it at a line break).  :func:`md_row` escapes ``|`` as ``\\|`` (a
backslash already before a ``|`` is doubled, so it cannot swallow the escape) and turns line
breaks into spaces; every table of report.md is written through it.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

_PIPE = re.compile(r"(\\*)\|")
_BREAK = re.compile(r"\s*[\r\n]+\s*")


def md_cell(value: Any) -> str:
    """One cell's text: ``|`` escaped, line breaks made spaces."""
    text = _BREAK.sub(" ", str(value))
    return _PIPE.sub(lambda m: 2 * m.group(1) + "\\|", text)


def md_row(cells: Iterable[Any]) -> str:
    """``| a | b |`` of escaped cells."""
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def md_rule(n: int) -> str:
    """The header's rule of an ``n``-column table."""
    return "|" + "---|" * n


def md_header(cells: Iterable[Any]) -> list[str]:
    """A header row and its rule."""
    cells = list(cells)
    return [md_row(cells), md_rule(len(cells))]


def value_span(vals: Iterable[int]) -> str:
    """``lo-hi`` of integers, the one value where they agree, ``-`` for none."""
    vals = list(vals)
    return "-" if not vals else f"{min(vals)}" if min(vals) == max(vals) else \
        f"{min(vals)}-{max(vals)}"
