"""docs/api.md documents every public name of ``posenc`` with its whole signature."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import posenc

DOC = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text(encoding="utf-8")


def _section(name: str) -> str:
    match = re.search(rf"^### `posenc\.{re.escape(name)}`\n(.*?)(?=^### |\Z)", DOC, re.S | re.M)
    assert match, f"docs/api.md has no section for posenc.{name}"
    return match.group(1)


@pytest.mark.parametrize("name", posenc.__all__)
def test_public_name_is_documented_with_its_signature(name):
    section = _section(name)
    obj = getattr(posenc, name)
    signature_line = next((line for line in section.splitlines()
                           if line.startswith(f"`posenc.{name}")), None)
    assert signature_line, f"posenc.{name}: no signature line"
    if not callable(obj) or name == "PosencError":
        return
    params = inspect.signature(obj).parameters
    for p in params.values():
        shown = p.name if p.kind is not p.VAR_KEYWORD else f"**{p.name}"
        assert re.search(rf"(?<![\w]){re.escape(shown)}\b", signature_line), \
            f"posenc.{name}: parameter {p.name!r} missing from {signature_line}"
    if not isinstance(obj, type) and obj.__annotations__.get("return"):
        ret = str(obj.__annotations__["return"]).strip("'\"")
        shown_ret = signature_line.rsplit("->", 1)[-1].strip(" `")
        assert ret.split("[")[0].split(".")[-1] in shown_ret or \
            shown_ret.split("[")[0] in ret, f"posenc.{name}: returns {ret}, doc says {shown_ret}"


def test_no_section_documents_a_name_that_is_not_public():
    documented = set(re.findall(r"^### `posenc\.(\w+)`", DOC, re.M))
    assert documented == set(posenc.__all__)
