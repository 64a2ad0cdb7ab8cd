"""The latent-columns ablation: the latent gate equals zeroed input columns of the up-projections
(property and model), batched == the reference that zeroes weights on a copy, the variants'
spans against a slice loop, the table, the paper code's sizes, and the errors."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc.empirical.analysis.ablation import MODES as ABLATION_MODES
from posenc.empirical.analysis.ablation import ablate
from posenc.empirical.analysis.latent_ablation import (MODE, LatentColumns, latent_columns,
                                                       latent_logits, zeroed_column_logits)
from posenc.empirical.config import apply_overrides, preset
from posenc.empirical.model.mla import LatentAblation
from posenc.empirical.model.transformer import build_model
from posenc.empirical.paper_specs import paper_code_fields
from posenc.encodings import parse_spec
from posenc.errors import PosencError
from random_models import random_data, sharp_model

#: float32 logits of size ~10 through 3 layers of width 24: the gated pass and the reference
#: form the same products (a gated 0 times a weight, or an input times a zeroed weight), so only
#: GEMM blocking can differ (V * B rows against B): 0 measured on this CPU, and 1e-5, as for the
#: head ablation's batched-vs-hook test, for other BLAS blockings
TOL = 1e-5


def _model(pe="mla", **kw):
    return sharp_model(pe, **kw)


def _data(n=60, seed=0):
    return random_data(n, seed)


#: head width 6: default latents 24 (every variant removes 6 of them); q 20 / kv 9 (variant 3
#: removes 2 query dimensions and no key/value one); both 8 (variants 2, 3 remove nothing); the
#: paper code's MLA with a latent of 10
MLAS = ["mla", "mla:q_latent=20,kv_latent=9", "mla:q_latent=8,kv_latent=8",
        "mla:rope=paper_code,q_latent=10,kv_latent=10"]


@given(st.integers(1, 9), st.integers(1, 12), st.integers(1, 80), st.integers(1, 80))
def test_spans_are_mlavis_slices(width, heads, q_latent, kv_latent):
    """Each variant's span is what ``w[:, width*v : width*(v+1)] = 0`` zeroes in a latent of that
    width (a list slice of its column indices); the spans are disjoint and cover
    [0, min(latent, heads * width)); a variant removes something iff width * v < a latent."""
    cols = LatentColumns(width, heads, q_latent, kv_latent)
    for latent in (q_latent, kv_latent):
        seen = []
        for v in range(heads):
            a, b = cols.span(v, latent)
            assert list(range(a, b)) == list(range(latent))[width * v: width * (v + 1)]
            seen += range(a, b)
        assert seen == list(range(min(latent, heads * width)))
    assert cols.active() == [v for v in range(heads) if width * v < max(q_latent, kv_latent)]
    q, kv = cols.gates(range(heads))
    for row, (latent, gate) in enumerate(((q_latent, q), (kv_latent, kv))):
        for v in range(heads):
            a, b = cols.span(v, latent)
            assert [int(x) for x in gate[v]] == [0 if a <= j < b else 1 for j in range(latent)]


@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 12), st.integers(1, 7),
       st.integers(0, 2**31 - 1))
def test_a_gate_on_the_input_is_zeroed_input_columns(variants, batch, latent, out, seed):
    """W (g * c) = (W diag g) c for 0/1 gates g: LatentAblation.gated against the weights with
    the gate's zero columns set to 0 (float64; the products are the same numbers, so the sums
    agree to rounding: 1e-12 on entries of size ~latent)."""
    g = torch.Generator().manual_seed(seed)
    gate = torch.randint(0, 2, (variants, latent), generator=g).double()
    c = torch.randn(batch, 3, latent, generator=g, dtype=torch.float64)
    w = torch.randn(out, latent, generator=g, dtype=torch.float64)
    got = torch.nn.functional.linear(LatentAblation.gated(gate, c), w).view(variants, batch, 3, out)
    for v in range(variants):
        zeroed = w.clone()
        zeroed[:, gate[v] == 0] = 0.0
        assert torch.allclose(got[v], c @ zeroed.T, rtol=0, atol=1e-12)


@pytest.mark.parametrize("pe", MLAS)
@pytest.mark.parametrize("mask_padding", [True, False])
def test_batched_gate_equals_zeroed_weight_columns_on_a_copy(pe, mask_padding):
    model, data = _model(pe, mask_padding=mask_padding), _data(n=24)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    base = model(data.tokens)
    for layer in range(3):
        cols = latent_columns(model, layer)
        got = latent_logits(model, data.tokens, layer)  # (V, N, C)
        want = zeroed_column_logits(model, data.tokens, layer, range(cols.n_variants))
        assert (got - want).abs().max() <= TOL
        for v in range(cols.n_variants):
            if cols.removes(v):  # not vacuous: the variant changes the function
                assert (want[v] - base).abs().max() > 100 * TOL
            else:  # nothing zeroed: the unchanged model, exactly
                assert torch.equal(want[v], base)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # a copy


def test_the_rope_path_reads_the_whole_latent():
    """Only W_uq, W_uk, W_uv read the gated latent: the RoPE parts of q and k are the same in
    every variant and equal the unablated model's; the content parts and v differ."""
    model = _model("mla:q_latent=20,kv_latent=9")
    attn, dh = model.blocks[0].attn, model.blocks[0].attn.head_dim
    x = torch.randn(2, 5, 24)
    q0, k0, v0 = attn.project(x, x, 0)
    q_gate, kv_gate = latent_columns(model, 0).gates(range(4))
    q, k, v = attn.project(x, x, 0, latent=LatentAblation(0, q_gate, kv_gate))
    assert q.shape[0] == k.shape[0] == v.shape[0] == 8
    q, k, v = q.view(4, 2, *q.shape[1:]), k.view(4, 2, *k.shape[1:]), v.view(4, 2, *v.shape[1:])
    for var in range(4):
        assert torch.equal(q[var, ..., dh:], q0[..., dh:]) and torch.equal(k[var, ..., dh:], k0[..., dh:])
        assert not torch.allclose(q[var, ..., :dh], q0[..., :dh])
    assert not torch.allclose(v[0], v0)
    assert torch.equal(v[3], v0)  # variant 3 removes no key/value dimension (kv latent 9)


