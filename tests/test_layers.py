"""The layer rules of docs/architecture.md hold at import time: theory and numerics never load torch
or empirical; numerics never loads sympy; empirical (its fast path included) never loads theory,
numerics or sympy; ``import posenc``, the report and the CLI load no torch, sympy or matplotlib.
Each layer implements the catalogue independently, so agreement between layers is evidence; none
of them loads proofs, checker, verdicts or report. Within empirical, the reference forward (the
package posenc.empirical.model) never imports the fast path (posenc.empirical.fast): the fast path
reads the reference's modules from outside, never the reverse."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: package imported -> modules that must not be loaded by it
UPPER = ("posenc.proofs", "posenc.checker", "posenc.verdicts", "posenc.report", "posenc.reproduction",
         "posenc.api", "posenc.commands", "posenc.cli")
FORBIDDEN = {
    "posenc": ("torch", "sympy", "scipy", "numpy", "matplotlib", "posenc.theory", "posenc.numerics",
               "posenc.empirical", "posenc.proofs", "posenc.checker", "posenc.verdicts"),
    "posenc.encodings": ("torch", "sympy", "scipy", "numpy", "posenc.theory", "posenc.numerics",
                         "posenc.empirical", *UPPER),
    "posenc.theory": ("torch", "posenc.empirical", "posenc.numerics", *UPPER),
    "posenc.numerics": ("torch", "sympy", "posenc.empirical", "posenc.theory", *UPPER),
    "posenc.empirical": ("sympy", "posenc.theory", "posenc.numerics", *UPPER),
    "posenc.empirical.fast": ("sympy", "posenc.theory", "posenc.numerics", *UPPER),
    # the checker of users' code: numpy and the numeric layer's conventions, never a model
    "posenc.checker": ("sympy", "posenc.theory", "posenc.empirical", "posenc.proofs",
                       "posenc.verdicts", "posenc.report"),
    # verdicts read stored run results (dicts); the report asks them, never the reverse
    "posenc.verdicts": ("torch", "sympy", "posenc.theory", "posenc.numerics", "posenc.proofs",
                        "posenc.checker", "posenc.report", "posenc.reproduction"),
    "posenc.cli": ("torch", "sympy", "scipy", "matplotlib"),
    # the report assembles: its layers are loaded when it builds, not when it is imported
    "posenc.report": ("torch", "sympy", "scipy", "matplotlib", "posenc.reproduction"),
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


#: the modules of the reference forward (the package posenc.empirical.model: transformer,
#: attention, MLA, kernel, hooks, the PE modules): none may import posenc.empirical.fast
REFERENCE = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "posenc/empirical/model").rglob("*.py")
                   if "__pycache__" not in p.parts)


def fast_imports(source: str, module: str) -> list[str]:
    """The imports of the fast path in ``source`` (module ``module``, dotted), at any depth (a
    function-level import counts too)."""
    package = module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[:len(base) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            names = [target] + [f"{target}.{a.name}" for a in node.names]
        else:
            continue
        found += [n for n in names if n == "posenc.empirical.fast" or n.startswith("posenc.empirical.fast.")]
    return found


@pytest.mark.parametrize("path", REFERENCE)
def test_the_reference_forward_never_imports_the_fast_path(path):
    module = path.removesuffix(".py").replace("/", ".")
    assert fast_imports((ROOT / path).read_text(), module) == []


@pytest.mark.parametrize("line", ["from .fast import forward", "from . import fast",
                                  "from .fast.packing import Packing",
                                  "import posenc.empirical.fast",
                                  "def f():\n    from .fast import packed"])
def test_the_check_sees_an_import_of_the_fast_path(line):
    assert fast_imports(line, "posenc.empirical.config")


def test_the_check_resolves_relative_imports():
    assert fast_imports("from ...fast import forward", "posenc.empirical.model.pe.plan")
    assert fast_imports("from ..fast import forward", "posenc.empirical.model.transformer")
    assert not fast_imports("from ..fast import forward", "posenc.empirical.model.pe.plan")  # model.fast
    assert not fast_imports("from .kernel import ScoreMask", "posenc.empirical.model.transformer")
