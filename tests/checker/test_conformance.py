"""``posenc check``'s conformance checker: the shipped examples, generated RoPE/ALiBi variants
(reference loops written here, independently of the checker), and mutations that must be caught."""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from posenc.errors import PosencError
from posenc.checker import check_impl
from posenc.checker.loading import Caller
from posenc.checker.bias import check_bias
from posenc.checker.rope import classify_pairing
from posenc.checker import check_rope

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def status(report):
    return {p.name: p.status for p in report.properties}


@pytest.mark.parametrize("impl, kind, pairing", [
    ("rope_interleaved.py:rope", "rope", "interleaved"),
    ("rope_half.py:rope", "rope", "half"),
    ("alibi.py:alibi", "bias", None),
    ("alibi.py:alibi_causal", "bias", None),
])
def test_correct_examples_conform(impl, kind, pairing):
    report = check_impl(str(EXAMPLES / impl))
    assert report.kind == kind
    assert report.ok, report.text()
    if kind == "rope":
        assert report.summary["pairing"] == pairing
        assert report.summary["base"] == 10000.0
    else:
        assert report.summary["schedule"] == "press"


def test_half_split_torch_example_reports_float32_tables():
    report = check_impl(str(EXAMPLES / "rope_half.py:rope"))
    assert report.mode == "torch"
    drift = report.summary["drift"]["1000000"]
    # float32 cos/sin tables: the float64 path is off by far more than float64 rounding allows
    assert drift["float64_error"] > drift["float64_bound"]
    assert drift["float32_error"] <= drift["float32_bound"]


def test_buggy_rope_is_flagged_with_minimal_counterexamples():
    report = check_impl(str(EXAMPLES / "rope_buggy.py:rope"))
    st_ = status(report)
    assert not report.ok
    assert st_["norm preservation"] == "fail" and st_["shift invariance"] == "fail"
    props = {p.name: p for p in report.properties}
    # smallest offending input: e_0 at position 1 (position 0 is the identity)
    assert "x = e_0, position 1" in props["norm preservation"].counterexample
    assert "⟨f(q,0), f(k,0)⟩" in props["shift invariance"].counterexample


def test_off_by_one_alibi_is_flagged():
    report = check_impl(str(EXAMPLES / "alibi_off_by_one.py:alibi"))
    props = {p.name: p for p in report.properties}
    assert not report.ok
    assert props["Toeplitz"].status == "pass"
    assert props["slope schedule"].status == "fail"
    assert "off-by-one" in props["slope schedule"].detail
    assert props["slope schedule"].counterexample.startswith("n_heads=1, head 0")


# --- generated implementations: a plain loop, one plane at a time ------------------------------

