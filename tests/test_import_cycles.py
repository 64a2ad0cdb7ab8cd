"""No import cycles among posenc's modules or packages, counting imports inside functions too.

An import inside a function hides a cycle from Python (the module is complete by the time the
function runs) but not from a reader: two modules that need each other are one module in two
files.  Lazy imports of heavy modules (torch, sympy, scipy) for import speed are fine here: they
make no cycle.  Imports under ``if TYPE_CHECKING:`` are for annotations only and never run, so they
do not count.  Importing ``a.b.c`` runs the package ``a.b`` first, so it counts as importing
``a.b`` too (unless the importer is inside ``a.b``, which is then already running).

Packages: two packages neither of which holds the other must not import each other either, not
even through other packages (``empirical.training`` and ``empirical.analysis`` did); a package
and the packages inside it may (its ``__init__`` gathers them, they use its shared modules).

Run as a script (``python3 tests/test_import_cycles.py``) to list the cycles (strongly connected
components of the graphs) and the imports that make them.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "posenc"


def modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` (``__main__`` left out)."""
    base = root / package
    out = {}
    for path in sorted(base.rglob("*.py")):
        if "__pycache__" in path.parts or path.name == "__main__.py":
            continue
        parts = (package,) + path.relative_to(base).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement at any depth, except those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, dict[str, int]]:
    """Module -> {imported module of ``package``: line of the (first) import}.  ``from X import
    y`` imports the module X.y when there is one, else X; relative imports are resolved."""
    mods = modules(root, package)
    out: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = name.split(".") if is_pkg else name.split(".")[:-1]
        edges: dict[str, int] = {}
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = here[:len(here) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in mods else source
                           for a in node.names]
            for target in targets:
                while target and target not in mods:  # import a.b.c of a package a.b
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.setdefault(target, node.lineno)
                parts = target.split(".")
                for k in range(1, len(parts)):          # the packages around it run first
                    run = ".".join(parts[:k])
                    if run in mods and run != name and not name.startswith(run + "."):
                        edges.setdefault(run, node.lineno)
        out[name] = edges
    return out


def package_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, dict[str, str]]:
    """Package -> {package it imports: the first import that does (``module:LINE -> module``)},
    leaving out imports between a package and the packages inside it."""
    mods = modules(root, package)

    def home(m: str) -> str:
        return m if mods[m].name == "__init__.py" else m.rpartition(".")[0]

    def nested(a: str, b: str) -> bool:
        return a == b or a.startswith(b + ".") or b.startswith(a + ".")

    out: dict[str, dict[str, str]] = {home(m): {} for m in mods}
    for m, edges in graph(root, package).items():
        for target, line in edges.items():
            a, b = home(m), home(target)
            if not nested(a, b):
                out[a].setdefault(b, f"{m}:{line} -> {target}")
    return out


def cycles(g: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def connect(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in g.get(v, {}):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            connect(v)
    return sorted(found)


def describe(g: dict[str, dict[str, int]], comp: list[str]) -> str:
    """A cycle's modules and the imports among them (``a:LINE -> b``)."""
    inside = set(comp)
    lines = [f"  {a}:{line} -> {b}" for a in comp for b, line in sorted(g[a].items()) if b in inside]
    return "cycle of " + ", ".join(comp) + ":\n" + "\n".join(lines)


def describe_packages(g: dict[str, dict[str, str]], comp: list[str]) -> str:
    inside = set(comp)
    return "cycle of packages " + ", ".join(comp) + ":\n" + "\n".join(
        f"  {a} -> {b} ({how})" for a in comp for b, how in sorted(g[a].items()) if b in inside)


def test_there_is_no_import_cycle_among_posenc_modules():
    g = graph()
    found = cycles(g)
    assert not found, "import cycles (function-local imports count):\n" + \
        "\n".join(describe(g, c) for c in found)


def test_there_is_no_import_cycle_among_posenc_packages():
    g = package_graph()
    found = cycles(g)
    assert not found, "packages that import each other (function-local imports count):\n" + \
        "\n".join(describe_packages(g, c) for c in found)


def test_the_graph_sees_function_local_and_relative_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("def f():\n    from .a import x\n")
    (pkg / "sub" / "a.py").write_text("from . import b\nx = 1\n")
    (pkg / "sub" / "b.py").write_text("import pkg.sub\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from .sub import a\nfrom .sub.a import x\n")
    g = graph(tmp_path, "pkg")
    assert set(g["pkg.sub"]) == {"pkg.sub.a"}
    assert set(g["pkg.sub.a"]) == {"pkg.sub.b"}
    assert set(g["pkg.sub.b"]) == {"pkg.sub"}
    assert set(g["pkg.c"]) == {"pkg.sub", "pkg.sub.a"}  # not the TYPE_CHECKING import; pkg.sub runs
    assert cycles(g) == [["pkg.sub", "pkg.sub.a", "pkg.sub.b"]]


def test_importing_a_module_runs_its_packages_first(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "cat").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "util.py").write_text("from .cat.expr import E\n")      # runs pkg/cat/__init__.py
    (pkg / "cat" / "__init__.py").write_text("from .base import B\n")
    (pkg / "cat" / "base.py").write_text("from ..util import x\n")
    (pkg / "cat" / "expr.py").write_text("E = 1\n")
    assert cycles(graph(tmp_path, "pkg")) == [["pkg.cat", "pkg.cat.base", "pkg.util"]]


def test_packages_that_import_each_other_are_a_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    for sub in ("train", "analysis", "train/inner"):
        (pkg / sub).mkdir(parents=True, exist_ok=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from .train import run\n")
    (pkg / "train" / "run.py").write_text("def f():\n    from ..analysis import dyn\n")
    (pkg / "train" / "files.py").write_text("")
    (pkg / "train" / "inner" / "x.py").write_text("from .. import files\n")  # nested: allowed
    (pkg / "analysis" / "dyn.py").write_text("def g():\n    from ..train.files import w\n")
    assert cycles(graph(tmp_path, "pkg")) == []
    g = package_graph(tmp_path, "pkg")
    assert cycles(g) == [["pkg.analysis", "pkg.train"]]
    assert g["pkg"] == {} and g["pkg.train.inner"] == {}


if __name__ == "__main__":
    g = graph()
    found = cycles(g)
    print(f"{len(g)} modules, {sum(len(e) for e in g.values())} imports, {len(found)} cycle(s)")
    for comp in found:
        print(describe(g, comp))
    pg = package_graph()
    found = cycles(pg)
    print(f"{len(pg)} packages, {sum(len(e) for e in pg.values())} imports between packages, "
          f"{len(found)} cycle(s)")
    for comp in found:
        print(describe_packages(pg, comp))
