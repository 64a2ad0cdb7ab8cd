"""Reading a local Hugging Face ``config.json`` safely (``--from-hf``): only a regular file of a
bounded size, UTF-8, JSON nested a bounded depth; a dict given to the API is depth-checked too.
Every failure is one :class:`PosencError` line.  :func:`read_regular` and :func:`text_depth` are
the bounded reader every other file a user names goes through too (``ablate --text``, ``report
--beside``)."""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

from ..coerce import shown
from ..errors import PosencError

#: The largest config.json read (a real one is under 100 KB) and its deepest nesting (a real one
#: nests 3 or 4 levels: quantization and sub-model configs).
MAX_CONFIG_BYTES = 16 * 2**20
MAX_CONFIG_DEPTH = 32


def read_hf_config(source: Any) -> tuple[dict, str]:
    """``source`` (a path to a config.json, or a dict) -> (the dict, a name for messages).

    A path is read only if it is a regular file of at most MAX_CONFIG_BYTES (a FIFO, a device
    such as /dev/urandom or a directory without config.json is refused before any read, so
    nothing blocks or reads without end); its JSON, like a dict given, nests at most
    MAX_CONFIG_DEPTH levels."""
    if isinstance(source, dict):
        _check_depth(source, "config")
        return source, "config"
    if not isinstance(source, (str, os.PathLike)):
        raise PosencError(f"--from-hf takes a path to a config.json; got {type(source).__name__}")
    path = os.fspath(source)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    data = parse_bounded_json(read_regular(path), path, "--from-hf", MAX_CONFIG_DEPTH, "config.json")
    if not isinstance(data, dict):
        raise PosencError(f"--from-hf: {path} holds a JSON {type(data).__name__}, not an object")
    return data, path


def read_regular(path: str, what: str = "--from-hf", limit: int = MAX_CONFIG_BYTES,
                 expected: str = "a config.json is under 100 KB") -> str:
    """The text of ``path``: a regular file of at most ``limit`` bytes, UTF-8.  Opened without
    blocking (a FIFO with no writer would block ``open``) and checked on the open file; every
    failure one line starting with ``what``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise PosencError(f"{what}: no such file {path!r}") from None
    except OSError as exc:
        raise PosencError(f"{what}: cannot read {path!r}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise PosencError(f"{what}: {path} is not a regular file (a FIFO, device, socket or "
                              f"folder)")
        if info.st_size > limit:
            raise PosencError(f"{what}: {path} is {info.st_size} bytes; {expected} (the limit is "
                              f"{limit / 2**20:g} MiB)")
        try:
            raw = fh.read(limit + 1)        # the file may grow after the stat
        except OSError as exc:
            raise PosencError(f"{what}: cannot read {path!r}: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise PosencError(f"{what}: {path} is over {limit / 2**20:g} MiB; {expected}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PosencError(f"{what}: cannot read {path!r}: not UTF-8 text ({exc.reason} at "
                          f"byte {exc.start})") from None


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def parse_bounded_json(text: str, path: str, what: str, max_depth: int, kind: str) -> Any:
    """``text`` (read by :func:`read_regular`) parsed as JSON after a check that it nests at
    most ``max_depth`` levels (so the parser cannot recurse without end); one PosencError line,
    naming ``what`` (the option) and ``kind`` (the file it should be), otherwise."""
    depth = text_depth(text)
    if depth > max_depth:
        raise PosencError(f"{what}: {path} nests {depth} levels deep; the limit is {max_depth} "
                          f"(a {kind} nests a few levels)")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise PosencError(f"{what}: {path} is not a readable {kind} (not valid JSON: "
                          f"{shown(str(exc), 160)})") from None


def text_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON text, strings left out (vectorised: a
    16 MiB text takes milliseconds, and no parser recursion is involved)."""
    import numpy as np

    codes = np.frombuffer(_JSON_STRING.sub("", text).encode("utf-8"), dtype=np.uint8)
    steps = (np.isin(codes, (91, 123)).astype(np.int64) - np.isin(codes, (93, 125)))
    return int(np.cumsum(steps).max(initial=0))


def _check_depth(data: Any, where: str) -> None:
    """A dict given to the API nests at most MAX_CONFIG_DEPTH levels (walked without
    recursion)."""
    level = [data]  # the nodes at depth 1, 2, ... (the config itself is depth 1, as text_depth counts)
    for _ in range(MAX_CONFIG_DEPTH):
        level = list({id(v): v for x in level for v in (x.values() if isinstance(x, dict) else x)
                      if isinstance(v, (dict, list, tuple))}.values())     # shared ones once
        if not level:
            return
    raise PosencError(f"--from-hf: {where} nests more than {MAX_CONFIG_DEPTH} levels deep; a "
                      f"config.json nests a few")
