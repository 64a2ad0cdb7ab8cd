"""Shared fixture: every registered claim is run at most once per session under ``ci``."""

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
