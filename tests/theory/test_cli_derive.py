"""`posenc derive`: correct forms for rope, alibi, mla, sinusoidal; bad input -> one line, exit 2."""

import json
import subprocess
import sys

import pytest

from posenc.cli import main


def run(*args):
    """``python -m posenc derive ARGS`` in a subprocess (how a user runs it)."""
    return subprocess.run([sys.executable, "-m", "posenc", "derive", *args],
                          capture_output=True, text=True)


@pytest.fixture
def derive_out(capsys):
    """The same command in this process (shares the derivation cache; faster)."""
    def call(*args):
        assert main(["derive", *args]) == 0
        return capsys.readouterr().out
    return call


def test_rope():
    proc = run("rope")
    assert proc.returncode == 0 and proc.stderr == ""
    out = proc.stdout
    assert "declared multiplicative, derived multiplicative  [agree]" in out
    assert "L^h_ij = sum_m Re[q~_m(c_i) conj(k~_m(c_j)) e^(i theta_m (i - j))]" in out
    assert "theta_0 = 1, theta_1 = 1/100" in out
    assert "Toeplitz: proved" in out
    assert "(W u)_{2m} + i (W u)_{2m+1}" in out          # interleaved pairing


def test_alibi_press(derive_out):
    out = derive_out("alibi:slopes=press")
    assert "L^h_ij = c_i^T W_q^T W_k c_j - m_h*Abs(i - j)" in out
    assert "m_0 = 1/4, m_1 = 1/16, m_2 = 1/64, m_3 = 1/256" in out   # 2^(-8h/H), H = 4
    assert "derived additive-bias  [agree]" in out


def test_mla(derive_out):
    out = derive_out("mla")
    assert "c_i^T (W_uq W_dq)^T (W_uk W_dkv) c_j" in out
    assert "content-content, content path: c_i^T (W_uq W_dq)^T (W_uk W_dkv) c_j\n" \
           "      Toeplitz (position-free)" in out
    assert "content-content, rotary path" in out and "derived multiplicative" in out


def test_sinusoidal(derive_out):
    out = derive_out("sinusoidal")
    assert ("L^h_ij = c_i^T W_q^T W_k c_j + c_i^T W_q^T W_k p_j + p_i^T W_q^T W_k c_j "
            "+ p_i^T W_q^T W_k p_j") in out
    assert "position-position: p_i^T W_q^T W_k p_j\n      NOT Toeplitz" in out
    assert "position-position = cos(omega_0*(i - j)) + cos(omega_1*(i - j)) (proved)" in out
    assert "derived additive-input  [agree]" in out


def test_json_and_latex(derive_out):
    data = json.loads(derive_out("rope:pairing=half", "--json"))
    assert data["derived_family"] == data["declared_family"] == "multiplicative"
    assert data["terms"][0]["toeplitz"]["status"] == "toeplitz"
    assert data["parameters"]["theta_1"] == {"exact": "1/100", "value": 0.01}
    latex = derive_out("rope", "--latex")
    assert r"\operatorname{Re}" in latex and r"e^{\mathrm{i}\theta_m (i-j)}" in latex


def test_head_dim_and_heads_options(derive_out):
    out = derive_out("alibi", "--heads", "8")
    assert "m_7 = 1/256" in out and "m_0 = 1/2" in out
    assert "head dim d = 6" in derive_out("rope", "--head-dim", "6", "--heads", "1")


@pytest.mark.parametrize("args,needle", [
    (["nosuchpe"], "unknown positional encoding"),
    (["rope:bsae=2"], "unknown parameter 'bsae'"),
    (["rope:base=abc"], "base must be float"),
    (["rope", "--head-dim", "7"], "even head dimension"),
    (["rope:fraction=1.5"], "fraction must be in (0, 1]"),
    (["rope:fraction=0"], "fraction must be in (0, 1]"),
    (["rope:base=-10"], "base must be a number > 1"),
    (["rope:base"], "malformed spec"),
    (["rope:"], "malformed spec"),
    (["rope", "--head-dim", "0"], "head dim must be a positive integer"),
    (["rope", "--head-dim", "x"], "invalid int value"),
    ([], "give either a SPEC, --from-hf CONFIG, --hf DIR or --all"),
    (["rope", "--all"], "give either a SPEC, --from-hf CONFIG, --hf DIR or --all"),
    (["custom:frequencies=1;2;3", "--head-dim", "4"], "need a head dim of at least 6"),
])
def test_bad_input_gives_one_line_and_status_2(args, needle):
    proc = run(*args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert needle in proc.stderr and proc.stdout == ""
