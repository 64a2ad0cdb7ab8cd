"""The pytest settings need no plugin: without pytest-xdist a plain ``pytest`` runs the tests
serially (pyproject.toml's addopts once forced ``-n auto``, which pytest alone refuses as
"unrecognized arguments"); with it, tests/conftest.py sets ``-n auto --dist loadgroup``
(tests/test_xdist_groups.py holds the groups)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pytest(*args):
    # a fresh pytest: not one that inherits this process's xdist worker variables (under -n,
    # PYTEST_XDIST_WORKER would make the child believe it is a worker)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def test_a_plain_pytest_runs_without_xdist():
    proc = _pytest("-p", "no:xdist", "tests/test_xdist_groups.py")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "unrecognized arguments" not in out and "1 skipped" in out, out  # serial: skipped
    assert "PytestUnknownMarkWarning" not in out, out  # xdist_group is declared without xdist


def test_with_xdist_the_groups_are_xdist_s_unless_n_0():
    proc = _pytest("-n", "0", "tests/test_xdist_groups.py")
    assert proc.returncode == 0 and "1 skipped" in proc.stdout, proc.stdout + proc.stderr