@pytest.mark.parametrize("pe", MLAS)
def test_batched_table_equals_the_reference_loop(pe):
    model, data = _model(pe), _data()
    fast = ablate(model, data, MODE, batch_size=25)
    slow = ablate(model, data, MODE, batch_size=25, batched=False)  # every variant on a copy
    expanded = ablate(model, data, MODE, batch_size=25, expand=True)
    assert fast.to_dict() == slow.to_dict() == expanded.to_dict()
    assert fast.mode == MODE and fast.baseline_acc == ablate(model, data, "zero").baseline_acc
    cols = latent_columns(model, 0)
    for la in fast.layers:
        assert len(la.head_acc) == 4 and la.mean_distance is None
        for v in range(4):
            if not cols.removes(v):
                assert la.drops[v] == 0.0
    assert any(d != 0 for la in fast.layers for d in la.drops)  # not vacuous


def test_the_table_counts_the_reference_logits():
    """head_acc[v] of a layer is the accuracy of the zeroed copy's argmax, counted here."""
    model, data = _model("mla:q_latent=8,kv_latent=8"), _data()
    table = ablate(model, data, MODE, layers=[1])
    want = zeroed_column_logits(model, data.tokens, 1, range(4)).argmax(-1)  # (V, N)
    assert list(table.layers[0].head_acc) == \
        [int((want[v] == data.labels).sum()) / len(data) for v in range(4)]


def test_non_mla_models_are_refused_with_one_error():
    model, data = _model("rope"), _data(n=4)
    with pytest.raises(PosencError, match="latent-columns ablation zeroes latent dimensions.*'rope'"):
        ablate(model, data, MODE)
    with pytest.raises(PosencError, match="needs an MLA attention layer"):
        model(data.tokens, ablation=LatentAblation(0, torch.ones(1, 6), torch.ones(1, 6)))
    with pytest.raises(PosencError, match="latent gates of shapes"):
        _model()(data.tokens, ablation=LatentAblation(0, torch.ones(2, 5), torch.ones(2, 24)))


@pytest.mark.parametrize("name,active,heads,latent", [
    ("paper", list(range(8)), 16, 128),      # the paper code: heads 8-15 remove nothing
    ("paper-small", list(range(8)), 8, 128),  # 8 x 8 = 64 of 128 latent dimensions reachable
])
def test_the_paper_mla_at_the_presets(name, active, heads, latent):
    spec = parse_spec("paper-mla")
    cfg = apply_overrides(preset(name, pe=spec), paper_code_fields(spec))
    model = build_model(cfg.model, vocab_size=64, n_classes=40, max_len=8)
    cols = latent_columns(model, 0)
    assert (cols.n_variants, cols.q_latent, cols.kv_latent) == (heads, latent, latent)
    assert cols.width == cfg.model.d_model // heads and cols.active() == active


def test_the_verdicts_read_the_modes_table_by_its_name():
    """posenc.verdicts (no torch) names the mode itself: the same string, and a real table in
    both modes read back by mla_deposit_both_ways."""
    from posenc.verdicts import mla_latent
    assert mla_latent.LATENT_COLUMNS == MODE and set(mla_latent.BOTH) <= set(ABLATION_MODES)
    model, data = _model(), _data()
    tables = {m: ablate(model, data, m).to_dict() for m in mla_latent.BOTH}
    res = {"summary": {"task": "distance", "pe": "mla", "seed": 0, "preset": "smoke",
                       "test_acc": tables["zero"]["baseline_acc"], "n_test": len(data),
                       "tags": {"role": "mla"}}, "ablation": tables}
    got = mla_latent.mla_deposit_both_ways([res])[0]
    for m in mla_latent.BOTH:
        best = max(tables[m]["layers"], key=lambda la: (la["largest_drop"], -la["layer"]))
        assert got[m]["index"] == best["deposit_index"] and got[m]["layer"] == best["layer"]
