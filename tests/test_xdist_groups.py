"""The xdist groups set in tests/conftest.py are the ones xdist schedules by: under ``-n``, xdist
appends each test's group to its node id (``path::name@group``) -- only if the groups were set
before it read them (a hook run after xdist's left every file spread over both workers)."""

import os

import pytest

pytestmark = pytest.mark.skipif("PYTEST_XDIST_WORKER" not in os.environ,
                                reason="the groups are xdist's; this run is serial (-n 0)")


def _group(item) -> str:
    return item.nodeid.rpartition("@")[2]


def test_tests_that_share_a_costly_session_fixture_run_in_one_group(request):
    items = request.session.items
    assert all("@" in item.nodeid for item in items)
    seen = {"small-store": 0, "ci-claims": 0}
    for item in items:
        if item.get_closest_marker("ray_cluster") or "small_store" in item.fixturenames:
            assert _group(item) == "small-store", item.nodeid
            seen["small-store"] += 1
        elif "ci_result" in item.fixturenames:
            assert _group(item) == "ci-claims", item.nodeid
            seen["ci-claims"] += 1
        else:  # everything else by its file
            assert _group(item) == item.nodeid.split("::")[0], item.nodeid
    if len(items) > 1000:  # the whole suite was collected
        assert seen["small-store"] >= 4 and seen["ci-claims"] >= 20, seen
