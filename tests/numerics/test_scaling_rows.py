"""``posenc bound`` on a scaled RoPE: the scaled kernel beside the unscaled one, at each n, with
its spectrum and long-range decay (posenc.numerics.scaling_rows); other reports unchanged."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from posenc import bound
from posenc.encodings import parse_spec
from posenc.numerics.kernels import kernel
from posenc.numerics.scaling_rows import decay_envelope, scaling_table


def test_a_scaled_rope_report_has_the_unscaled_rope_beside_it():
    report = bound("rope:scaling=yarn,factor=4", [64, 256], head_dim=16, reference="none")
    sc = report.scaling
    assert (sc.scaling, sc.original, sc.extended, sc.unscaled) == ("yarn", 4096, 16384, "rope")
    assert [(r.n, r.kernel) for r in sc.rows] == [(64, "scaled"), (64, "unscaled"),
                                                  (256, "scaled"), (256, "unscaled")]
    plain = bound("rope", [64, 256], head_dim=16, reference="none")
    lam = {r.n: r.exact for r in plain.rows_of("lam_max") if r.quantity == "lam_max(K)"}
    scaled_lam = {r.n: r.exact for r in report.rows_of("lam_max") if r.quantity == "lam_max(K)"}
    for r in sc.rows:                       # the same spectra as the main rows of each spec
        want = lam[r.n] if r.kernel == "unscaled" else scaled_lam[r.n]
        assert math.isclose(r.lam_max, want, rel_tol=1e-9)
    # a full rotary head: K(0) = s^2 (YaRN's temperature); unscaled K(0) = 1
    s = 0.1 * math.log(4) + 1
    assert [r.diagonal for r in sc.rows] == pytest.approx([s * s, 1.0] * 2, rel=1e-12)
    assert "scaling" in report.to_dict() and "scaling" not in plain.to_dict()


def test_the_unscaled_json_is_unchanged_and_the_scaled_json_is_strict(main):
    out = main("bound", "rope:scaling=llama3,factor=8,original=64,base=500000", "--n", "32,96",
               "--json", "--head-dim", "16")
    assert out.returncode == 0
    data = json.loads(out.stdout)
    rows = data["scaling"]["rows"]
    assert {r["kernel"] for r in rows} == {"scaled", "unscaled"} and len(rows) == 4
    assert all(0 <= r["far_mean"] <= r["far_max"] <= 1 + 1e-12 for r in rows)
    # an unscaled spec's report has no scaling key (its other keys: the contraction report's)
    assert set(json.loads(main("bound", "rope", "--n", "32", "--json").stdout)) == \
        {"spec", "kernel", "content", "rows", "growth", "content_scales", "per_plane_content"}


@given(f=st.integers(2, 6), d=st.sampled_from([4, 8, 16]), n=st.integers(2, 30))
def test_linear_scaling_is_the_unscaled_kernel_at_positions_over_factor(f, d, n):
    # theta'_m = theta_m / f: K'(f k) = K(k) exactly in the maths; float64 cos of angles <= n
    spec = parse_spec(f"rope:scaling=linear,factor={f}")
    scaled = kernel(spec, f * n, head_dim=d).column
    plain = kernel(spec.unscaled(), n, head_dim=d).column
    np.testing.assert_allclose(scaled[::f], plain, rtol=0, atol=1e-12)


def test_the_kernel_at_131072_is_the_cosine_sum_at_the_scaled_frequencies():
    # n = 131072 through the O(n) column and the FFT matvec: nothing n x n is formed
    spec = parse_spec("rope:scaling=yarn,factor=32,original=4096")
    n, d = 131072, 64
    kern = kernel(spec, n, head_dim=d)
    from posenc.numerics.conventions import rope_attention_factor, rope_frequencies
    theta, s = rope_frequencies(spec, d), rope_attention_factor(spec)
    for k in (0, 1, 4095, 16384, 131071):
        want = 2 * s * s / d * math.fsum(math.cos(t * k) for t in theta)
        assert math.isclose(kern.column[k], want, rel_tol=1e-9, abs_tol=1e-9)
    v = np.random.default_rng(0).standard_normal(n)
    idx = np.array([0, 77, 65536, n - 1])
    direct = [float(np.dot(kern.column[np.abs(i - np.arange(n))], v)) for i in idx]
    np.testing.assert_allclose(kern.matvec(v)[idx], direct, rtol=1e-9, atol=1e-7)
    k, scaled, unscaled = decay_envelope(spec, n, dict(head_dim=d))
    assert k[-1] == n and scaled.shape == unscaled.shape == k.shape


def test_no_scaling_table_without_a_scaled_rope():
    for text in ("rope", "alibi", "hybrid:additive=alibi"):
        assert scaling_table(parse_spec(text), [8], "auto", {}) is None
    assert scaling_table(parse_spec("hybrid:additive=alibi,scaling=ntk,factor=2"), [8], "auto",
                         dict(head_dim=8)).unscaled == "rope"


def test_cli_prints_the_comparison_and_plots_the_decay(main, tmp_path):
    png = tmp_path / "yarn.png"
    out = main("bound", "rope:scaling=yarn,factor=4", "--n", "64,128", "--head-dim", "16",
               "--plot", str(png))
    assert out.returncode == 0, out.stderr
    assert "scaled RoPE beside the unscaled one (rope): yarn scaling, original context 4096, " \
           "extended 16384" in out.stdout
    assert "attention factor s = 1.13863" in out.stdout and png.stat().st_size > 10_000
