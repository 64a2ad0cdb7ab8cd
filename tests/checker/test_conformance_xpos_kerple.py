"""Conformance of KERPLE-log and xPos: posenc's own torch modules pass ``posenc check`` at init and
after their parameters are set; generated references written here (plain loops) pass; and each
check fails on the plausible bug it is there for (the torch modules broken by monkeypatching)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from posenc.empirical.model.pe import bias as bias_mod
from posenc.empirical.model.pe import rotary as rotary_mod
from posenc.errors import PosencError
from posenc.checker import check_callable, parse_expect

DIM = 8


def status(report):
    return {p.name: p.status for p in report.properties}


# --- KERPLE-log --------------------------------------------------------------------------------

def kerple_module(r1=1.0, r2=1.0, per_head=None, offset=0, causal=False):
    """posenc's KerpleLogBias as g(n_heads, n); ``per_head(H)`` -> (r1s, r2s) sets log_r."""
    def g(H, n):
        m = bias_mod.KerpleLogBias(H, r1, r2)
        if per_head is not None:
            r1s, r2s = per_head(H)
            with torch.no_grad():
                m.log_r.copy_(torch.log(torch.tensor([r1s, r2s], dtype=torch.float32)))
        B = m(n, offset)
        if causal:                      # the model's causal mask: -inf above the diagonal
            B = B.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        return B
    return g


def kerple_loop(r1s, r2s, n, causal=False):
    out = np.zeros((len(r1s), n, n))
    for h, (a, b) in enumerate(zip(r1s, r2s)):
        for i in range(n):
            for j in range(n):
                out[h, i, j] = -np.inf if causal and j > i else -a * math.log(1 + b * abs(i - j))
    return out


def ramp(H):
    return [0.5 + 0.25 * h for h in range(H)], [0.1 * (h + 1) for h in range(H)]


@pytest.mark.parametrize("offset", [0, 5])
def test_the_model_s_kerple_bias_conforms_at_init(offset):
    report = check_callable(kerple_module(1.5, 0.5, offset=offset), "bias",
                            expect="r1=1.5,r2=0.5")
    assert report.ok, report.text()
    assert status(report)["KERPLE-log form"] == "pass"
    got = report.summary["kerple_log"]["8"]
    assert np.allclose(got["r1"], 1.5, rtol=1e-5) and np.allclose(got["r2"], 0.5, rtol=1e-5)


def test_the_model_s_kerple_bias_conforms_after_setting_r1_r2_per_head():
    r1s, r2s = ramp(8)
    report = check_callable(kerple_module(per_head=ramp), "bias",
                            expect={"r1": r1s, "r2": r2s})
    assert report.ok, report.text()
    got = report.summary["kerple_log"]["8"]
    assert np.allclose(got["r1"], r1s, rtol=1e-4) and np.allclose(got["r2"], r2s, rtol=1e-4)


def test_a_causal_kerple_bias_conforms_below_its_mask():
    report = check_callable(kerple_module(2.0, 0.25, causal=True), "bias",
                            expect="r1=2,r2=0.25,direction=causal")
    assert report.ok, report.text()
    assert report.summary["direction"] == "causal"


@settings(max_examples=15, deadline=None)
@given(st.floats(0.1, 4.0), st.floats(0.05, 8.0), st.booleans())
def test_a_loop_reference_kerple_bias_conforms(r1, r2, causal):
    def g(H, n):
        return kerple_loop([r1] * H, [r2] * H, n, causal)
    report = check_callable(g, "bias", expect={"r1": r1, "r2": r2})
    assert report.ok, report.text()


def _dropped_r2(self, seq, offset=0, dtype=torch.float32):
    k = bias_mod._offsets(seq, offset, self.log_r.device).abs().to(self.log_r.dtype)
    r1, _ = torch.exp(self.log_r)
    return (-r1[:, None, None] * torch.log1p(k)).to(dtype)


def _swapped(self, seq, offset=0, dtype=torch.float32):
    k = bias_mod._offsets(seq, offset, self.log_r.device).abs().to(self.log_r.dtype)
    r2, r1 = torch.exp(self.log_r)
    return (-r1[:, None, None] * torch.log1p(r2[:, None, None] * k)).to(dtype)


@pytest.mark.parametrize("bug", [_dropped_r2, _swapped], ids=["r2 dropped", "r1, r2 swapped"])
def test_a_broken_kerple_module_fails_its_expectation(monkeypatch, bug):
    monkeypatch.setattr(bias_mod.KerpleLogBias, "forward", bug)
    report = check_callable(kerple_module(1.5, 0.5), "bias", expect="r1=1.5,r2=0.5")
    assert not report.ok
    assert status(report)["expected"] == "fail"
    assert status(report)["KERPLE-log form"] == "pass"     # still KERPLE-log, with other r1, r2


