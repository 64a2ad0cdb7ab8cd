"""Shared fixtures: every registered claim is run at most once per session under ``ci``;
``main`` runs the CLI in this process."""

import types

import pytest

from posenc.proofs.runner import run_claim

_CACHE: dict = {}


def _ci_result(claim):
    if claim.id not in _CACHE:
        _CACHE[claim.id] = run_claim(claim, profile="ci")
    return _CACHE[claim.id]


@pytest.fixture(scope="session")
def ci_result():
    """``ci_result(claim) -> result dict`` (run_claim under the ci profile, cached)."""
    return _ci_result


@pytest.fixture
def main(capsys):
    """Run ``posenc.cli.main`` in this process (fast); returns (code, stdout, stderr)."""
    from posenc.cli import main as posenc_main

    def run(*args):
        code = posenc_main(list(args))
        out = capsys.readouterr()
        return types.SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)
    return run
