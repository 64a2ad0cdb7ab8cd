"""The PE-span share of the position probe (posenc.empirical.analysis.probe): which directions carry
position.  Constructed residual streams whose positional part lies inside, outside or half inside
the span of the PE table's principal directions, a reference computation, and a trained model."""

import math

import pytest
import torch

from posenc.empirical import preset
from posenc.empirical.training.train import train
from posenc.empirical.analysis.probe import position_probe, span_share, table_basis
from posenc.empirical.training.runs import load_run


def sinusoid_table(T=12, D=16):
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    freq = torch.tensor([1.0, 0.5], dtype=torch.float64)
    t = torch.zeros(T, D, dtype=torch.float64)
    t[:, 0], t[:, 1] = torch.sin(pos * freq[0])[:, 0], torch.cos(pos * freq[0])[:, 0]
    t[:, 2], t[:, 3] = torch.sin(pos * freq[1])[:, 0], torch.cos(pos * freq[1])[:, 0]
    return t  # its centred span lies in dims 0..3


def stream(mean_by_position, B=40, noise=0.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    T, D = mean_by_position.shape
    content = torch.randn(B, 1, D, generator=g, dtype=torch.float64)  # same at every position
    h = mean_by_position[None] + content + noise * torch.randn(B, T, D, generator=g,
                                                               dtype=torch.float64)
    return h, torch.ones(B, T, dtype=torch.bool)


def test_basis_is_orthonormal_and_spans_the_tables_directions():
    t = sinusoid_table()
    basis = table_basis(t, torch.ones(12, dtype=torch.float64), energy=0.999)
    assert basis.shape[1] <= 4
    assert torch.allclose(basis.T @ basis, torch.eye(basis.shape[1], dtype=torch.float64), atol=1e-10)
    assert float(basis[4:].abs().max()) < 1e-10  # nothing outside dims 0..3


def test_basis_ignores_the_tables_constant_part():
    t = sinusoid_table()
    t[:, 5] = 10.0  # the same vector at every position: no positional direction
    basis = table_basis(t, torch.ones(12, dtype=torch.float64))
    assert float(basis[5].abs().max()) < 1e-10
    assert span_share(*stream(t), basis) == pytest.approx(1.0, abs=1e-9)


def test_share_is_one_inside_zero_outside_and_a_half_in_between():
    t = sinusoid_table()
    basis = table_basis(t, torch.ones(12, dtype=torch.float64))
    inside = stream(3.0 * t)                   # the positional part is the PE itself
    outside_dir = torch.zeros(12, 16, dtype=torch.float64)
    outside_dir[:, 10] = torch.arange(12.0)    # position written along a direction not in the span
    outside = stream(outside_dir)
    assert span_share(*inside, basis) == pytest.approx(1.0, abs=1e-9)
    assert span_share(*outside, basis) == pytest.approx(0.0, abs=1e-9)
    inner = t @ basis @ basis.T
    inner_c = inner - inner.mean(0)
    out_c = outside_dir - outside_dir.mean(0)
    scale = math.sqrt(float((inner_c ** 2).sum()) / float((out_c ** 2).sum()))
    both = stream(inner + scale * outside_dir)  # equal positional energy in and out of the span
    assert span_share(*both, basis) == pytest.approx(0.5, abs=1e-9)


def test_share_matches_a_reference_with_padding():
    g = torch.Generator().manual_seed(3)
    h = torch.randn(30, 12, 16, generator=g, dtype=torch.float64)
    valid = torch.rand(30, 12, generator=g) > 0.3
    basis = table_basis(sinusoid_table(), valid.double().sum(0))
    # reference: loops over positions with their real tokens only
    real = [h[valid[:, i], i] for i in range(12)]
    mu = torch.cat(real).mean(0)
    num = den = 0.0
    for r in real:
        if len(r):
            d = r.mean(0) - mu
            num += len(r) * float(((basis.T @ d) ** 2).sum())
            den += len(r) * float((d ** 2).sum())
    assert span_share(h, valid, basis) == pytest.approx(num / den, rel=1e-9)


def test_probe_of_a_trained_model_reports_the_share_per_site(tmp_path):
    cfg = preset("smoke", "distance", "sinusoidal").replace(epochs=1)
    train(cfg, tmp_path / "r")
    run = load_run(tmp_path / "r")
    p = position_probe(run.model, run.data().test, 200)
    assert set(p["pe_span_share"]) == set(p["sites"])
    assert all(0.0 <= v <= 1.0 + 1e-9 for v in p["pe_span_share"].values())
    assert 0 < p["pe_span_chance"] < 1 and p["pe_span_k"] >= 1
    cfg = preset("smoke", "distance", "rope").replace(epochs=1)
    train(cfg, tmp_path / "n")
    assert "pe_span_share" not in position_probe(load_run(tmp_path / "n").model,
                                                 load_run(tmp_path / "n").data().test, 200)
