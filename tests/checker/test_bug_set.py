"""The bug set (tests/checker/bug_set.py): every correct implementation passes (no false
alarm), every bug is flagged with a message that names it (no miss, no symptom-only report)."""

import pytest

from bug_set import CASES, available, run


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bug_set_row(case):
    if not available(case):
        pytest.skip(f"{case.needs} is not installed")
    flagged, named, text = run(case)
    if case.correct:
        assert not flagged, text
    else:
        assert flagged, text
        assert named, (f"flagged but the failure does not say {case.named!r}"
                       + (f" or also says {case.absent!r}" if case.absent else "") + f":\n{text}")


def test_the_bug_set_is_big_enough():
    bugs = [c for c in CASES if not c.correct]
    assert len(bugs) >= 40 and len({c.name for c in CASES}) == len(CASES)
    assert {c.kind for c in bugs} == {"rope", "rope-qk", "xpos", "bias", "t5"}