def test_a_kerple_bias_with_a_wrong_far_offset_fails_its_form():
    def g(H, n):                        # the log saturates past distance 8: not KERPLE-log
        B = kerple_loop([1.0] * H, [1.0] * H, n)
        k = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
        return np.where(k > 8, -np.log1p(8.0) - 0.5 * (k - 8) / n, B)
    report = check_callable(g, "bias")
    assert status(report)["KERPLE-log form"] == "fail", report.text()


def test_alibi_is_not_read_as_kerple():
    def g(H, n):
        k = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
        return -0.5 * np.broadcast_to(k, (H, n, n)).astype(float)
    report = check_callable(g, "bias")
    assert status(report)["ALiBi form"] == "pass" and "KERPLE-log form" not in status(report)


# --- xPos --------------------------------------------------------------------------------------

def xpos_module(base=10000.0, gamma=0.4, scale_base=512.0):
    """posenc's XPosRotary.rotate_qk as f(q, k, positions), one position at a time."""
    def f(q, k, positions):
        m = rotary_mod.XPosRotary(q.shape[-1], 1, base, gamma, scale_base)
        q, k = torch.as_tensor(q)[None], torch.as_tensor(k)[None]          # (1, B, S, D)
        outs = [m.rotate_qk(q[..., s:s + 1, :], k[..., s:s + 1, :], offset=int(p))
                for s, p in enumerate(positions)]
        return (torch.cat([o[0] for o in outs], -2)[0], torch.cat([o[1] for o in outs], -2)[0])
    return f


