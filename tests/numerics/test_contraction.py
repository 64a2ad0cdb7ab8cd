"""Contraction (A o K) vs expansion (A + B): growth with n, bounds, content matrices."""

import numpy as np
import pytest

from posenc.encodings import derivable_entries
from posenc.errors import PosencError
from posenc.numerics.contraction import couple, load_content, seeded_content
from posenc.numerics.kernels import kernel
from posenc.numerics.spectra import spectrum
from posenc.numerics.bound_table import bound_report

NS = [64, 128, 256, 512, 1024]


def test_alibi_norm_grows_like_its_symbol_while_multiplicative_ratio_stays_below_one():
    norms, sups, ratios_mul, ratios_add = [], [], [], []
    content = seeded_content(max(NS), rank=8, seed=0)
    for n in NS:
        b = kernel("alibi", n, n_heads=8, head=0)
        norms.append(spectrum(b.operator, method="lanczos").sigma_max)
        _, f = b.symbol()
        sups.append(np.abs(f).max())
        assert sups[-1] == pytest.approx(0.5 * n * (n - 1))       # f_n(0) = -s n (n-1)
        a = type(content)(content.x[:n])
        mul = couple(a, kernel("rope", n), "multiplicative")
        add = couple(a, b, "additive")
        ratios_mul.append(mul.ratio)
        ratios_add.append(add.ratio)
        assert mul.ratio <= 1 + 1e-12                             # Schur: max K_ii = 1
        assert norms[-1] <= sups[-1] * (1 + 1e-12)                # Szego, finite section
    slope_b = np.diff(np.log(norms)) / np.diff(np.log(NS))
    slope_f = np.diff(np.log(sups)) / np.diff(np.log(NS))
    # both grow like n^2; the symbol's slope is log(n(n-1)) per log n -> 2 from above
    assert np.all(np.abs(slope_b - slope_f) < 0.02), (slope_b, slope_f)
    assert np.all(np.abs(slope_b - 2) < 0.05)
    r = np.array(norms) / np.array(sups)
    assert np.ptp(r) / r.mean() < 0.03                           # ||B_n|| / sup|f_n| ~ constant
    assert np.all(np.diff(ratios_add) > 0)                       # additive ratio keeps growing
    assert ratios_add[-1] > 100 * ratios_mul[-1]


def test_couple_bounds_hold_for_every_coupling():
    n = 200
    a = seeded_content(n, rank=5, seed=2)
    for spec in ("rope", "mla", "alibi", "relative_bias", "sinusoidal", "paper-rope", "nope"):
        kern = kernel(spec, n)
        c = couple(a, kern, method="dense")
        slack = 1e-9 * max(c.norm_l, c.norm_a)
        assert c.norm_l <= c.bound_norm + slack, spec
        if c.bound_interval is not None:
            assert c.bound_interval[0] - slack <= c.lam_l[0], spec
            assert c.lam_l[1] <= c.bound_interval[1] + slack, spec
        dense_a = a.dense()
        if kern.kind == "rotary":
            assert c.norm_l == pytest.approx(np.linalg.norm(dense_a * kern.dense(), 2), rel=1e-9)


def test_a_supplied_indefinite_content_uses_the_hermitian_form_of_schur():
    n = 40
    rng = np.random.default_rng(3)
    m = rng.standard_normal((n, n))
    a = m + m.T                                                   # indefinite
    c = couple(a, kernel("rope", n), "multiplicative")
    assert "Hermitian" in c.bound_name
    assert c.bound_interval[0] - 1e-9 <= c.lam_l[0] and c.lam_l[1] <= c.bound_interval[1] + 1e-9


def test_seeded_content_rows_do_not_depend_on_n():
    big, small = seeded_content(5000, 4, 7), seeded_content(300, 4, 7)
    assert np.array_equal(big.x[:300], small.x)
    assert abs(np.mean(big.diagonal()) - 1) < 0.05              # E A_ii = 1; sd ~ 0.7/sqrt(5000)
    with pytest.raises(PosencError):
        seeded_content(10, 0, 0)


def test_load_content_rejects_nan_and_bad_shapes(tmp_path):
    good = tmp_path / "a.npy"
    np.save(good, np.eye(4))
    assert np.array_equal(load_content(str(good)), np.eye(4))
    bad = np.eye(4)
    bad[1, 2] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    with pytest.raises(PosencError, match=r"NaN or infinity at \(1, 2\)"):
        load_content(str(tmp_path / "nan.npy"))
    np.save(tmp_path / "rect.npy", np.ones((3, 4)))
    with pytest.raises(PosencError, match="square"):
        load_content(str(tmp_path / "rect.npy"))
    (tmp_path / "junk.npy").write_text("not numpy")
    with pytest.raises(PosencError, match="cannot read"):
        load_content(str(tmp_path / "junk.npy"))
    with pytest.raises(PosencError, match="not found"):
        load_content(str(tmp_path / "missing.npy"))


@pytest.mark.parametrize("name,spec", list(derivable_entries()), ids=[e[0] for e in derivable_entries()])
def test_every_bound_shown_by_posenc_bound_holds(name, spec):
    report = bound_report(spec, [24, 80], head_dim=8, n_heads=4)
    checked = [r for r in report["rows"] if r["holds"] is not None]
    assert checked, name
    assert all(r["holds"] for r in checked), [r for r in checked if not r["holds"]]
    assert {g["n"] for g in report["growth"]} == {24, 80}
    assert "ratio_multiplicative" in report["growth"][0] and "ratio_additive" in report["growth"][0]


def test_report_at_a_lanczos_size_holds_too():
    report = bound_report("alibi:slopes=exp", [700], content=("seeded", 4, 1))
    assert all(r["holds"] for r in report["rows"] if r["holds"] is not None)
    assert any(r["method"].startswith("Lanczos") for r in report["rows"])
