"""The front door as type checkers see it: the lazy names are imported under
TYPE_CHECKING exactly as ``_LAZY`` imports them at run time, ``__all__`` is the literal list of
them, and docs/examples/typed_api.py -- which .ci/run checks with mypy -- uses every one."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import posenc

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "typed_api.py"


def _type_checking_imports() -> dict[str, tuple[str, str]]:
    """Name -> (module, attribute) of the ``if TYPE_CHECKING:`` block of posenc/__init__.py."""
    tree = ast.parse((ROOT / "posenc" / "__init__.py").read_text(encoding="utf-8"))
    blocks = [node for node in tree.body if isinstance(node, ast.If)
              and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    assert len(blocks) == 1, "posenc/__init__.py has one `if TYPE_CHECKING:` block"
    found = {}
    for node in blocks[0].body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names:
            found[alias.asname or alias.name] = (f"posenc.{node.module}", alias.name)
    return found


def test_type_checkers_see_each_lazy_name_where_it_is_imported_at_run_time():
    assert _type_checking_imports() == posenc._LAZY


def test_all_is_the_eager_names_and_the_lazy_ones():
    eager = ["PESpec", "PosencError", "all_entries", "parse_spec", "spec_from_dict", "__version__"]
    assert posenc.__all__ == eager + list(posenc._LAZY)
    tree = ast.parse((ROOT / "posenc" / "__init__.py").read_text(encoding="utf-8"))
    [value] = [node.value for node in tree.body if isinstance(node, ast.Assign)
               and [getattr(t, "id", None) for t in node.targets] == ["__all__"]]
    # a literal list of strings: what mypy and pyright read as the re-exports of a py.typed package
    assert isinstance(value, ast.List) and all(isinstance(e, ast.Constant) for e in value.elts)


def test_the_typed_example_uses_every_public_name():
    tree = ast.parse(EXAMPLE.read_text(encoding="utf-8"))
    used = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and node.module == "posenc" for alias in node.names}
    used |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
             and isinstance(node.value, ast.Name) and node.value.id == "posenc"}
    called = {node.func.id for node in ast.walk(tree)
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert set(posenc.__all__) <= used, sorted(set(posenc.__all__) - used)
    functions = {n for n in posenc.__all__ if n[0].islower()}   # classes are capitalised
    assert functions <= called, f"imported but never called: {sorted(functions - called)}"


def test_ci_checks_the_example_with_mypy_strictly():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["files"] == ["docs/examples/typed_api.py"] and config["strict"] is True
    assert "python3 -m mypy" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_one_train_and_one_ablate_in_the_public_api():
    """posenc.train and posenc.ablate are the only ones: no package's namespace re-exports another
    (posenc.empirical did, with other signatures: train(cfg, out), ablate(model, data, mode))."""
    exporters = []
    for init in sorted((ROOT / "posenc").rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        for node in tree.body:  # module level; posenc's own TYPE_CHECKING block is an ast.If
            if isinstance(node, ast.ImportFrom):
                names = {alias.asname or alias.name for alias in node.names}
            elif isinstance(node, ast.FunctionDef):
                names = {node.name}
            else:
                continue
            exporters += [f"{init.relative_to(ROOT)}: {n}" for n in names & {"train", "ablate"}]
    assert not exporters, exporters
    assert {"train", "ablate"} <= set(posenc._LAZY)