def xpos_loop(base, gamma, scale_base, key_sign=-1.0):
    """xPos from Sun et al.'s formula, plane by plane (interleaved)."""
    def f(q, k, positions):
        q, k = np.asarray(q, float), np.asarray(k, float)
        d = q.shape[-1]
        oq, ok = q.copy(), k.copy()
        for m in range(d // 2):
            theta = base ** (-2.0 * m / d)
            zeta = (2.0 * m / d + gamma) / (1.0 + gamma)
            for s, p in enumerate(positions):
                c, sn = math.cos(p * theta), math.sin(p * theta)
                for src, dst, sign in ((q, oq, 1.0), (k, ok, key_sign)):
                    a, b = src[..., s, 2 * m], src[..., s, 2 * m + 1]
                    scale = zeta ** (sign * p / scale_base)
                    dst[..., s, 2 * m] = scale * (a * c - b * sn)
                    dst[..., s, 2 * m + 1] = scale * (a * sn + b * c)
        return oq, ok
    return f


def test_the_model_s_xpos_conforms_at_the_catalogue_defaults():
    report = check_callable(xpos_module(), "xpos", dim=DIM)
    assert report.ok, report.text()
    assert set(status(report)) == {"shape", "linear in q and k", "uses positions", "planes",
                                   "shift invariance (logit)", "decay", "xPos reference"}
    assert report.summary["pairing"] == "interleaved"


@settings(max_examples=10, deadline=None)
@given(st.floats(100.0, 1e5), st.floats(0.05, 2.0), st.floats(4.0, 2048.0))
def test_the_model_s_xpos_and_a_loop_reference_conform_to_their_parameters(base, gamma, scale):
    expect = {"base": base, "gamma": gamma, "scale_base": scale}
    for f in (xpos_module(base, gamma, scale), xpos_loop(base, gamma, scale)):
        report = check_callable(f, "xpos", dim=DIM, expect=expect)
        assert report.ok, report.text()


def test_xpos_parameters_that_differ_fail_the_reference_only():
    report = check_callable(xpos_module(gamma=0.4), "xpos", dim=DIM, expect="gamma=0.8")
    assert status(report)["xPos reference"] == "fail"
    assert "decays by" in next(p.detail for p in report.properties if p.name == "xPos reference")
    assert [n for n, s in status(report).items() if s == "fail"] == ["xPos reference"]


def _key_sign_flipped(self, q, k, offset=0):
    s = self.scales(q.shape[-2], offset, q.dtype)
    return self(q, offset) * s, self(k, offset) * s


def _no_scale_base(self, q, k, offset=0):
    pos = torch.arange(offset, offset + q.shape[-2], dtype=torch.float64)
    s = torch.exp(pos[:, None] * (self.log_decay * 512.0)[None, :]).repeat_interleave(2, -1)
    return self(q, offset) * s.to(q.dtype), self(k, offset) / s.to(q.dtype)


def _same_decay_everywhere(self, q, k, offset=0):
    s = self.scales(q.shape[-2], offset, q.dtype)
    s = s[:, :1].expand_as(s)
    return self(q, offset) * s, self(k, offset) / s


@pytest.mark.parametrize("bug, failing", [
    (_key_sign_flipped, {"shift invariance (logit)", "decay", "xPos reference"}),
    (_no_scale_base, {"xPos reference"}),
    (_same_decay_everywhere, {"xPos reference"}),
], ids=["key scaled like the query", "scale_base dropped", "one decay for every plane"])
def test_a_broken_xpos_module_fails(monkeypatch, bug, failing):
    monkeypatch.setattr(rotary_mod.XPosRotary, "rotate_qk", bug)
    report = check_callable(xpos_module(), "xpos", dim=DIM)
    assert not report.ok
    assert {n for n, s in status(report).items() if s == "fail"} >= failing, report.text()


def test_the_decay_check_names_a_key_scaled_like_the_query():
    report = check_callable(xpos_loop(10000.0, 0.4, 512.0, key_sign=1.0), "xpos", dim=DIM)
    props = {p.name: p for p in report.properties}
    assert props["shift invariance (logit)"].status == "fail"
    assert props["decay"].status == "fail"
    assert "key is scaled by λ^(+j) like the query" in props["decay"].detail
    assert props["xPos reference"].status == "fail"


def test_plain_rope_is_not_xpos():
    from posenc.empirical.model.pe.rotary import rope_rotary
    from posenc.encodings import RoPE

    def f(q, k, positions):
        m = rope_rotary(RoPE(), q.shape[-1], 1)
        q, k = torch.as_tensor(q)[None], torch.as_tensor(k)[None]
        outs = [m.rotate_qk(q[..., s:s + 1, :], k[..., s:s + 1, :], offset=int(p))
                for s, p in enumerate(positions)]
        return (torch.cat([o[0] for o in outs], -2)[0], torch.cat([o[1] for o in outs], -2)[0])
    report = check_callable(f, "xpos", dim=DIM)
    assert status(report)["decay"] == "pass"            # a decay of 1 is still geometric ...
    assert status(report)["xPos reference"] == "fail"   # ... but not xPos's


# --- --expect ----------------------------------------------------------------------------------

def test_expect_keys_of_the_new_kinds():
    assert parse_expect("r1=2,r2=0.5") == {"r1": 2.0, "r2": 0.5, "kind": "bias"}
    assert parse_expect("r1=1:2") == {"r1": [1.0, 2.0], "kind": "bias"}
    assert parse_expect("gamma=0.4")["kind"] == "xpos"
    assert parse_expect("base=500")["kind"] == "rope"                 # as before xpos
    assert parse_expect("base=500", "xpos") == {"base": 500.0, "kind": "xpos"}
    assert parse_expect({"r1": [1.0, 2.0]}) == {"r1": [1.0, 2.0], "kind": "bias"}


@pytest.mark.parametrize("text, kind, message", [
    ("r1=0", None, "positive"), ("r2=-1", None, "positive"), ("gamma=0", None, "> 0"),
    ("slopes=press,r1=1", None, "mixes ALiBi's slopes"), ("gamma=1,slopes=press", None, "mixes"),
    ("pairing=half", "xpos", "not --kind xpos"), ("r1=1", "rope", "describes a bias function"),
])
def test_bad_expect_for_the_new_kinds(text, kind, message):
    with pytest.raises(PosencError) as err:
        parse_expect(text, kind)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_scales_that_do_not_cancel_fail_the_decay_alone_of_the_structural_checks():
    ref = xpos_loop(10000.0, 0.4, 512.0)

    def f(q, k, positions):
        oq, ok = ref(q, k, positions)
        return 2.0 * oq, ok
    props = status(check_callable(f, "xpos", dim=DIM))
    assert props["decay"] == "fail" and props["shift invariance (logit)"] == "pass"
    assert props["planes"] == "pass" and props["xPos reference"] == "fail"


def test_the_command_checks_an_xpos_file_and_a_kerple_file(tmp_path, capsys):
    from posenc.cli import main

    (tmp_path / "pes.py").write_text(
        "import math\nimport numpy as np\n"
        "def kerple(H, n):\n"
        "    k = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])\n"
        "    return np.broadcast_to(-2.0 * np.log1p(0.5 * k), (H, n, n)).copy()\n"
        "def xpos(q, k, positions):\n"
        "    d = q.shape[-1]; m = np.arange(d // 2)\n"
        "    theta = 10000.0 ** (-2.0 * m / d); zeta = (2.0 * m / d + 0.4) / 1.4\n"
        "    p = np.asarray(positions, float)[:, None]\n"
        "    w = np.exp(1j * p * theta) * zeta ** (p / 512.0)\n"
        "    zq = (q[..., 0::2] + 1j * q[..., 1::2]) * w\n"
        "    zk = (k[..., 0::2] + 1j * k[..., 1::2]) * np.exp(1j * p * theta) / zeta ** (p / 512.0)\n"
        "    pack = lambda z: np.stack([z.real, z.imag], -1).reshape(q.shape)\n"
        "    return pack(zq), pack(zk)\n")
    assert main(["check", f"{tmp_path}/pes.py:kerple", "--expect", "r1=2,r2=0.5"]) == 0
    assert main(["check", f"{tmp_path}/pes.py:xpos", "--kind", "xpos", "--dim", "8"]) == 0
    assert main(["check", f"{tmp_path}/pes.py:xpos", "--dim", "8", "--expect", "gamma=0.4"]) == 0
    assert main(["check", f"{tmp_path}/pes.py:xpos", "--dim", "8", "--expect",
                 "scale_base=256"]) == 1
    out = capsys.readouterr().out
    assert "KERPLE-log form" in out and "xPos reference" in out
