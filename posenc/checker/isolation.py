"""Run ``posenc check`` on a user's code in a child process, with a time limit.

The user's module is imported and called only in the child (``python -m
posenc.checker._child``), so nothing it does can end, hang or corrupt the caller:

* a function that sleeps or loops past ``timeout`` seconds: the child's process group is killed;
* ``sys.exit(...)``, ``os._exit(...)``, a ``BaseException`` (``KeyboardInterrupt`` included),
  a segfault: the child reports it, or its exit status / signal tells what happened;
* anything the user's code prints goes to files of the check's own, not to our output;
* processes the user's code starts (``Popen``, ``fork``, at import time or per call) end with
  the check: the child leads its own session and process group, and the whole group is killed
  on every exit path -- success, error, timeout, interrupt -- once the child itself has ended.
  Nothing is read from a pipe a descendant could inherit and hold open (that made a check wait
  its whole time limit and report "did not finish"): the child's output goes to files, the
  report to a result file, and the wait is for the child process alone.  (A descendant that
  leaves the group with its own ``setsid`` is outside this; no cgroup is used.)

Each of these is one :class:`~posenc.errors.PosencError` line (``posenc check`` exit 2).  The
report comes back as JSON (``ConformanceReport.to_dict``) through a file, never as a pickle.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from ..coerce import is_number
from ..errors import PosencError
from .expect import parse_expect
from .kinds import check_kind, check_max_positions
from .report import ConformanceReport

DEFAULT_TIMEOUT = 60.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])      # the folder that holds posenc/


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group (the child leads it: ``start_new_session``), which
    holds whatever the user's code started; the child itself too if the group call fails."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()


def check_target(target: str, kind: Optional[str] = None, *, dim: int = 64,
                 expect=None, timeout: float = DEFAULT_TIMEOUT,
                 max_positions: Optional[int] = None) -> ConformanceReport:
    """Load ``target`` (``module:function``, ``module.function`` or ``file.py:function``) in a
    child process and check it; the report, or one :class:`PosencError` line for anything else."""
    check_kind(kind)
    check_timeout(timeout)
    expected = parse_expect(expect, kind)            # refuse a malformed --expect before any work
    check_max_positions(max_positions)
    request = {"target": target, "kind": kind, "dim": dim, "expect": expected,
               "max_positions": max_positions, "cwd": os.getcwd()}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([_PACKAGE_ROOT] + [p for p in env.get("PYTHONPATH", "")
                                                           .split(os.pathsep) if p])
    with tempfile.TemporaryDirectory(prefix="posenc-check-") as tmp:
        result_path = os.path.join(tmp, "result.json")
        err_path = os.path.join(tmp, "stderr.txt")
        with open(os.path.join(tmp, "stdout.txt"), "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "posenc.checker._child", json.dumps(request),
                 result_path], stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PosencError(f"{target} did not finish within {timeout:g} s and was stopped "
                              f"(a sleep or an endless loop?); raise the limit with "
                              f"--timeout") from None
        finally:  # every exit path: the child (if still running) and all it started
            _kill_group(proc)
            proc.wait()
        with open(err_path, "rb") as fh:
            err_text = fh.read().decode("utf-8", "replace")
        result = None
        if os.path.exists(result_path):
            try:
                with open(result_path, encoding="utf-8") as fh:
                    result = json.load(fh)
            except (OSError, ValueError):
                result = None
    if result is not None:
        if "error" in result:
            raise PosencError(result["error"])
        return ConformanceReport.from_dict(result["report"])
    code = proc.returncode
    tail = _last_line(err_text)
    seen = f" (its last words: {tail})" if tail else ""
    if code is not None and code < 0:
        raise PosencError(f"{target} crashed the Python process that ran it: killed by "
                          f"{_signal_name(code)}{seen}")
    raise PosencError(f"the Python process running {target} ended with exit status {code} "
                      f"before the check finished (os._exit, or a crash in native code?){seen}")


def check_timeout(timeout: float) -> None:
    """A time limit in seconds, in (0, 86400]."""
    if not is_number(timeout) or not timeout > 0 \
            or timeout > 86400:
        raise PosencError(f"--timeout must be a number of seconds in (0, 86400]; got {timeout!r}")
