"""Shared fixtures: ``main`` runs the CLI in this process; Hypothesis profiles: ``ci`` (fast,
default) and ``thorough`` (many examples).

Select with ``HYPOTHESIS_PROFILE=thorough pytest``.
"""

import os
import types

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its hook runs first otherwise)
def pytest_collection_modifyitems(config, items):
    """xdist groups (``--dist loadgroup``, pyproject.toml): the tests of a file on one worker, so
    that a module fixture (a store made by a sweep) is made once; the tests marked
    ``ray_cluster`` on one worker, one at a time."""
    for item in items:
        group = "ray-cluster" if item.get_closest_marker("ray_cluster") else item.nodeid.split("::")[0]
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def main(capsys):
    """Run ``posenc.cli.main`` in this process (fast); returns (code, stdout, stderr)."""
    from posenc.cli import main as posenc_main

    def run(*args):
        code = posenc_main(list(args))
        out = capsys.readouterr()
        return types.SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)
    return run
