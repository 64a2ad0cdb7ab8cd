"""Import one of the repository's scripts (scripts/NAME.py) as a module, afresh, for its tests;
and read a calibration script's plans by role and seed."""

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


def experiments_by_role_seed(plans):
    """(role, seed) -> experiment config over every plan of a calibration rung."""
    return {(e.tags["role"], e.train.seed): e for p in plans for e in p.experiments()}
