"""One module per ``posenc`` sub-command; see :mod:`posenc.cli`."""

from __future__ import annotations

import re

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")        # :func:`posenc.bound`, :mod:`~a.b`
_LITERAL = re.compile(r"``([^`]+)``")               # ``posenc bound``


def plain(doc: str) -> str:
    """The first line of a docstring in plain words, for a parser's description: reST roles
    become the name they point at, double-backquoted literals their text."""
    line = doc.strip().splitlines()[0]
    return _LITERAL.sub(r"\1", _ROLE.sub(r"\1", line))
