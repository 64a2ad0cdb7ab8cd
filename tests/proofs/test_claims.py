"""Every registered claim behaves as stated under the ``ci`` profile (parametrised over the
registry, so a new claim is tested without touching this file); one slow test runs ``thorough``."""

import pytest

from posenc.proofs.registry import all_claims
from posenc.proofs.runner import run_claim

IDS = [c.id for c in all_claims()]


def _explain(r: dict) -> str:
    lines = [f"{r['claim']}: symbolic={r['symbolic']}, holds={r['holds']}, error={r['error']}",
             f"counterexample: {r['counterexample']} -- {r.get('counterexample_message')}"]
    for v in r["variants"]:
        lines.append(f"variant {v['drops']!r}: expected={v['expected']} found={v['found']} "
                     f"{v['minimal']} -- {v['message']}")
    return "\n".join(lines)


@pytest.mark.parametrize("claim", all_claims(), ids=IDS)
def test_claim_ci(claim, ci_result):
    r = ci_result(claim)
    assert r["ok"], _explain(r)
    assert r["symbolic"]["status"] in ("proved", "not applicable")
    for v in r["variants"]:
        if v["found"]:
            assert v["minimal"] and v["message"]


@pytest.mark.slow
def test_registry_thorough_bounded():
    # thorough profile (fresh randomness), bounded to 40 examples per search to keep CI short
    bad = [r for r in (run_claim(c, profile="thorough", examples=40) for c in all_claims())
           if not r["ok"]]
    assert not bad, "\n\n".join(_explain(r) for r in bad)

