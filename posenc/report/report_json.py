"""``report.json``'s format version, and the one reader every program in posenc that reads a
report.json goes through.

The payload carries ``"format": REPORT_FORMAT``.  A report.json without the key was written
before it existed and reads as format 1 (its fields are those of format 2 less the key itself,
``until_decided`` and ``accuracy_unit``).  A format this posenc does not know -- a newer one, or
anything that is not a positive integer -- is refused in one line, so a reader never takes a
field whose meaning changed for the old one.

Format 3: each verdict's ``verdict`` is the word the report shows, with the regime that decided
it (``confirmed at paper-small``, ``not reproduced at quick``:
:func:`posenc.verdicts.words.verdict_word`), ``decision`` the statistic's decision
(``confirmed``, ``against``, ``inconclusive``, ``ceiling``), ``regime`` the preset and ``exact``
the sign-flip test of its judged part; the payload's ``regime`` is the runs' preset.  In formats
1 and 2 ``verdict`` is the decision, ``refuted`` for ``against`` (:func:`verdict_decision` reads
either).

Units: every accuracy in report.json is in percent (``accuracy_unit``), as in report.md --
``accuracy`` (mean, interval, per-seed values, chance, floor; ``test_se`` in points),
``bayes_ceiling``'s ``accuracy`` and ``se``, and the verdicts' differences of accuracies (points).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..coerce import is_int
from ..encodings.hf_read import parse_bounded_json, read_regular
from ..errors import PosencError

#: the format report.json is written in; 1 is a report.json without the key
REPORT_FORMAT = 3
READS = (1, 2, 3)
#: formats 1-2's verdict words -> the decision (format 3 names it ``decision``)
LEGACY_DECISIONS = {"refuted": "against"}


def verdict_decision(verdict: dict[str, Any]) -> str:
    """A report.json verdict's decision: its ``decision`` (format 3), else its ``verdict`` read as
    formats 1-2 wrote it (``refuted`` -> ``against``)."""
    decision = verdict.get("decision")
    if isinstance(decision, str):
        return decision
    word = str(verdict.get("verdict"))
    return LEGACY_DECISIONS.get(word, word)


def report_format(payload: dict[str, Any], where: str | Path) -> int:
    """The payload's format (1 when it has none); a format this posenc cannot read is a
    PosencError naming it."""
    fmt = payload.get("format", 1)
    if not is_int(fmt) or fmt < 1:
        raise PosencError(f"{where} has format {fmt!r}, not a report.json format (a positive "
                          "integer)")
    if fmt not in READS:
        raise PosencError(f"{where} is a report.json of format {fmt}, written by a newer posenc; "
                          f"this version reads formats {READS[0]}-{READS[-1]}")
    return fmt


#: The largest report.json read and its deepest nesting: a real one is about 150 KB and nests 8
#: levels (verdict -> parts -> seeds); past these it is no report posenc wrote.
MAX_REPORT_BYTES = 16 * 2**20
MAX_REPORT_DEPTH = 32


def read_report_json(path: str | Path, flag: str = "--beside") -> tuple[Path, dict[str, Any]]:
    """(the file's path, its checked payload) of a ``report.json`` or a report folder holding
    one; a missing, unreadable or unknown-format file is a PosencError (``flag``: the option
    that named it, for the message).

    Read through the bounded reader of ``--from-hf`` (:func:`~posenc.encodings.hf_read.
    read_regular`): only a regular file of at most MAX_REPORT_BYTES, opened without blocking (a
    FIFO or a device such as /dev/urandom is refused before any read); its JSON nests at most
    MAX_REPORT_DEPTH levels, counted before it is parsed (no RecursionError)."""
    path = Path(path)
    if path.is_dir():
        path = path / "report.json"
    if not os.path.lexists(path):
        raise PosencError(f"no report at {path} ({flag} takes a report's report.json "
                          "or its folder)")
    text = read_regular(str(path), flag, MAX_REPORT_BYTES, "a report.json is under 1 MB")
    payload = parse_bounded_json(text, str(path), flag, MAX_REPORT_DEPTH, "report.json")
    if not isinstance(payload, dict) or not isinstance(payload.get("verdicts"), list):
        raise PosencError(f"{path} is not a posenc report.json (it has no verdict list)")
    report_format(payload, path)
    return path, payload
