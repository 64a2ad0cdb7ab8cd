"""The report's spectral section (markdown) from the numeric layer's spectral table: like for
like -- the content's norm, the additive ratio at other content scales, and RoPE's per-plane
logit beside the plane-averaged Hadamard ratio, with the caveat in words."""

from __future__ import annotations

import types

import pytest

from posenc.report.markdown import _spectra
from posenc.report.theory_tables import spectral_table


@pytest.fixture(scope="module")
def table():
    return spectral_table()


def test_spectral_table_is_the_bound_reports_growth(table):
    from posenc.numerics.bound_table import bound_report
    alibi = bound_report("alibi", [64])["growth"][0]
    row = table[0]
    assert row["n"] == 64 and row["content_norm"] == alibi["content_norm"]
    assert row["ratio_additive_scaled"] == alibi["ratio_additive_scaled"]
    assert row["ratio_additive_balanced"] == alibi["ratio_additive_balanced"]
    assert row["ratio_per_plane"] == bound_report("rope", [64])["growth"][0]["ratio_per_plane"]
    assert all(r["ratio_multiplicative"] <= 1 for r in table)


def test_section_states_the_scale_and_the_caveat(table):
    lines = _spectra(types.SimpleNamespace(spectra=table))
    text = "\n".join(lines)
    assert "same at every content scale" in text and "ONE content matrix shared" in text
    head = [c.strip() for c in lines[-len(table) - 2].strip("|").split("|")]
    assert head[1] == "‖A‖₂" and "additive, c = 100" in head and "additive, c = 10000" in head
    assert head[-2].startswith("multiplicative") and head[-1].startswith("RoPE per-plane")
    for r, line in zip(table, lines[-len(table):]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == len(head)
        assert cells[0] == str(r["n"]) and cells[1] == f"{r['content_norm']:.4g}"
        assert cells[5] == f"{r['ratio_additive_scaled']['100']:.4g}"
        pp = r["ratio_per_plane"]
        assert cells[-1] == f"{pp['mean']:.4g} [{pp['min']:.4g}, {pp['max']:.4g}]"
