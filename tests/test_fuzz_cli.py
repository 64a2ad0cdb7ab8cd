"""Fuzz (Hypothesis) of the CLI's inputs: spec strings, kernel expressions and numeric arguments
of derive, bound, check, verify and train (issue 12, "what must be shown").

Every call runs in-process under a per-call alarm (:data:`PER_CALL_S`; a hang fails the
example) and must end with exit status 0, 1 or 2 -- never an exception escaping ``main``
(that is a traceback on the command line), never "Traceback" on stderr, and on status 2
exactly one ``posenc: error:`` line.  Example counts keep the whole file under ~60 s on one
core; sizes that are valid are drawn small (n <= 48, head dim <= 4), sizes that must be
refused are drawn from the whole range.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import io
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from posenc.cli import main
from posenc.encodings import PRESETS, REGISTRY

PER_CALL_S = 20
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


class Hung(Exception):
    pass


def _alarm(signum, frame):
    raise Hung(f"no answer within {PER_CALL_S} s")


def call(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` with its exit status and output.  A hang in Python code raises
    :class:`Hung` after PER_CALL_S; one inside C code (a huge integer power never returns to
    the interpreter, so no signal handler runs) is ended by faulthandler's watchdog thread,
    which dumps every thread's stack and exits the test process after 2 PER_CALL_S."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(PER_CALL_S)
    faulthandler.dump_traceback_later(2 * PER_CALL_S, exit=True)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:                   # argparse: usage errors exit 2
                code = exc.code
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, out.getvalue(), err.getvalue()


def check_answer(argv: list[str]) -> int:
    code, out, err = call(argv)
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    if code == 2 and err.startswith("posenc: error:"):
        assert err.count("\n") == 1, (argv, err)
    return code


# -- strategies -------------------------------------------------------------------------------

HUGE_INTS = ["0", "-1", "1e9", "1e8", "100000", "10000001", "1000000000000", "1e999", "nan",
             "2.5", "x", "", "1e-3"]


def kernel_text() -> st.SearchStrategy[str]:
    leaf = st.sampled_from(["k", "0", "1", "2", "9", "0.5", "10.0", "400", "1e300", "pi", "e",
                            "-1"])

    def extend(sub):
        return st.one_of(
            st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "**"]), sub).map(
                lambda t: f"({t[0]}){t[1]}({t[2]})"),
            st.tuples(st.sampled_from(["exp", "log", "sqrt", "abs", "sin", "tanh", "sign"]),
                      sub).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(st.sampled_from(["min", "max"]), sub, sub).map(
                lambda t: f"{t[0]}({t[1]}, {t[2]})"))
    structured = st.recursive(leaf, extend, max_leaves=8)
    chaotic = st.text(alphabet="k0129.+-*/()e, _a", max_size=24)
    towers = st.sampled_from(["9**9**9", "2**2**2**2**2", "10**400", "(-1)**0.5", "1/0", "0**-1",
                              "k**k", "2**(k**20)", "exp(exp(exp(k)))", "k.real", "__import__"])
    return st.one_of(structured, chaotic, towers)


def _fields(name: str) -> list[str]:
    cls = REGISTRY[name]
    return [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []


@st.composite
def spec_text(draw) -> str:
    kind = draw(st.sampled_from(["catalogue", "catalogue", "kernel", "preset", "garbage"]))
    if kind == "preset":
        return draw(st.sampled_from(sorted(PRESETS)))
    if kind == "kernel":
        return f"custom:kernel={draw(kernel_text())}"
    if kind == "garbage":
        return draw(st.text(alphabet="ropealibi:=,;.0123456789", max_size=20))
    name = draw(st.sampled_from(sorted(REGISTRY)))
    keys = _fields(name) + ["bogus", "additive", "additive.max_len", "heads"]
    params = draw(st.dictionaries(st.sampled_from(keys), st.one_of(
        st.sampled_from(HUGE_INTS + ["true", "false", "none", "half", "t5", "table", "exp",
                                     "causal", "1;0.5", "1;nan", "sinusoidal", "4", "2", "8"]),
        st.integers(-3, 70).map(str)), max_size=3))
    return name + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")


def mostly(valid: list, invalid: list) -> st.SearchStrategy:
    """Valid values three times as likely, so that the other arguments reach the deep paths."""
    return st.sampled_from(valid * 3 + invalid)


@settings(FUZZ, max_examples=40)
@given(expr=kernel_text(), n=mostly(["8", "33"], ["1", "10000001"]))
def test_fuzz_kernel_expressions_in_bound(expr, n):
    check_answer(["bound", f"custom:kernel={expr}", "--n", n, "--reference", "none"])


@settings(FUZZ, max_examples=50)
@given(spec=spec_text(), n=st.one_of(st.integers(1, 48).map(str), st.sampled_from(HUGE_INTS),
                                     st.just("8,16")),
       head_dim=mostly(["2", "4", "8"], ["7", "0", "-2", "100000", "65536"]),
       heads=mostly(["1", "2", "8"], HUGE_INTS),
       content=mostly(["rank=2,seed=1"], ["rank=1e9", "rank=0", "rank=x", "bogus", "no.npy"]),
       method=st.sampled_from(["auto", "dense", "lanczos"]))
def test_fuzz_bound(spec, n, head_dim, heads, content, method):
    check_answer(["bound", spec, "--n", n, "--head-dim", head_dim, "--heads", heads,
                  "--content", content, "--method", method, "--reference", "none"])


@settings(FUZZ, max_examples=15)
@given(expr=kernel_text())
def test_fuzz_kernel_expressions_in_derive(expr):
    check_answer(["derive", f"custom:kernel={expr}"])


@settings(FUZZ, max_examples=25)
@given(spec=spec_text(), head_dim=mostly([None, "2"], ["0", "9", "100000", "x"]),
       heads=mostly([None, "1", "2"], ["0", "17", "1000000000"]))
def test_fuzz_derive(spec, head_dim, heads):
    argv = ["derive", spec, "--json"]
    if head_dim is not None:
        argv += ["--head-dim", head_dim]
    if heads is not None:
        argv += ["--heads", heads]
    check_answer(argv)


@settings(FUZZ, max_examples=12)
@given(impl=st.sampled_from(["rope_interleaved.py:rope", "alibi.py:alibi", "missing.py:f",
                             "rope_half.py:nothere"]),
       dim=mostly(["2", "4", "16"], ["3", "0", "-2", "100000", "x"]),
       kind=st.sampled_from([None, "rope", "bias"]))
def test_fuzz_check(impl, dim, kind):
    argv = ["check", str(EXAMPLES / impl), "--dim", dim]
    check_answer(argv + (["--kind", kind] if kind else []))


@settings(FUZZ, max_examples=10)
@given(examples=mostly(["1", "2"], ["0", "-1", "1000000000", "x"]),
       claim=st.sampled_from(["no-such-claim", "toeplitz-alibi", None]))
def test_fuzz_verify(examples, claim):
    argv = ["verify", "--examples", examples] + ([claim] if claim else ["--list"])
    check_answer(argv)


@settings(FUZZ, max_examples=8)
@given(pe=st.one_of(st.sampled_from(["rope", "alibi", "nope", "custom:kernel=-abs(k)"]),
                    spec_text()),
       samples=mostly(["64"], ["0", "-1", "1000000000000", "2000000", "x"]),
       epochs=mostly(["1"], ["0", "10000000", "x"]),
       seed=mostly(["0"], ["-1", "x"]))
def test_fuzz_train_smoke(tmp_path_factory, pe, samples, epochs, seed):
    out = tmp_path_factory.mktemp("run")
    check_answer(["train", "--preset", "smoke", "--pe", pe, "--samples", samples,
                  "--epochs", epochs, "--seed", seed, "--out", str(out / "r"), "--threads", "1"])


def test_the_harness_reports_a_hang(monkeypatch):
    """The alarm really fires: a call that never returns fails the example."""
    import time
    monkeypatch.setitem(globals(), "PER_CALL_S", 1)
    monkeypatch.setitem(globals(), "main", lambda argv: time.sleep(5) or 0)
    with pytest.raises(Hung):
        call(["anything"])
