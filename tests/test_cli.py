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


def test_stop_on_without_patience_is_one_line_from_cli_and_api(tmp_path):
    """train --stop-on accuracy_or_loss needs --patience: the CLI's line is the API's, exit 2,
    no run folder written."""
    import posenc
    from posenc.errors import PosencError

    out = tmp_path / "run"
    proc = run_cli("train", "--preset", "smoke", "--stop-on", "accuracy_or_loss", "--out", str(out),
                   check_code=2)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "stop_on accuracy_or_loss is an early-stopping rule: give patience too" in proc.stderr
    with pytest.raises(PosencError) as err:
        posenc.train("distance", "rope", preset="smoke", out=str(out),
                     overrides={"stop_on": "accuracy_or_loss"})
    assert str(err.value) in proc.stderr and not out.exists()
