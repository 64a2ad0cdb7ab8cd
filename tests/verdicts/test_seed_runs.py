"""The shared runs -> part path of the verdicts (posenc.verdicts.runs): which seeds a part
is judged on, and what it says when runs or values are missing."""

import pytest

from posenc.verdicts.runs import SeedRuns, judge_part
from posenc.verdicts.verdict import t_interval


def res(task, role, seed, x):
    return {"summary": {"task": task, "seed": seed, "tags": {"role": role}, "x": x}}


RUNS = SeedRuns([res("d", "a", 0, 1.0), res("d", "a", 1, 2.0), res("d", "a", 2, 3.0),
                 res("d", "b", 1, 0.5), res("d", "b", 2, 0.25), res("c", "a", 2, 9.0)],
                value=lambda r: r.summary["x"])


def part(stat, roles=("a", "b"), **kw):
    kw.setdefault("bounds", None)
    kw.setdefault("missing_note", "nothing")
    return judge_part("p", RUNS, "d", roles, stat, 0.0, "above", **kw)


def test_a_part_is_judged_on_the_seeds_all_its_runs_share():
    p = part(lambda s: RUNS.by[("d", "a")][s] - RUNS.by[("d", "b")][s])
    assert p["seeds"] == [1, 2] and p["values"] == [1.5, 2.75]
    iv = t_interval([1.5, 2.75])
    assert p["interval"] == pytest.approx([iv.low, iv.high])
    assert p["task"] == "d" and p["roles"] == ["a", "b"] and "configs" not in p
    cross = part(lambda s: 1.0, roles=("a",), configs=[("d", "a"), ("c", "a")])
    assert cross["seeds"] == [2] and cross["configs"] == [["d", "a"], ["c", "a"]]


def test_missing_runs_and_undefined_values_are_named():
    none = part(lambda s: 1.0, roles=("a", "z"), runs_word="dynamics runs")
    assert none["verdict"] == "inconclusive" and none["n"] == 0
    assert none["note"] == "no dynamics runs for z"
    other_task = part(lambda s: 1.0, roles=("a",), configs=[("d", "a"), ("e", "a")])
    assert other_task["note"] == "no runs for e/a"
    some = part(lambda s: None if s == 1 else 1.0 + s, undefined_note="undefined")
    assert some["seeds"] == [2] and some["note"] == "undefined on seed(s) [1]"
    assert part(lambda s: None if s == 1 else 1.0)["note"] == "nothing on seed(s) [1]"
    assert part(lambda s: None)["note"] == "nothing" and part(lambda s: None)["n"] == 0


def test_the_ceiling_rule_sees_the_judged_seeds():
    seen = []
    p = part(lambda s: None if s == 1 else 1.0, roles=("a",),
             ceiling=lambda seeds: seen.append(seeds) or True)
    assert seen == [[0, 2]] and p["verdict"] == "ceiling"
    assert part(lambda s: 1.0 + s, ceiling=lambda seeds: False)["verdict"] != "ceiling"
    # one judged seed is never a ceiling, as it is never any other verdict
    one = part(lambda s: None if s == 1 else 1.0, ceiling=lambda seeds: True)
    assert one["seeds"] == [2] and one["verdict"] == "inconclusive"
