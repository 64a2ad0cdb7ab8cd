"""One module per ``posenc`` sub-command; see :mod:`posenc.cli`."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")        # :func:`posenc.bound`, :mod:`~a.b`
_LITERAL = re.compile(r"``([^`]+)``")               # ``posenc bound``


def plain(doc: str) -> str:
    """The first line of a docstring in plain words, for a parser's description: reST roles
    become the name they point at, double-backquoted literals their text."""
    line = doc.strip().splitlines()[0]
    return _LITERAL.sub(r"\1", _ROLE.sub(r"\1", line))


def add_set_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup, what: str,
                   note: str = "") -> None:
    """``--set KEY=VALUE`` (repeatable) on every command that builds a training config."""
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override a training-config field of {what}, e.g. --set epochs=10 "
                             f"--set task.n_samples=20000 (JSON values; repeatable{note})")


def parse_sets(items: list[str]) -> dict[str, Any]:
    """The ``--set`` items as dotted config keys -> values (JSON where it parses, else the text);
    which keys a config takes is the config's check (posenc.empirical.config.check_overrides)."""
    from ..errors import PosencError

    out: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise PosencError(f"--set takes KEY=VALUE; got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out
