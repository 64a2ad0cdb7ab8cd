"""The pieces behind the bug set (test_bug_set.py) checked one by one --
position tables and call-dependent frequencies (reach.py), the random-content shift check
(rope.py), half-precision rounding (half.py), the T5 reference (t5.py), the new --expect keys
and --max-positions, and the command line (one line and exit 2 for bad input)."""

import json

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings, strategies as st

import realistic as R
from posenc.checker import check_callable, check_target
from posenc.checker.expect import parse_expect
from posenc.checker.half import rounded
from posenc.checker.rope import TOL, check_shift
from posenc.checker.t5 import reference as t5_reference
from posenc.errors import PosencError


def props(report):
    return {p.name: p for p in report.properties}


# --- position tables and call-dependent frequencies ---------------------------------------------

@pytest.mark.parametrize("fn, size", [(R.gptj_2048, 2048), (R.transformer_lens, 2048),
                                      (R.torchtune, 4096)])
def test_a_position_table_is_probed_below_its_detected_size(fn, size):
    report = check_callable(fn, "rope", dim=16)
    assert report.ok, report.text()
    assert report.summary["table_size"] == size
    assert f"a table of {size} positions" in props(report)["large positions"].detail
    assert f"at p={size - 1}" in props(report)["float32 drift"].detail


def test_max_positions_is_used_and_a_raise_below_it_fails():
    report = check_callable(R.gptj_2048, "rope", dim=16, max_positions=2048)
    assert report.ok and report.summary["max_positions"] == 2048, report.text()
    report = check_callable(R.gptj_2048, "rope", dim=16, max_positions=5000)
    p = props(report)["float32 drift"]
    assert p.status == "fail" and "raised below --max-positions" in p.detail, report.text()
    assert "position 4999 (< --max-positions 5000)" in p.counterexample


def test_a_function_without_a_table_is_probed_to_a_million():
    report = check_callable(R.neox, "rope", dim=16)
    assert props(report)["large positions"].status == "pass"
    assert report.summary["probe_positions"] == [1000, 10000, 100000, 1000000]


@pytest.mark.parametrize("max_pos", [64, 2048])
def test_dynamic_ntk_is_its_own_property_not_drift(max_pos):
    def f(x, positions):
        return R.dynamic_ntk(x, positions, max_pos=max_pos)
    report = check_callable(f, "rope", dim=16)
    assert report.ok, report.text()
    p = props(report)["call-dependent frequencies"]
    assert p.status == "info" and report.summary["call_dependent_from"] == max_pos
    assert props(report)["float32 drift"].status in ("pass", "n/a")


def test_a_q_k_function_with_a_short_table_is_read_below_it():
    def f(q, k, positions):                     # a 512-row table: position 1000 raises
        return R.gptj(q, positions, num_pos=512), R.gptj(k, positions, num_pos=512)
    report = check_callable(f, "rope-qk", dim=16)
    assert report.ok and report.summary["pairing"] == "interleaved", report.text()


def test_a_wrapped_table_still_drifts():
    report = check_callable(R.gptj_wrapped, "rope", dim=16)
    assert props(report)["float32 drift"].status == "fail", report.text()


# --- the random-content shift check agrees with the entry-by-entry one --------------------------

def _exact_shift(M):
    """The check before the block-wise one: every D×D block, the first failing entry by (i+j, i, a, b)."""
    G = np.einsum("ida,jdb->ijab", M, M)
    dev = np.abs(G[1:, 1:] - G[:-1, :-1])
    idx = np.argwhere(~(dev <= TOL))
    if not idx.size:
        return None
    keys = (idx[:, 0] + idx[:, 1], idx[:, 0], idx[:, 2], idx[:, 3])
    return tuple(int(v) for v in idx[np.lexsort(tuple(reversed(keys)))[0]])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([0.0, 1e-7, 3e-6, 2e-5, 1e-3]),
       st.integers(1, 6), st.sampled_from([4, 8, 16]))
def test_random_content_shift_check_equals_the_exact_one(seed, eps, hits, d):
    rng = np.random.default_rng(seed)
    S = 8
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    M = np.tile(np.eye(d), (S, 1, 1))
    for m, t in enumerate(theta):
        c, s = np.cos(np.arange(S) * t), np.sin(np.arange(S) * t)
        M[:, 2 * m, 2 * m], M[:, 2 * m + 1, 2 * m + 1] = c, c
        M[:, 2 * m + 1, 2 * m], M[:, 2 * m, 2 * m + 1] = s, -s
    for _ in range(hits):                      # a few entries nudged: a bug of size eps
        M[rng.integers(S), rng.integers(d), rng.integers(d)] += eps * rng.choice([-1, 1])
    want = _exact_shift(M)
    got = check_shift(M, np.arange(S))
    assert (got.status == "pass") == (want is None), (want, got)
    if want is not None:
        i, j, a, b = want
        assert got.counterexample.startswith(f"q = e_{a}, k = e_{b}: ⟨f(q,{i}), f(k,{j})⟩")


