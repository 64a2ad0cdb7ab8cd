"""One small standard store for the end-to-end report tests: ``posenc reproduce`` on the smoke
preset, RoPE and NoPE on distance, seeds 0-1, no theory table (``SMALL``).

Made once per test session (``small_store``): tests that only read it take it as it is; a test
that writes into a store takes its own copy (``small_store_copy``), so no test sees another's
writes."""

import shutil

import pytest
from small_sweep import SMALL, posenc


@pytest.fixture(scope="session")
def small_store(tmp_path_factory):
    """The SMALL store, made once; read it, never write into it."""
    out = tmp_path_factory.mktemp("small") / "store"
    proc = posenc("reproduce", *SMALL, "--out", out, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture
def small_store_copy(tmp_path, small_store):
    """A copy of the SMALL store of this test's own, to write into."""
    return shutil.copytree(small_store, tmp_path / "small-store")
