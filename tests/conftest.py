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


#: session fixtures that are costly to make, and the xdist group of every test that takes one:
#: under xdist each worker makes its own session fixtures, so their users share one worker
SHARED_FIXTURE_GROUPS = {"small_store": "small-store", "small_store_copy": "small-store",
                         "ci_result": "ci-claims"}
#: the tests that start a local Ray cluster, one at a time (two clusters race for ports); one of
#: them reads the small store, so they join its group
RAY_GROUP = "small-store"


def xdist_group_of(item) -> str:
    """The test's xdist group: :data:`RAY_GROUP` for a ``ray_cluster`` test, the group of the first
    costly session fixture it takes, else its file (a module fixture, such as a store made by a
    sweep, is then made once)."""
    if item.get_closest_marker("ray_cluster"):
        return RAY_GROUP
    for name in item.fixturenames:
        if name in SHARED_FIXTURE_GROUPS:
            return SHARED_FIXTURE_GROUPS[name]
    return item.nodeid.split("::")[0]


#: what a run gets where pytest-xdist is installed and the command line says neither -n nor --dist
XDIST_DEFAULTS = {"numprocesses": "auto", "dist": "loadgroup"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own (tryfirst too, registered before this file)
def pytest_cmdline_main(config):
    """One xdist worker per core, by the groups below (:data:`XDIST_DEFAULTS`), where xdist is
    installed; ``-n`` (``-n 0``: serial) and ``--dist`` given on the command line win.  Without
    xdist (or with ``-p no:xdist``) the tests run serially: the options are not pytest's own, so
    pyproject.toml's addopts cannot name them."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:  # a worker parses the command line again: the controller's mode
        config.option.loadgroup = config.option.loadgroup or workerinput.get("posenc_loadgroup", False)
        return
    if config.option.numprocesses is None:
        config.option.numprocesses = XDIST_DEFAULTS["numprocesses"]
    if config.option.dist == "no" and config.option.numprocesses != 0 \
            and not config.option.distload:
        config.option.dist = XDIST_DEFAULTS["dist"]


def pytest_configure(config):
    """Without xdist, its ``xdist_group`` mark (set below) is declared here, so that it warns of
    nothing."""
    if not config.pluginmanager.hasplugin("xdist"):
        config.addinivalue_line("markers", "xdist_group(name): the xdist group (pytest-xdist)")


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown (and never called) without xdist
def pytest_configure_node(node):
    """Tell each worker the controller's distribution mode (a worker reads ``--dist`` from the
    command line, which the defaults above did not change), so that it names the tests by their
    groups (``path::name@group``) as ``--dist loadgroup`` given on the command line does."""
    node.workerinput["posenc_loadgroup"] = node.config.option.dist == "loadgroup"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its hook runs first otherwise)
def pytest_collection_modifyitems(config, items):
    """xdist groups (``--dist loadgroup``, pyproject.toml) by :func:`xdist_group_of`.  xdist
    hands the groups out largest (most tests) first; an order with the groups that hold a slow
    test first was tried and measured slower (1,397 s against 1,268 s for the suite on 2 cores):
    it runs the end-to-end sweeps, two processes each, side by side."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))


@pytest.fixture
def main(capsys):
    """Run ``posenc.cli.main`` in this process (fast); returns (code, stdout, stderr)."""
    from posenc.cli import main as posenc_main

    def run(*args):
        code = posenc_main(list(args))
        out = capsys.readouterr()
        return types.SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)
    return run


class TrainingStopped(Exception):
    """Raised by the :func:`api_train_configs` fixture's stand-in for the training loop."""


@pytest.fixture
def api_train_configs(monkeypatch):
    """The configs ``posenc.train`` hands to the training loop (a list), which is replaced by a
    stand-in that records the config and raises the list's ``stopped`` exception
    (:class:`TrainingStopped`): nothing trains."""
    import posenc.empirical.training.train as train_module

    class Configs(list):
        stopped = TrainingStopped

    made = Configs()

    def no_training(cfg, *args, **kwargs):
        made.append(cfg)
        raise TrainingStopped

    monkeypatch.setattr(train_module, "train", no_training)
    return made
