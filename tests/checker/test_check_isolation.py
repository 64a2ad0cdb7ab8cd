"""``posenc check`` runs the user's code in a child process with a time limit:
a function or module that sleeps, exits, raises a BaseException or kills its interpreter is one
line and exit status 2 -- never a hang, never a silent "pass", never our own process ending."""

import json
import sys

import pytest

from posenc.errors import PosencError
from posenc.checker import ConformanceReport, check_callable, check_target

USER = '''
import os, sys, time
import numpy as np

def slopes(H):
    p = 1 << (H.bit_length() - 1)
    pw = lambda q: [2.0 ** (-8.0 * h / q) for h in range(1, q + 1)]
    return np.array(pw(p) if p == H else pw(p) + pw(2 * p)[0::2][: H - p])

def alibi(n_heads, n):
    k = np.arange(n)
    return -slopes(n_heads)[:, None, None] * np.abs(k[:, None] - k[None, :])[None]

def sleeps(n_heads, n):
    time.sleep(60)

def exits_zero(n_heads, n):
    sys.exit(0)

class Stop(BaseException):
    pass

def raises_base(n_heads, n):
    raise Stop("not an Exception")

def interrupts(n_heads, n):
    raise KeyboardInterrupt

def hard_exit(n_heads, n):
    os._exit(0)

def segfault(n_heads, n):
    import ctypes
    ctypes.string_at(0)

def all_inf(n_heads, n):
    return np.full((n_heads, n, n), np.inf)

def row_masked(n_heads, n):
    B = alibi(n_heads, n)
    B[:, 0, :] = -np.inf
    return B

def chatty(n_heads, n):
    print("hello from the user's code")
    print("and some noise on stderr", file=sys.stderr)
    return alibi(n_heads, n)
'''


@pytest.fixture
def user_file(tmp_path):
    f = tmp_path / "user_code.py"
    f.write_text(USER)
    return f


def one_line_error(proc, *needles):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@pytest.mark.parametrize("fn, timeout, needles", [
    ("sleeps", "2", ["did not finish within 2 s", "--timeout"]),
    ("exits_zero", "60", ["called sys.exit(0)"]),
    ("raises_base", "60", ["raised Stop: not an Exception", "BaseException"]),
    ("interrupts", "60", ["raised KeyboardInterrupt"]),
    ("hard_exit", "60", ["ended with exit status 0 before the check finished"]),
    ("segfault", "60", ["crashed", "SIGSEGV"]),
])
def test_misbehaving_user_code_is_one_line_and_exit_2(main, user_file, fn, timeout, needles):
    one_line_error(main("check", f"{user_file}:{fn}", "--kind", "bias", "--timeout", timeout),
                   *needles)


def test_sys_exit_while_importing_is_one_line(main, tmp_path):
    f = tmp_path / "exits_on_import.py"
    f.write_text("import sys\nsys.exit(0)\ndef g(h, n):\n    return None\n")
    one_line_error(main("check", f"{f}:g"), "sys.exit(0)")


def test_sys_exit_in_process_api_is_a_posenc_error():
    def exits(x, positions):
        sys.exit(3)
    with pytest.raises(PosencError, match=r"sys.exit\(3\)"):
        check_callable(exits, "rope", dim=4)



class Boom(BaseException):
    pass


@pytest.mark.parametrize("kind", ["rope", "bias", "xpos", None])
@pytest.mark.parametrize("exc", [Boom("not an Exception"), GeneratorExit("closed")])
def test_a_base_exception_in_process_is_the_one_line_error(kind, exc):
    """It escaped check_callable / posenc.check raw (an Exception was a PosencError)."""
    import posenc

    def raises(*args):
        raise exc
    with pytest.raises(PosencError) as info:
        posenc.check(raises, kind, head_dim=4)
    line = str(info.value)
    assert "\n" not in line and f"raised {type(exc).__name__}: {exc}" in line
    assert "a BaseException, not an Exception" in line


def test_a_base_exception_gives_the_same_line_in_process_and_in_the_child(user_file):
    namespace: dict = {"__name__": "user_code"}
    exec(compile(USER, str(user_file), "exec"), namespace)
    with pytest.raises(PosencError) as here:
        check_callable(namespace["raises_base"], "bias", name=f"{user_file}:raises_base")
    with pytest.raises(PosencError) as child:
        check_target(f"{user_file}:raises_base", "bias")
    assert str(here.value) == str(child.value)


def test_a_keyboard_interrupt_in_process_stays_an_interrupt():
    def interrupts(x, positions):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        check_callable(interrupts, "rope", dim=4)

