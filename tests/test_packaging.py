"""Packaging is true on any machine: every sub-package is in the build, every runtime import is
a declared dependency (the lesson of a wheel without ``posenc.proofs`` and a reproduce that died
on ``import hypothesis`` after 30 minutes)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "posenc"

#: Import name -> distribution name, where they differ.
DISTRIBUTION = {"sklearn": "scikit-learn", "yaml": "pyyaml"}
#: Imports allowed outside install_requires: extras (by name) and optional ones guarded by
#: ``except ImportError`` at their only use.
EXTRA_IMPORTS = {"ray": "cluster", "pandas": None, "transformers": "hf", "gguf": "hf", "safetensors": "hf",
                 "torch": "train", "matplotlib": "train", "tqdm": "train"}


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirements(lines: list[str]) -> set[str]:
    """Distribution names of PEP 508 requirement strings."""
    return {re.split(r"[<>=!~\[; ]", line.strip(), maxsplit=1)[0].lower() for line in lines}


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level modules imported anywhere in posenc (at any depth) -> files importing them."""
    stdlib = set(sys.stdlib_module_names)
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in stdlib and top != "posenc":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_directory_with_python_files_is_a_package_in_the_build():
    from setuptools import find_packages

    include = _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    built = set(find_packages(where=str(ROOT), include=include))
    dirs = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("*.py")
            if "__pycache__" not in p.parts}
    missing = sorted(dirs - built)
    assert not missing, f"directories with .py files that the build leaves out: {missing} " \
                        f"(add an __init__.py)"


def test_every_runtime_import_is_an_install_requirement():
    project = _pyproject()["project"]
    required = _requirements(project["dependencies"])
    extras = {name: _requirements(lines) for name, lines in project["optional-dependencies"].items()}
    problems = []
    for module, files in sorted(_third_party_imports().items()):
        dist = DISTRIBUTION.get(module, module).lower()
        if dist in required:
            continue
        if module in EXTRA_IMPORTS:
            extra = EXTRA_IMPORTS[module]
            if extra is None or dist in extras.get(extra, set()):
                continue
        problems.append(f"{module} (imported in {', '.join(sorted(files))})")
    assert not problems, "imported at run time but not in install_requires: " + "; ".join(problems)


def test_the_train_extra_is_the_modules_the_light_install_lacks():
    """torch, matplotlib and tqdm are the train extra's, not the base's; the CLI's one-line message
    for a missing one (posenc.errors.missing_extra) names exactly these."""
    from posenc.errors import TRAIN_EXTRA_MODULES

    project = _pyproject()["project"]
    assert _requirements(project["optional-dependencies"]["train"]) == set(TRAIN_EXTRA_MODULES)
    assert not _requirements(project["dependencies"]) & set(TRAIN_EXTRA_MODULES)


def test_hypothesis_is_a_runtime_dependency_not_only_a_test_one():
    # The proofs layer runs Hypothesis for users (posenc verify, the report's theory table).
    assert "hypothesis" in _requirements(_pyproject()["project"]["dependencies"])


@pytest.mark.parametrize("module", ["ray", "pandas", "transformers", "gguf", "safetensors"])
def test_optional_imports_are_guarded(module):
    """An optional dependency is imported only inside a function (never at module level)."""
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == module for n in names), \
                f"{path.relative_to(ROOT)} imports {module} at module level"


def test_metadata_is_in_pyproject_alone_and_its_version_is_the_package_s():
    """PEP 621: one place for the metadata (a leftover setup.cfg [metadata] would be read too)."""
    import posenc

    assert not (ROOT / "setup.cfg").exists() and not (ROOT / "setup.py").exists()
    pyproject = _pyproject()
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "posenc.__version__"}
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r"^version: (\S+)$", citation, re.M).group(1) == posenc.__version__


def test_py_typed_and_license_ship():
    """py.typed is package data (the wheel's contents are checked by .ci/wheel_contents.py), the
    LICENSE a license file, and MANIFEST.in adds CITATION.cff to the sdist."""
    pyproject = _pyproject()
    assert (PACKAGE / "py.typed").is_file()
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["posenc"]
    assert pyproject["project"]["license-files"] == ["LICENSE"] and (ROOT / "LICENSE").is_file()
    assert "include CITATION.cff" in (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines()


def test_readme_keeps_its_two_set_up_commands():
    """The README's set-up commands are a contract (.ci/run runs the second's two halves): the
    prose around them may change, these lines may not."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    lines = {line for block in blocks for line in block.splitlines()}
    assert 'python3 -m pip install torch==2.13.0 -e ".[train]" && posenc reproduce' in lines
    assert ('python3 -m pip install torch==2.13.0 -e ".[train,test,cluster,thirdparty]" '
            '&& python3 -m pytest -q') in lines
