"""``check`` probes dynamic NTK scaling past the trained length and after a long call
(posenc/checker/rope_dynamic.py).  The realistic shapes -- never updates, sized by the chunk
length, never resets, transformers' own code -- are rows of the bug set (bug_set.py); these are
the other slips it names and the long-trained-length fallback."""

from __future__ import annotations

import pytest

import realistic as R
from posenc.checker import check_callable


def expect(L: int) -> str:
    return f"scaling=dynamic,factor=2,original={L},seq_len={L}"


def dynamic(x, positions, L, seq_len):
    d = x.shape[-1]
    if seq_len > L:
        return R.neox(x, positions, base=10000.0 * ((2.0 * seq_len / L) - 1.0) ** (d / (d - 2)))
    return R.neox(x, positions)


def dynamic_property(fn, L):
    report = check_callable(fn, "rope", dim=16, expect=expect(L), max_positions=L)
    return next(p for p in report.properties if p.name == "dynamic scaling")


@pytest.mark.parametrize("seq_len, words", [
    (lambda p: int(p.max()), "off by one: it sizes by the largest position"),
    (lambda p: int(p.max()) + 2, "the scaling starts one position early"),
    (lambda p: int(p.max()) + 1, None),                  # transformers' rule: passes
])
def test_the_length_is_the_largest_position_plus_one(seq_len, words):
    p = dynamic_property(lambda x, pos: dynamic(x, pos, 256, seq_len(pos)), 256)
    if words is None:
        assert p.status == "pass", p.detail
    else:
        assert p.status == "fail" and words in p.detail, p.detail


def test_past_the_longest_full_call_never_updates_and_chunk_length_are_named_together():
    L = 70000                                            # past FULL: no call of every position
    p = dynamic_property(lambda x, pos: R.dynamic_ntk_chunk_length(x, pos, max_pos=L), L)
    assert p.status == "fail" and "never updates with length, or one sized by the chunk" in p.detail
    assert dynamic_property(lambda x, pos: R.dynamic_ntk(x, pos, max_pos=L), L).status == "pass"
