"""Function-local imports are for heavy modules only: the rule of docs/architecture.md, held.

An import inside a function is laziness: it is there so that importing its module does not load
something heavy.  This test holds each one to that.  A module's *weight* is the set of heavy
third-party packages (:data:`HEAVY`) that importing it loads, followed through posenc's own
module-level imports (a package's ``__init__`` runs before its modules; imports under ``if
TYPE_CHECKING:`` never run).  A function-local import passes when its target weighs something
its module does not already load (or is a platform module, :data:`PLATFORM`); every other one --
a standard-library module, a posenc module no heavier than the importer -- belongs at the top of
the module.  The faces are exempt (:data:`FACES`: ``posenc/__init__.py`` and the command line,
whose laziness is what keeps ``import posenc`` and ``posenc --help`` fast).

Run as a script to list the imports that break the rule.
"""

from __future__ import annotations

import ast
import sys
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_import_cycles import ROOT, _is_type_checking, modules  # noqa: E402

#: third-party packages heavy enough to import only where needed
HEAVY = frozenset({"torch", "sympy", "scipy", "numpy", "matplotlib", "transformers", "ray", "tqdm",
                   "gguf", "accelerate", "safetensors", "huggingface_hub", "hypothesis", "mpmath",
                   "PIL", "pandas", "tokenizers", "sklearn"})
#: modules that exist on some platforms only (imported where used, under a guard)
PLATFORM = frozenset({"resource", "ctypes", "fcntl", "msvcrt", "winreg", "_winapi"})
#: modules whose laziness is the point: the front door and the command line
#: (a module itself, or a package and every module in it: posenc.commands)
FACES = ("posenc", "posenc.cli", "posenc.commands")


def _is_face(module: str) -> bool:
    return module in FACES or any(module.startswith(f + ".") for f in FACES if f != "posenc")


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_pkg: bool,
             mods: dict[str, Path]) -> list[str]:
    """The dotted modules an import statement loads (relative imports resolved)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    here = module.split(".") if is_pkg else module.split(".")[:-1]
    base = here[:len(here) - node.level + 1] if node.level else []
    source = ".".join(base + ([node.module] if node.module else []))
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in mods else source for a in node.names]


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _module_level(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports that run when the module is imported: at the top level, inside a module-level
    ``try``/``if``/``with`` (not under ``if TYPE_CHECKING:``), never inside a def or class body's
    functions."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(stmts: list[ast.stmt]) -> None:
        for node in stmts:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for h in node.handlers:
                    visit(h.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, (ast.With, ast.ClassDef)):
                visit(node.body)

    visit(tree.body)
    return found


def local_imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """(import, enclosing function's name) for every import inside a function body."""
    found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def visit(node: ast.AST, func: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for c in child.orelse:
                    visit(c, func)
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name if func is None else f"{func}.{child.name}")
            elif isinstance(child, (ast.Import, ast.ImportFrom)) and func is not None:
                found.append((child, func))
            else:
                visit(child, func)

    visit(tree, None)
    return found


class Weights:
    """Each module's weight (the heavy packages importing it loads)."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self.mods = modules(root)
        self.trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in self.mods.items()}

    def targets(self, node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
        return _targets(node, module, self.mods[module].name == "__init__.py", self.mods)

    @lru_cache(maxsize=None)
    def _edges(self, name: str) -> frozenset[str]:
        """What importing module ``name`` runs next: its module-level imports' targets and
        their packages (not the packages ``name`` lies in: those are already running)."""
        out: set[str] = set()
        for node in _module_level(self.trees[name]):
            for t in self.targets(node, name):
                out.update(p for p in _with_parents(t) if not name.startswith(p + "."))
        return frozenset(out)

    @lru_cache(maxsize=None)
    def of(self, name: str) -> frozenset[str]:
        """The weight of importing ``name`` (a posenc module, or any other): every heavy package
        reached through module-level imports, the packages above ``name`` run first."""
        heavy: set[str] = set()
        seen: set[str] = set()
        todo = _with_parents(name)
        while todo:
            m = todo.pop()
            if m in seen:
                continue
            seen.add(m)
            top = m.split(".")[0]
            if top != "posenc":
                if top in HEAVY:
                    heavy.add(top)
            elif m in self.mods:
                todo.extend(self._edges(m))
        return frozenset(heavy)

    def breaches(self) -> list[str]:
        """Every function-local import outside the faces whose target weighs nothing its module
        does not already load."""
        out = []
        for module, tree in self.trees.items():
            if _is_face(module):
                continue
            own = self.of(module)
            for node, func in local_imports(tree):
                targets = self.targets(node, module)
                if any(t.split(".")[0] in PLATFORM for t in targets):
                    continue
                if any(self.of(t) - own for t in targets):
                    continue
                text = ast.unparse(node)
                out.append(f"{self.mods[module].relative_to(self.root)}:{node.lineno} {func}: {text}")
        return sorted(out)


def test_the_rule_tells_lazy_imports_from_misplaced_ones(tmp_path):
    pkg = tmp_path / "posenc"
    (pkg / "sub").mkdir(parents=True)
    files = {"__init__.py": "", "sub/__init__.py": "import torch\n",
             "light.py": "def f():\n    import json\n    from .sub import heavy\n",
             "sub/heavy.py": "def g():\n    import torch\n    import sympy\n",
             "cli.py": "def main():\n    import json\n"}
    for name, text in files.items():
        (pkg / name).write_text(text)
    found = [line.split(" ", 1)[1] for line in Weights(tmp_path).breaches()]
    # json: light, belongs at the top; the heavy package: lazy on purpose; torch inside a module
    # whose package already loads it: pointless; sympy: lazy on purpose; the CLI: a face
    assert found == ["f: import json", "g: import torch"]


def test_every_function_local_import_is_for_a_heavy_module():
    found = Weights().breaches()
    assert found == [], f"{len(found)} function-local imports of light modules:\n" + "\n".join(found)


if __name__ == "__main__":
    found = Weights(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT).breaches()
    print("\n".join(found))
    print(len(found), "breaches")
