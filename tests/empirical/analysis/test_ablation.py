"""Batched single-head ablation == one head at a time == a hook-based reference; the deposit
index; attention distances against a loop."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc.empirical.analysis.ablation import (AblationTable, ablate, ablated_logits, deposit_index,
                                       derangement)
from posenc.errors import PosencError
from random_models import random_data, sharp_model


def _model(pe="rope", **kw):
    return sharp_model(pe, **kw)


def _data(n=60, seed=0):
    return random_data(n, seed)


@pytest.mark.parametrize("mode", ["zero", "mean", "resample"])
@pytest.mark.parametrize("pe,kw", [("rope", {}), ("alibi", {"kv_source": "input"}),
                                   ("mla", {"mask_padding": False})])
def test_batched_ablation_equals_one_by_one(mode, pe, kw):
    model, data = _model(pe, **kw), _data()
    fast = ablate(model, data, mode, batch_size=25)
    slow = ablate(model, data, mode, batch_size=25, batched=False)
    expanded = ablate(model, data, mode, batch_size=25, expand=True)  # the accelerator layout
    assert fast.to_dict() == slow.to_dict() == expanded.to_dict()  # accuracies, drops, indices
    assert any(d != 0 for la in fast.layers for d in la.drops)  # the test is not vacuous


@pytest.mark.parametrize("layer", [0, 2])
def test_batched_logits_equal_hook_reference(layer):
    """The gate at hook_z equals zeroing the head with an ordinary hook, run per head."""
    model, data = _model(), _data()
    got = ablated_logits(model, data.tokens, layer)  # (H, N, C)
    for h in range(4):
        def zero(z, hook, h=h):
            z = z.clone()
            z[:, :, h] = 0  # hook_z: (batch, pos, head, d_head)
            return z
        with torch.no_grad():
            want = model.run_with_hooks(data.tokens, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", zero)])
        # float32; the batched pass multiplies by a 0/1 gate, which is exact -> only GEMM
        # blocking differs (batch size H*N vs N): 1e-5 on logits of size ~10.
        assert torch.allclose(got[h], want, atol=1e-5)


def test_resample_takes_the_head_output_of_another_example():
    model, data = _model(), _data(n=8)
    perm = derangement(8, seed=0)
    _, cache = model.run_with_cache(data.tokens[perm], names_filter="blocks.1.attn.hook_z")
    src = cache["blocks.1.attn.hook_z"]
    got = ablated_logits(model, data.tokens, 1, src)
    for h in range(4):
        def swap(z, hook, h=h):
            z = z.clone()
            z[:, :, h] = src[:, :, h]
            return z
        with torch.no_grad():
            want = model.run_with_hooks(data.tokens, fwd_hooks=[("blocks.1.attn.hook_z", swap)])
        assert torch.allclose(got[h], want, atol=1e-5)


@given(st.integers(2, 500), st.integers(0, 10 ** 6))
def test_derangement_has_no_fixed_point(n, seed):
    p = derangement(n, seed)
    assert sorted(p.tolist()) == list(range(n)) and not torch.any(p == torch.arange(n))


drops = st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=16)


@given(drops)
def test_deposit_index_range_and_head(d):
    index, head, gap = deposit_index(d)
    assert 0 <= index <= 1 and gap >= 0
    assert d[head] == max(d)
    if max(d) > 0:
        assert index >= 1 / len(d) - 1e-12
    else:
        assert index == 0


@given(drops, st.floats(0.01, 100), st.permutations(range(16)))
def test_deposit_index_is_scale_and_order_invariant(d, c, perm):
    perm = [p for p in perm if p < len(d)]
    i1 = deposit_index(d)[0]
    assert deposit_index([c * x for x in d])[0] == pytest.approx(i1, rel=1e-9, abs=1e-12)
    assert deposit_index([d[p] for p in perm])[0] == pytest.approx(i1, rel=1e-12, abs=1e-15)


def test_deposit_index_extremes():
    assert deposit_index([0.6, 0.0, -0.01, 0.0]) == (1.0, 0, 0.6)
    assert deposit_index([0.1, 0.1, 0.1, 0.1])[0] == pytest.approx(0.25)
    index, head, gap = deposit_index([0.0, 0.3, 0.1])
    assert (index, head, gap) == (pytest.approx(0.75), 1, pytest.approx(0.2))


def test_attention_distance_matches_a_loop():
    model, data = _model(), _data(n=6)
    table = ablate(model, data, "zero")
    _, cache = model.run_with_cache(data.tokens, names_filter=lambda n: n.endswith("hook_pattern"))
    for la in table.layers:
        pat = cache[f"blocks.{la.layer}.attn.hook_pattern"].double()
        for h in range(4):
            tot, cnt = 0.0, 0
            for b in range(6):
                for i in range(9):
                    if data.tokens[b, i] == 0:
                        continue
                    tot += sum(float(pat[b, h, i, j]) * abs(i - j) for j in range(9))
                    cnt += 1
            assert la.mean_distance[h] == pytest.approx(tot / cnt, rel=1e-9)


def test_table_round_trips_through_json(tmp_path):
    table = ablate(_model(), _data(), "zero", layers=[1])
    table.save(tmp_path / "t.json")
    import json
    back = AblationTable.from_dict(json.loads((tmp_path / "t.json").read_text()))
    assert back == table and back.deposit().layer == 1


def test_bad_ablation_input():
    with pytest.raises(PosencError, match="unknown ablation mode"):
        ablate(_model(), _data(), "shuffle")
    with pytest.raises(PosencError, match="layers"):
        ablate(_model(), _data(), layers=[5])
