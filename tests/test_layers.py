"""The layer rules of DESIGN.md hold at import time: theory and numerics never load torch or
empirical; numerics never loads sympy; empirical never loads theory, numerics or sympy.  Each
layer implements the catalogue independently, so agreement between layers is evidence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: package imported -> modules that must not be loaded by it
FORBIDDEN = {
    "posenc": ("torch", "sympy", "scipy", "numpy", "posenc.theory", "posenc.numerics",
               "posenc.empirical", "posenc.proofs"),
    "posenc.theory": ("torch", "posenc.empirical", "posenc.numerics"),
    "posenc.numerics": ("torch", "sympy", "posenc.empirical", "posenc.theory"),
    "posenc.empirical": ("sympy", "posenc.theory", "posenc.numerics"),
    "posenc.cli": ("torch", "sympy", "scipy"),
}


def _all_modules(package: str) -> list[str]:
    base = ROOT.joinpath(*package.split("."))
    return sorted(package + "." + ".".join(p.relative_to(base).with_suffix("").parts)
                  .removesuffix(".__init__") for p in base.rglob("*.py")
                  if "__pycache__" not in p.parts and p.name != "__main__.py")


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_importing_a_layer_loads_no_forbidden_layer(package):
    # Import the package and every module in it (a module-level import anywhere would show).
    modules = [package] if package in ("posenc", "posenc.cli") else _all_modules(package)
    code = ("import importlib, sys\n"
            f"for m in {modules!r}:\n"
            "    importlib.import_module(m)\n"
            f"bad = [m for m in {FORBIDDEN[package]!r} if m in sys.modules]\n"
            "print(','.join(bad))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"importing {package} loaded {out.stdout.strip()}"
