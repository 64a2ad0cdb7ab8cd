"""``posenc bound``: tables, JSON, plot, and one-line errors with exit status 2."""

import json
import subprocess
import sys

import numpy as np
import pytest

from posenc.cli import main


def run(capsys, *args):
    code = main(["bound", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_with_growth_for_a_list_of_n(capsys):
    code, out, err = run(capsys, "alibi", "--n", "32,64,128")
    assert code == 0 and err == ""
    assert "lam_max(B)" in out and "Szego" in out and "Gershgorin" in out
    assert "||A + B||_2 / ||A||_2" in out and "||A o K||_2 / ||A||_2" in out
    assert "growth with n" in out and " NO " not in out
    growth = out.split("growth with n")[1].split("\n\n")[0].strip().splitlines()[3:]
    assert [line.split()[0] for line in growth] == ["32", "64", "128"]
    # the like-for-like tables follow: content scale, then RoPE's per-plane logit (reference)
    scale = out.split("content scale:")[1].split("\n\n")[0].strip().splitlines()
    assert "||cA+B||/||cA|| c=10000" in scale[2] and "(every c)" in scale[2]
    assert [line.split()[0] for line in scale[4:]] == ["32", "64", "128"]
    plane = out.split("per-plane content:")[1].strip().splitlines()
    assert "ONE content A shared by every rotary plane" in " ".join(plane[:3])
    assert [line.split()[0] for line in plane[5:]] == ["32", "64", "128"]


def test_json_is_strict_and_complete(capsys):
    code, out, _ = run(capsys, "rope", "--n", "40,600", "--json", "--head-dim", "16")
    assert code == 0
    data = json.loads(out)                                       # strict: no NaN/Infinity tokens
    assert data["kernel"]["kind"] == "rotary" and data["kernel"]["toeplitz"] is True
    methods = {r["method"] for r in data["rows"]}
    assert any(m.startswith("dense") for m in methods) and any(m.startswith("Lanczos") for m in methods)
    cond = [r["exact"] for r in data["rows"] if r["quantity"] == "cond(K)"]
    assert cond == ["inf", "inf"]                                 # rank <= 16 < n
    assert all(r["holds"] in (True, None) for r in data["rows"])


def test_custom_kernel_and_given_content_and_values(capsys, tmp_path):
    a = np.random.default_rng(0).standard_normal((50, 50))
    np.save(tmp_path / "a.npy", a @ a.T)
    np.save(tmp_path / "v.npy", np.linspace(-1, 1, 32))
    code, out, _ = run(capsys, "custom:kernel=exp(-0.1*abs(k))", "--n", "20,50",
                       "--content", str(tmp_path / "a.npy"))
    assert code == 0 and "given 50 x 50 matrix" in out and "custom bias" in out
    code, out, _ = run(capsys, "relative_bias", "--n", "30", "--values", str(tmp_path / "v.npy"))
    assert code == 0 and "source given" in out
    code, out, _ = run(capsys, "relative_bias", "--n", "30")
    assert code == 0 and "source seeded draw (seed 0)" in out


def test_plot_is_written_atomically(capsys, tmp_path):
    target = tmp_path / "plot.png"
    code, out, _ = run(capsys, "alibi", "--n", "16,32", "--plot", str(target))
    assert code == 0 and target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]   # no temp file left behind


@pytest.fixture
def bad_files(tmp_path):
    nan = np.eye(10)
    nan[3, 3] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    np.save(tmp_path / "rect.npy", np.ones((4, 5)))
    np.save(tmp_path / "nanvals.npy", np.full(32, np.nan))
    return tmp_path


BAD = [
    (["rope", "--n", "0"], "n >= 1"),
    (["rope", "--n", "-5"], "n >= 1"),
    (["rope", "--n", "ten"], "positive integers"),
    (["rope", "--n", "200000", "--method", "dense"], "too large"),
    (["learned_absolute", "--n", "600"], "max_len=512"),
    (["rope", "--n", "10", "--head-dim", "7"], "even head dimension"),
    (["custom:kernel=__import__('os').system('true')", "--n", "10"], "is not an allowed function"),
    (["custom:kernel=__import__('os')", "--n", "10"], "'__import__' is not an allowed function"),
    (["custom:kernel=k.real", "--n", "10"], "attribute access"),
    (["custom:kernel=log(k)", "--n", "10"], "not finite at k=0"),
    (["rope", "--n", "10", "--content", "{d}/nan.npy"], "NaN"),
    (["rope", "--n", "10", "--content", "{d}/rect.npy"], "square"),
    (["rope", "--n", "20", "--content", "{d}/missing.npy"], "not found"),
    (["rope", "--n", "20", "--content", "rank=0"], "rank must be"),
    (["rope", "--n", "20", "--content", "bogus"], "rank=R,seed=S"),
    (["rope", "--n", "11", "--content", "{d}/nan.npy"], "NaN"),
    (["relative_bias", "--n", "10", "--values", "{d}/nanvals.npy"], "NaN"),
    (["rope", "--n", "10", "--plot", "out.pdf"], ".png"),
    (["alibi", "--n", "10", "--reference", "relative_bias"], "couple differently"),
    (["nosuchpe", "--n", "10"], "unknown positional encoding"),
]


@pytest.mark.parametrize("args,match", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_gives_one_line_and_status_2(capsys, bad_files, args, match):
    code, out, err = run(capsys, *[a.format(d=bad_files) for a in args])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("posenc: error:") and match in err, err


def test_status_2_from_a_real_process(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "posenc", "bound", "custom:kernel=k.__class__",
                           "--n", "10"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