def loop_rope(base, pairing, r, sign=1.0, bad_plane=None):
    """RoPE by an explicit loop over planes (the reference, independent of the checker)."""
    def f(x, positions):
        x = np.asarray(x, dtype=np.float64)
        out = x.copy()
        for m in range(r // 2):
            theta = sign * base ** (-2.0 * m / r)
            if m == bad_plane:
                theta *= 1.5                                   # a wrong frequency
            a, b = (2 * m, 2 * m + 1) if pairing == "interleaved" else (m, m + r // 2)
            for s, p in enumerate(positions):
                c, sn = math.cos(p * theta), math.sin(p * theta)
                out[..., s, a] = x[..., s, a] * c - x[..., s, b] * sn
                out[..., s, b] = x[..., s, a] * sn + x[..., s, b] * c
        return out
    return f


rope_params = st.fixed_dictionaries({
    "base": st.sampled_from([100.0, 500.0, 10000.0, 500000.0]),
    "pairing": st.sampled_from(["interleaved", "half"]),
    "dim": st.sampled_from([4, 8, 12]),
    "rot": st.sampled_from([1.0, 0.5]),
})


def _rotary(params):
    r = int(params["dim"] * params["rot"]) // 2 * 2
    return max(r, 2)


@settings(max_examples=10, deadline=None)
@given(rope_params)
def test_generated_rope_conforms_and_is_recovered(params):
    r = _rotary(params)
    fn = loop_rope(params["base"], params["pairing"], r)
    report = check_rope(Caller(fn, "loop"), "loop", params["dim"])
    assert report.ok, report.text()
    assert report.summary["rotary_dims"] == r
    if r > 2:      # with one plane theta_0 = 1 for every base: the base is not identifiable
        assert report.summary["base"] == pytest.approx(params["base"], rel=1e-9)
        assert report.summary["pairing"] == params["pairing"] or r == 2


@settings(max_examples=8, deadline=None)
@given(rope_params, st.data())
def test_wrong_frequency_or_direction_is_caught(params, data):
    # with two planes any theta_1 in (0, 1) is base^(-1) for some base: a wrong frequency needs
    # three planes to be detectable
    r = max(_rotary(params), 6)
    params = {**params, "dim": max(params["dim"], r)}
    bad = data.draw(st.integers(1, r // 2 - 1))
    fn = loop_rope(params["base"], params["pairing"], r, bad_plane=bad)
    report = check_rope(Caller(fn, "loop"), "loop", params["dim"])
    assert status(report)["frequencies"] == "fail", report.text()
    flipped = check_rope(Caller(loop_rope(params["base"], params["pairing"], r, sign=-1.0),
                                "loop"), "loop", params["dim"])
    assert status(flipped)["frequencies"] == "fail"
    assert "other way" in next(p.detail for p in flipped.properties if p.name == "frequencies")


def test_absolute_position_bug_breaks_shift_invariance_only_where_it_starts():
    good = loop_rope(10000.0, "interleaved", 8)

    def leaky(x, positions):
        out = good(x, positions)
        return np.where(np.asarray(positions)[:, None] >= 5, out * 1.0, out) + 0.0 * out

    def shifted(x, positions):      # uses position + 1 only from position 5 on
        pos = np.asarray(positions)
        return good(x, np.where(pos >= 5, pos + 1, pos))

    assert check_rope(Caller(leaky, "l"), "l", 8).ok
    report = check_rope(Caller(shifted, "s"), "s", 8)
    cex = next(p for p in report.properties if p.name == "shift invariance").counterexample
    # minimal pair: (4, 4) vs (5, 5) is fine (equal norms), the first change of i - j is (0, 4)->(1, 5)
    assert cex is not None and "f(k,4)" in cex and "f(k,5)" in cex


def test_classify_pairing():
    assert classify_pairing([(0, 1), (2, 3)]) == ("interleaved", 4)
    assert classify_pairing([(0, 2), (1, 3)]) == ("half", 4)
    assert classify_pairing([(0, 3), (1, 2)]) == (None, 0)


# --- biases -----------------------------------------------------------------------------------

def loop_alibi(schedule, causal=False, offset=0):
    def slopes(H):
        if schedule == "exp":
            return [math.exp(-(h + offset) / H) for h in range(1, H + 1)]
        p = 1 << (H.bit_length() - 1)
        pw = lambda q: [2.0 ** (-8.0 * (h + offset) / q) for h in range(1, q + 1)]  # noqa: E731
        return pw(p) if p == H else pw(p) + pw(2 * p)[0::2][: H - p]

    def g(H, n):
        s = slopes(H)
        B = np.zeros((H, n, n))
        for h in range(H):
            for i in range(n):
                for j in range(n):
                    if causal:
                        B[h, i, j] = -s[h] * (i - j) if j <= i else 0.0
                    else:
                        B[h, i, j] = -s[h] * abs(i - j)
        return B
    return g


@pytest.mark.parametrize("schedule", ["press", "exp"])
@pytest.mark.parametrize("causal", [False, True])
def test_generated_alibi(schedule, causal):
    report = check_bias(Caller(loop_alibi(schedule, causal), "g"), "g")
    assert report.ok, report.text()
    assert report.summary["schedule"] == schedule
    assert report.summary["direction"] == ("causal" if causal else "symmetric")
    bad = check_bias(Caller(loop_alibi(schedule, causal, offset=-1), "g"), "g")
    assert status(bad)["slope schedule"] == "fail"


def test_non_toeplitz_bias_fails_with_smallest_pair():
    def g(H, n):
        B = loop_alibi("press")(H, n)
        if n > 2:
            B[:, 2, 2] = 1.0        # absolute position 2 singled out
        return B
    report = check_bias(Caller(g, "g"), "g")
    prop = next(p for p in report.properties if p.name == "Toeplitz")
    assert prop.status == "fail"
    assert prop.counterexample.startswith("n_heads=1, head 0: B[1,1]")


def test_t5_like_bias_is_not_failed_for_asymmetry():
    def g(H, n):
        k = np.arange(n)[:, None] - np.arange(n)[None, :]
        vals = np.where(k > 0, -np.log1p(np.abs(k)), -2 * np.log1p(np.abs(k)))
        return np.broadcast_to(vals, (H, n, n)).copy()
    report = check_bias(Caller(g, "g"), "g")
    assert report.ok, report.text()
    assert status(report)["slope schedule"] == "n/a"


def test_numpy_function_is_fed_numpy_and_torch_function_torch():
    assert check_impl(str(EXAMPLES / "rope_interleaved.py:rope")).mode == "numpy"
    assert check_impl(str(EXAMPLES / "rope_half.py:rope")).mode == "torch"


def test_wrong_kind_is_bad_input():
    with pytest.raises(PosencError):
        check_impl(str(EXAMPLES / "alibi.py:alibi"), kind="rope")


def test_an_expect_of_another_kind_names_the_kind_mismatch():
    """--expect slopes=press made posenc call a correct rotary function as a bias g(n_heads, n)
    and blame it ("raised AttributeError"); the message now leads with the mismatch."""
    import numpy as np

    from posenc.errors import PosencError
    from posenc.checker import check_callable

    def rope(x, pos):
        theta = 10000.0 ** (-np.arange(0, x.shape[-1], 2) / x.shape[-1])
        cos, sin = np.cos(pos[:, None] * theta), np.sin(pos[:, None] * theta)
        a, b = x[..., 0::2], x[..., 1::2]
        return np.stack([a * cos - b * sin, a * sin + b * cos], axis=-1).reshape(x.shape)
    with pytest.raises(PosencError, match=r"^--expect slopes describes a bias function "
                                          r"g\(n_heads, n\), and .* failed when called as one"):
        check_callable(rope, expect="slopes=press")
    assert check_callable(rope, expect="base=10000,pairing=interleaved").ok
