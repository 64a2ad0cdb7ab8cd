"""``posenc verify`` and ``posenc check`` from the command line: exit codes and one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


def cli(*args, cwd=None):
    """Run ``posenc`` in a subprocess (the real entry point)."""
    return subprocess.run([sys.executable, "-m", "posenc", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT)


def assert_one_line_error(proc, *needles):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def test_verify_one_claim_json():
    proc = cli("verify", "schur-containment", "--json", "--examples", "10")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    (result,) = out["results"]
    assert result["claim"] == "schur-containment" and result["ok"]
    assert any(v["found"] and v["minimal"] for v in result["variants"])


def test_verify_table_lists_counterexamples(main):
    proc = main("verify", "schur-multiplier-norm", "--examples", "10")
    assert proc.returncode == 0, proc.stderr
    assert "schur-multiplier-norm" in proc.stdout and "counterexample" in proc.stdout


@pytest.mark.parametrize("args, needle", [
    (["verify", "no-such-claim"], "unknown claim 'no-such-claim'"),
    (["verify", "schur-containmen"], "did you mean 'schur-containment'"),
    (["verify", "--examples", "0"], "--examples"),
    (["verify", "--profile", "slow"], "invalid choice"),
])
def test_verify_bad_input(main, args, needle):
    assert_one_line_error(main(*args), needle)


@pytest.mark.parametrize("impl, code", [
    ("rope_interleaved.py:rope", 0), ("rope_half.py:rope", 0), ("rope_buggy.py:rope", 1),
    ("alibi.py:alibi", 0), ("alibi_off_by_one.py:alibi", 1),
])
def test_check_examples_exit_codes(main, impl, code):
    proc = main("check", str(EXAMPLES / impl))
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert ("DOES NOT CONFORM" in proc.stdout) == (code == 1)


def test_check_module_path_forms(tmp_path):
    (tmp_path / "mybias.py").write_text((EXAMPLES / "alibi.py").read_text())
    for impl in ("mybias:alibi", "mybias.alibi"):
        proc = cli("check", impl, "--json", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["kind"] == "bias"


USER_CODE = '''
import numpy as np
NOT_CALLABLE = 3
def raises(x, positions):
    raise ValueError("my own message about dims")
def wrong_shape(x, positions):
    return np.asarray(x)[..., :2]
def bias_wrong_shape(n_heads, n):
    return np.zeros((n_heads, n, n + 1))
def import_error_at_call(n_heads, n):
    import no_such_package_xyz
'''


@pytest.mark.parametrize("target, kind, needles", [
    ("no_such_module_xyz:f", None, ["no module named 'no_such_module_xyz'"]),
    ("no_such_module_xyz.f", None, ["no module named 'no_such_module_xyz'"]),
    ("{file}:missing", None, ["has no attribute 'missing'"]),
    ("{dir}/absent.py:f", None, ["no such file"]),
    ("{file}:NOT_CALLABLE", None, ["not callable"]),
    ("{file}:raises", "rope", ["ValueError: my own message about dims"]),
    ("{file}:raises", None, ["ValueError: my own message about dims"]),
    ("{file}:wrong_shape", "rope", ["returned shape", "keep the shape"]),
    ("{file}:bias_wrong_shape", "bias", ["returned shape", "expected (1, 16, 16)"]),
    ("{file}:import_error_at_call", "bias", ["ModuleNotFoundError", "no_such_package_xyz"]),
    ("{file}:raises", "nope", ["--kind must be one of rope, bias"]),
])
def test_check_bad_input_is_one_line(main, tmp_path, target, kind, needles):
    f = tmp_path / "user_pe.py"
    f.write_text(USER_CODE)
    impl = target.format(file=f, dir=tmp_path)
    args = ["check", impl] + (["--kind", kind] if kind else [])
    assert_one_line_error(main(*args), *needles)


def test_check_odd_dim_is_bad_input(main):
    assert_one_line_error(main("check", str(EXAMPLES / "rope_interleaved.py:rope"), "--kind",
                              "rope", "--head-dim", "5"), "--head-dim")


@pytest.mark.parametrize("impl, expect, code", [
    ("alibi.py:alibi", "slopes=press,direction=symmetric", 0),
    ("alibi.py:alibi", "slopes=exp", 1),
    ("alibi.py:alibi_causal", "direction=symmetric", 1),
    ("rope_interleaved.py:rope", "base=10000,pairing=interleaved", 0),
    ("rope_interleaved.py:rope", "base=500000", 1),
])
def test_check_expect_exit_codes(main, impl, expect, code):
    proc = main("check", str(EXAMPLES / impl), "--expect", expect)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "expected" in proc.stdout


@pytest.mark.parametrize("expect, needle", [("base=", "key=value"), ("slopes=press", "bias"),
                                            ("frobnicate=1", "unknown key")])
def test_check_bad_expect_is_one_line(main, expect, needle):
    assert_one_line_error(main("check", str(EXAMPLES / "rope_interleaved.py:rope"), "--kind",
                               "rope", "--expect", expect), needle)
