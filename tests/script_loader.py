"""Import one of the repository's scripts (scripts/NAME.py) as a module, afresh, for its tests."""

import importlib
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(monkeypatch, name: str):
    """``scripts/<name>.py`` imported with scripts/ on sys.path for this test only (its own
    imports of sibling scripts resolve there)."""
    monkeypatch.syspath_prepend(str(SCRIPTS))
    sys.modules.pop(name, None)
    return importlib.import_module(name)
