"""Markdown table rows of the report, every cell escaped so that a table renders.

A cell's text may hold ``|`` (``|seed|`` in a statistic, a claim's formula) and, in principle, a
line break; either breaks a Markdown table (GitHub-flavoured Markdown splits a row at every
unescaped ``|`` and ends it at a line break).  :func:`md_row` escapes ``|`` as ``\\|`` (a
backslash already before a ``|`` is doubled, so it cannot swallow the escape) and turns line
breaks into spaces; every table of report.md is written through it.

Text read from elsewhere (another report's claims, verdicts, measurements and preset, set beside
this report's by ``--beside``) may hold markup of its own -- raw HTML (``<script>``), a link, an
image, emphasis, math.  :func:`md_text` writes such text so that a CommonMark / GFM renderer
shows it as it is: every character that can open markup (``\\ ` * _ [ ] < > & | ~ ! $``) is
backslash-escaped (CommonMark: any ASCII punctuation may be) and line breaks become spaces;
:func:`md_code` writes it as a code span whose fence no backtick run in it can close.
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


#: the characters md_text escapes: those that can start markup inside a line (a line break, the
#: only way to reach a line start, is made a space)
MARKUP = "\\`*_[]<>&|~!$"
_MARKUP = re.compile("([" + re.escape(MARKUP) + "])")


def md_text(value: Any) -> str:
    """Foreign text shown literally: line breaks made spaces, every :data:`MARKUP` character
    backslash-escaped (so ``|`` too: the result is a table cell as it is)."""
    return _MARKUP.sub(r"\\\1", _BREAK.sub(" ", str(value)))


def md_code(value: Any) -> str:
    """Foreign text as an inline code span (shown literally, HTML included): fenced by one
    backtick more than its longest backtick run, padded by a space where it starts or ends with
    a backtick; line breaks made spaces."""
    text = _BREAK.sub(" ", str(value))
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_text_row(cells: Iterable[str]) -> str:
    """``| a | b |`` of cells already written as Markdown (:func:`md_text`), not escaped again."""
    return "| " + " | ".join(cells) + " |"


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
