"""Run one :class:`~posenc.proofs.claim.Claim`: symbolic proof, numeric checks, counterexample search.

Every search is ``hypothesis.find(strategy, fails)``: on the claim's own strategy no input may
make the check fail (a found one is a bug, shrunk to a minimal counterexample); on each variant
that drops an assumption, a counterexample is *expected* and the one Hypothesis returns is
already shrunk.  The result is a JSON-serialisable dict (see :func:`run_claim`).

Profiles: ``ci`` (few examples, derandomised -- the same inputs on every run, so CI is
reproducible) and ``thorough`` (many examples, fresh randomness each run).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .claim import FAILED, NOT_APPLICABLE, Claim, LayerMismatch, SymbolicResult
from ..errors import PosencError
from ..limits import MAX_EXAMPLES, check_int

#: Examples per search and whether the inputs are the same on every run.
PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"max_examples": 25, "derandomize": True},
    "thorough": {"max_examples": 400, "derandomize": False},
}


def _settings(profile: str, examples: Optional[int]):
    from hypothesis import HealthCheck, Phase, settings

    if profile not in PROFILES:
        raise PosencError(f"unknown profile {profile!r}; choose from {', '.join(PROFILES)}")
    opts = dict(PROFILES[profile])
    if examples is not None:
        opts["max_examples"] = check_int("--examples", examples, MAX_EXAMPLES)
    return settings(max_examples=opts["max_examples"], derandomize=opts["derandomize"],
                    database=None, deadline=None, print_blob=False,
                    phases=(Phase.explicit, Phase.generate, Phase.shrink),
                    suppress_health_check=list(HealthCheck))


@dataclass
class _Counter:
    calls: int = 0
    first_failure: Optional[int] = None


def search(strategy, check: Callable[[Any], None], describe: Callable[[Any], str],
           hyp_settings, failures: tuple = (AssertionError,)) -> dict:
    """Look for an input of ``strategy`` on which ``check`` raises one of ``failures``.

    Returns ``{"examples": n, "found": bool, "minimal": text|None, "message": text|None}``;
    ``examples`` counts the inputs drawn before the first failure (all of them when none
    failed), not Hypothesis' shrinking steps.  Other exceptions propagate: they are bugs.
    """
    from hypothesis import find
    from hypothesis.errors import NoSuchExample

    counter = _Counter()

    def fails(example) -> bool:
        counter.calls += 1
        try:
            check(example)
        except failures:
            if counter.first_failure is None:
                counter.first_failure = counter.calls
            return True
        return False

    try:
        minimal = find(strategy, fails, settings=hyp_settings)
    except NoSuchExample:
        return {"examples": counter.calls, "found": False, "minimal": None, "message": None}
    # Re-run on the minimal input to record its own failure message.
    message = None
    try:
        check(minimal)
    except failures as exc:
        message = str(exc) if isinstance(exc, AssertionError) else \
            f"layers disagree: {exc}"
    return {"examples": counter.first_failure or counter.calls, "found": True,
            "minimal": describe(minimal), "message": message}


def _error_text(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" ({frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"


def run_claim(claim: Claim, examples: Optional[int] = None, profile: str = "ci") -> dict:
    """Run ``claim`` and return its JSON-serialisable result.

    Keys: claim, title, source, symbolic {status, detail}, examples,
    holds (bool), counterexample (text|None, on the claim's own strategy), variants
    [{drops, kind, expected, found, minimal, message, examples}], reports, error (text|None),
    ok (the claim behaved as stated: holds, and every expected counterexample found and no
    unexpected one), seconds.
    """
    hyp_settings = _settings(profile, examples)
    start = time.perf_counter()
    out: dict[str, Any] = {"claim": claim.id, "title": claim.title, "source": claim.source,
                           "error": None}
    try:
        sym = claim.symbolic() if claim.symbolic else SymbolicResult(NOT_APPLICABLE, "no symbolic proof")
    except Exception as exc:  # a bug in the proof code is a failed proof, shown as such
        sym = SymbolicResult(FAILED, _error_text(exc))
    out["symbolic"] = {"status": sym.status, "detail": sym.detail}
    variants = []
    try:
        # On the claim's own inputs a layer disagreement is a failure too (shrunk like one); on
        # a variant it is an error, never the counterexample the variant expects.
        main = search(claim.strategy(), claim.check, claim.describe, hyp_settings,
                      failures=(AssertionError, LayerMismatch))
        out["examples"] = main["examples"]
        out["holds"] = not main["found"]
        out["counterexample"] = main["minimal"]
        out["counterexample_message"] = main["message"]
        for v in claim.variants:
            res = search(v.strategy(), v.check or claim.check, claim.describe, hyp_settings)
            variants.append({"drops": v.drops, "kind": v.kind,
                             "expected": v.expect_counterexample, "found": res["found"],
                             "minimal": res["minimal"], "message": res["message"],
                             "examples": res["examples"], "note": v.note})
        out["reports"] = claim.reports() if claim.reports else {}
    except Exception as exc:
        out.setdefault("examples", 0)
        out.setdefault("holds", False)
        out.setdefault("counterexample", None)
        out["reports"] = {}
        out["error"] = _error_text(exc)
    out["variants"] = variants
    out["ok"] = (out["error"] is None and out["holds"] and sym.status != FAILED
                 and all(v["found"] == v["expected"] for v in variants))
    out["seconds"] = round(time.perf_counter() - start, 3)
    return out


def counterexamples_summary(result: dict) -> tuple[int, int]:
    """(expected, found among the expected) counterexamples of a result."""
    expected = [v for v in result["variants"] if v["expected"]]
    return len(expected), sum(1 for v in expected if v["found"])