# --- half precision ------------------------------------------------------------------------------

@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=1, max_size=20))
def test_rounding_to_half_formats_matches_torch(values):
    v = np.array(values)
    for fmt, dtype in (("bfloat16", torch.bfloat16), ("float16", torch.float16)):
        want = torch.tensor(v, dtype=torch.float32).to(dtype).double().numpy()
        assert np.array_equal(rounded(v, fmt), want)


def test_a_float32_rope_is_not_called_half_precision():
    report = check_callable(lambda x, p: R.neox(x, p) * 1.001, "rope", dim=16)   # not orthogonal
    assert not report.ok and "half precision" not in props(report), report.text()


# --- T5 ----------------------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(st.booleans(), st.sampled_from([8, 16, 32, 64]), st.sampled_from([16, 32, 64, 128, 256]))
def test_t5_reference_equals_the_reference_implementation(bidirectional, nb, md):
    # the reference code divides by log(max_distance / max_exact): undefined when they are equal
    assume(md > (nb // 4 if bidirectional else nb // 2))
    rel = torch.arange(-600, 601)
    want = R.relative_position_bucket(rel, bidirectional, nb, md).numpy()
    assert np.array_equal(t5_reference(rel.numpy(), bidirectional, nb, md), want)


def test_t5_parameters_are_recovered():
    report = check_callable(lambda n: R.t5_buckets(n, num_buckets=64, max_distance=256), "t5")
    assert report.ok, report.text()
    assert (report.summary["num_buckets"], report.summary["max_distance"]) == (64, 256)


def test_t5_absolute_buckets_fail_toeplitz():
    report = check_callable(lambda n: R.t5_encoder(n) + (torch.arange(n)[:, None] == 3), "t5")
    assert props(report)["Toeplitz"].status == "fail", report.text()


# --- bias details ------------------------------------------------------------------------------

def test_bfloat16_falcon_fails_without_the_dtype_and_passes_with_it():
    assert not check_callable(R.falcon_style, "bias").ok
    assert check_callable(R.falcon_style, "bias", expect="dtype=bfloat16").ok
    # the stated precision does not excuse a slope 4% off: slopes of 12 heads given to 11
    report = check_callable(lambda H, n: R.falcon_style(H, n, heads=H + 1), "bias",
                            expect="dtype=bfloat16")
    assert props(report)["slope schedule"].status == "fail", report.text()
    # nor slopes 5% off (bfloat16 holds a slope to 0.4%; the check allows 8u = 3.1%)
    five = check_callable(lambda H, n: R.falcon_style(H, n) * 1.05, "bias", expect="dtype=bfloat16")
    assert props(five)["slope schedule"].status == "fail", five.text()


# --- --expect and --max-positions: parsing and the command line ----------------------------------

@pytest.mark.parametrize("text, needle", [
    ("dtype=float8", "must be float32, bfloat16 or float16"),
    ("bidirectional=maybe", "must be true or false"),
    ("num_buckets=3.5", "an integer in [2, 4096]"),
    ("max_distance=1", "an integer in [2, 4096]"),
    ("num_buckets=32,base=10000", "mixes T5 bucket keys"),
])
def test_bad_expect_is_one_line(text, needle):
    with pytest.raises(PosencError, match=None) as exc:
        parse_expect(text)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_expect_keys_pick_the_kind():
    assert parse_expect("num_buckets=32")["kind"] == "t5"
    assert parse_expect("dtype=bfloat16")["kind"] == "bias"
    assert parse_expect("base=10000", "rope-qk")["kind"] == "rope-qk"


USER = '''
import torch
from realistic import gptj_2048, t5_transposed, kv_cache_offset
'''


@pytest.fixture
def user_file(tmp_path, monkeypatch):
    import os
    monkeypatch.syspath_prepend(os.path.dirname(R.__file__))
    monkeypatch.setenv("PYTHONPATH", os.path.dirname(R.__file__))
    path = tmp_path / "user.py"
    path.write_text(USER)
    return path


@pytest.mark.parametrize("value", ["5", "0", "-1", "abc", "1e12"])
def test_bad_max_positions_is_one_line(main, user_file, value):
    out = main("check", f"{user_file}:gptj_2048", "--max-positions", value)
    assert out.returncode == 2 and "--max-positions" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_the_new_kinds_and_options_cross_to_the_child(main, user_file):
    out = main("check", f"{user_file}:gptj_2048", "--dim", "16", "--max-positions", "2048",
               "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["summary"]["max_positions"] == 2048
    out = main("check", f"{user_file}:t5_transposed", "--kind", "t5")
    assert out.returncode == 1 and "i and j are swapped" in out.stdout
    report = check_target(f"{user_file}:kv_cache_offset", "rope-qk", dim=16)
    assert report.summary["qk_offset"] == 5
