"""The CLI: sub-commands run, and user errors give one line and exit status 2."""

import subprocess
import sys

import pytest


def run_cli(*args, check_code=None):
    proc = subprocess.run([sys.executable, "-m", "posenc", *args], capture_output=True, text=True)
    if check_code is not None:
        assert proc.returncode == check_code, proc.stderr
    return proc


def test_encodings_lists_every_family():
    out = run_cli("encodings", check_code=0).stdout
    for name in ("nope", "sinusoidal", "learned_absolute", "relative_bias", "alibi", "rope", "mla",
                 "hybrid", "custom", "paper-rope"):
        assert name in out


@pytest.mark.parametrize("args", [["nosuchcommand"], ["encodings", "--bogus"]])
def test_bad_arguments_give_one_line_and_status_2(args):
    proc = run_cli(*args, check_code=2)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