def test_bias_of_plus_infinity_does_not_conform(main, user_file):
    proc = main("check", f"{user_file}:all_inf")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "finite" in proc.stdout and "+inf" in proc.stdout


def test_fully_masked_row_does_not_conform(user_file):
    report = check_target(f"{user_file}:row_masked", "bias")
    (bad,) = report.failures
    assert bad.name == "finite" and "row 0 is all −inf" in bad.counterexample


def test_user_output_stays_out_of_the_report(main, user_file):
    proc = main("check", f"{user_file}:chatty", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ok"] is True          # stdout is the JSON report alone
    assert "hello" not in proc.stderr and "noise" not in proc.stderr


def test_check_target_returns_the_same_report_as_in_process(user_file):
    from posenc.checker import check_impl

    child = check_target(f"{user_file}:alibi")
    here = check_impl(f"{user_file}:alibi")
    assert isinstance(child, ConformanceReport)
    assert child.to_dict() == here.to_dict()
    assert ConformanceReport.from_dict(json.loads(json.dumps(child.to_dict()))) == child
    assert child.text() == here.text()


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "1e9"])
def test_bad_timeout_is_one_line(main, user_file, timeout):
    one_line_error(main("check", f"{user_file}:alibi", "--timeout", timeout), "--timeout")


def test_expect_with_a_slope_list_crosses_to_the_child(user_file):
    listed = [2.0 ** (-8.0 * h / 4) for h in range(1, 5)]
    report = check_target(f"{user_file}:alibi", expect={"slopes": listed})
    assert report.ok and report.properties[-1].name == "expected", report.text()
    bad = check_target(f"{user_file}:alibi", expect={"slopes": listed[::-1]})
    assert bad.failures[0].name == "expected"


# ------------------------------------------------------------------ user code that starts processes

SPAWNS = '''
import os, subprocess, sys
import numpy as np

PIDS = {pids!r}

def _start():  # a long-lived child that inherits our stdout and stderr
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open(PIDS, "a") as fh:
        fh.write(f"{{p.pid}}\\n")

{at_import}

def alibi(n_heads, n):
    {per_call}
    k = np.arange(n)
    s = np.array([2.0 ** (-8.0 * h / n_heads) for h in range(1, n_heads + 1)])
    return -s[:, None, None] * np.abs(k[:, None] - k[None, :])[None]

def fails(n_heads, n):
    _start()
    raise ValueError("broken after starting a child")
'''


def _alive(pid: int) -> bool:
    import os
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie (exited, not yet reaped) is not alive
        return fh.read().split(")")[-1].split()[0] != "Z"


def _left_running(pids_file) -> list[int]:
    """The started processes still alive 5 s after the check (SIGKILL is delivered
    asynchronously: a killed process may still show as running for a moment)."""
    import time
    started = [int(x) for x in pids_file.read_text().split()]
    assert started, "the user's code started nothing"
    deadline = time.monotonic() + 5
    while [p for p in started if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in started if _alive(p)]


def _spawning_file(tmp_path, at_import: bool, per_call: bool):
    pids = tmp_path / "pids.txt"
    f = tmp_path / "spawning.py"
    f.write_text(SPAWNS.format(pids=str(pids), at_import="_start()" if at_import else "",
                               per_call="_start()" if per_call else "pass"))
    return f, pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("at_import, per_call", [(True, False), (False, True)])
def test_processes_the_user_code_starts_end_with_a_successful_check(tmp_path, main, at_import,
                                                                    per_call):
    import time
    f, pids = _spawning_file(tmp_path, at_import, per_call)
    t0 = time.monotonic()
    proc = main("check", f"{f}:alibi", "--kind", "bias", "--timeout", "60")
    took = time.monotonic() - t0
    # a report, not "did not finish" after waiting the whole limit on an inherited pipe
    assert proc.returncode in (0, 1) and "did not finish" not in proc.stderr, proc.stderr
    assert took < 50
    assert _left_running(pids) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_processes_end_with_a_failing_check_too(tmp_path, main):
    f, pids = _spawning_file(tmp_path, at_import=False, per_call=False)
    one_line_error(main("check", f"{f}:fails", "--kind", "bias"), "broken after starting")
    assert _left_running(pids) == []


def test_a_timeout_for_an_in_process_callable_is_refused():
    import posenc
    # it was ignored: a callable that sleeps never returned
    with pytest.raises(PosencError, match="timeout applies to code checked in a child process"):
        posenc.check(lambda x, pos: x, timeout=5)
