"""The runner itself: it must notice a false claim, a missing expected counterexample, a layer
disagreement posing as a counterexample, and a failed symbolic proof -- and shrink what it finds."""

import json

import pytest
from hypothesis import strategies as st

from posenc.errors import PosencError
from posenc.proofs import registry
from posenc.proofs.claim import Claim, SymbolicResult, Variant, agree, require
from posenc.proofs.runner import run_claim


def _claim(check, strategy=lambda: st.integers(0, 1000), **kw):
    return Claim(id="toy", title="toy", statement="s", latex="s", source="new",
                 assumptions=("x >= 0",), strategy=strategy, check=check, **kw)


def below_100(x):
    require(x < 100, f"{x} >= 100")


def test_false_claim_is_caught_and_shrunk_to_the_boundary():
    r = run_claim(_claim(below_100))
    assert not r["ok"] and not r["holds"]
    assert r["counterexample"] == "100"            # Hypothesis shrinks to the smallest failure
    assert r["counterexample_message"] == "100 >= 100"


def test_missing_expected_counterexample_fails_the_claim():
    never = Variant("x >= 0", lambda: st.integers(0, 10))                  # x < 100 always here
    r = run_claim(_claim(below_100, strategy=lambda: st.integers(0, 99), variants=(never,)))
    assert r["holds"] and not r["ok"]
    assert r["variants"][0] == {**r["variants"][0], "expected": True, "found": False}


def test_expected_counterexample_found_and_unexpected_one_fails():
    found = Variant("x < 100", lambda: st.integers(0, 1000))
    ok = run_claim(_claim(below_100, strategy=lambda: st.integers(0, 99), variants=(found,)))
    assert ok["ok"] and ok["variants"][0]["minimal"] == "100"
    unexpected = Variant("x < 100", lambda: st.integers(0, 1000), expect_counterexample=False)
    bad = run_claim(_claim(below_100, strategy=lambda: st.integers(0, 99), variants=(unexpected,)))
    assert not bad["ok"]


def test_layer_disagreement_is_not_a_counterexample_for_a_variant():
    def check(x):
        agree(x < 5, f"layers disagree at {x}")
    r = run_claim(_claim(lambda x: None, strategy=lambda: st.integers(0, 3),
                         variants=(Variant("anything", lambda: st.integers(0, 1000), check=check),)))
    assert not r["ok"] and "layers disagree" in r["error"]
    main = run_claim(_claim(check, strategy=lambda: st.integers(0, 1000)))
    assert not main["ok"] and main["counterexample"] == "5"


def test_failed_symbolic_proof_or_crashing_proof_fails_the_claim():
    r = run_claim(_claim(lambda x: None, symbolic=lambda: SymbolicResult("failed", "no")))
    assert r["symbolic"]["status"] == "failed" and not r["ok"]
    r = run_claim(_claim(lambda x: None, symbolic=lambda: 1 / 0))
    assert r["symbolic"]["status"] == "failed" and "ZeroDivisionError" in r["symbolic"]["detail"]


def test_results_are_json_and_ci_profile_is_reproducible():
    a = run_claim(_claim(below_100), profile="ci")
    b = run_claim(_claim(below_100), profile="ci")
    json.dumps(a)
    assert {k: v for k, v in a.items() if k != "seconds"} == {k: v for k, v in b.items()
                                                               if k != "seconds"}


def test_unknown_profile_and_claim_are_user_errors():
    with pytest.raises(PosencError):
        run_claim(_claim(below_100), profile="slow")
    with pytest.raises(PosencError, match="did you mean 'schur-containment'"):
        registry.get("schur-containmen")


def test_registry_ids_unique_and_register_rejects_duplicates():
    ids = [c.id for c in registry.all_claims()]
    assert len(ids) == len(set(ids)) and len(ids) >= 11
    with pytest.raises(ValueError):
        registry.register(_claim(below_100).__class__(**{**_claim(below_100).__dict__,
                                                         "id": ids[0]}))
