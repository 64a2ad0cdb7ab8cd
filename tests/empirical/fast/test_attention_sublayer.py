"""The attention sub-layer function (posenc.empirical.fast.attention_sublayer): its backward is the
gradient of its forward (float64 gradcheck, every input: LayerNorm, projections with and without
a Q/K/V bias, a learned PE bias), its forward is ``h + attn(ln(h))`` of the modules op by op, and
the model's blocks take it exactly where it covers the case."""

import pytest
import torch
from torch import nn

from posenc.empirical import fast
from posenc.empirical.model.attention import Attention
from posenc.empirical.config import ModelConfig
from posenc.empirical.fast import attention_sublayer as ar
from posenc.empirical.fast import block_stack as bs
from posenc.empirical.fast.mask import PackedMask
from posenc.empirical.fast.packed_attention import HeadSlots, layer_inputs
from posenc.empirical.model.transformer import build_model
from posenc.empirical.model.pe.bias import T5Bias
from posenc.empirical.model.pe.rotary import Rotary

D, H, T = 8, 2, 6


def _setup(rotary, learned_bias, qkv_bias, causal, dtype=torch.float64):
    torch.manual_seed(0)
    rot = Rotary(D // H, torch.rand(H, 1, dtype=torch.float64)) if rotary else None
    bias = T5Bias(H, num_buckets=4, max_distance=8) if learned_bias else None
    attn = Attention(D, H, rotary=rot, bias=bias, qkv_bias=qkv_bias).to(dtype)
    ln = nn.LayerNorm(D).to(dtype)
    with torch.no_grad():
        for p in [*attn.parameters(), *ln.parameters()]:
            p.normal_(0.0, 0.7)
    keep = torch.arange(T)[None, :] < torch.tensor([[6], [2], [3]])  # rows [6], [3, 2, free]
    mask = PackedMask.pack(keep, causal, T, dtype, torch.device("cpu"), merge=True)
    h = torch.randn(int(keep.sum()), D, dtype=dtype, requires_grad=True)
    return attn, ln, mask, h


CASES = [(r, b, q, c) for r in (False, True) for b in (False, True) for q in (False, True)
         for c in (False, True)]


@pytest.mark.parametrize("rotary,learned_bias,qkv_bias,causal", CASES)
def test_backward_is_the_gradient_of_the_forward(rotary, learned_bias, qkv_bias, causal):
    attn, ln, mask, h = _setup(rotary, learned_bias, qkv_bias, causal)
    slots = HeadSlots.of(mask.packing, H)
    w = None if attn.rotary is None else attn.rotary.phasors(T, 0, h.dtype)
    masks = layer_inputs(attn, mask, 0, h.dtype)[3]  # the block mask (and causal)
    bias = attn.positional_bias(T, 0, h.dtype)
    if bias is not None:
        bias = bias.detach().requires_grad_(True)  # the (H, T, T) bias itself an input
    inputs = [h, ln.weight, ln.bias, attn.qkv.weight,
              attn.qkv.bias if qkv_bias else None, attn.out.weight, attn.out.bias, bias]
    mask_of = [x is not None for x in inputs]

    def f(*given):
        it = iter(given)
        args = [next(it) if m else None for m in mask_of]
        return ar.AttentionSublayer.apply(*args, slots, w, masks, (D // H) ** -0.5,
                                          ln.eps)

    assert torch.autograd.gradcheck(f, [x for x in inputs if x is not None], eps=1e-6, atol=1e-8,
                                    rtol=1e-6)


@pytest.mark.parametrize("rotary,learned_bias,qkv_bias,causal", CASES)
def test_forward_and_gradients_are_the_modules(rotary, learned_bias, qkv_bias, causal):
    attn, ln, mask, h = _setup(rotary, learned_bias, qkv_bias, causal, torch.float32)
    got = ar.attention_sublayer(h, ln, attn, mask, 0)
    rows = mask.packing.unpack(ln(h))  # the modules op by op on the rows (LayerNorm, Linear,
    # the reference attention with the rows' whole additive mask, Linear)
    want = h + mask.packing.pack(attn(rows, rows, mask.additive(None), 0))
    # float32, O(1) values, sums of <= 8 terms: the same kernels in another order, ~1e-7 relative
    assert torch.allclose(got, want, rtol=0, atol=1e-5)
    params = [h, *ln.parameters(), *attn.parameters()]
    g = torch.randn_like(want)
    for x, y in zip(torch.autograd.grad(got, params, g, allow_unused=True),
                    torch.autograd.grad(want, params, g, allow_unused=True)):
        assert (x is None) == (y is None)
        if x is not None:
            assert torch.allclose(x, y, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pe,kw,taken", [
    ("rope", {}, True), ("alibi", {"causal": True}, True), ("relative_bias", {}, True),
    ("nope", {"kv_source": "input"}, False), ("xpos", {}, False), ("mla", {}, False),
    ("rope", {"dropout": 0.1}, False),
])
def test_the_blocks_take_it_where_it_covers_the_case(monkeypatch, pe, kw, taken):
    calls = []  # one per layer: alone (AttentionSublayer) or in the block stack
    real = ar.AttentionSublayer.apply
    monkeypatch.setattr(ar.AttentionSublayer, "apply", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(bs, "attention_forward",
                        lambda *a, real=bs.attention_forward: calls.append(1) or real(*a))
    torch.manual_seed(0)
    m = build_model(ModelConfig(pe=pe, d_model=16, n_heads=2, n_layers=2, d_ff=16, **kw),
                    vocab_size=11, n_classes=11, max_len=20).train()
    tok = torch.randint(1, 11, (3, 9), generator=torch.Generator().manual_seed(0))
    tok[0, 5:] = 0  # padding: a packed forward
    fast.forward(m, tok).sum().backward()
    assert len(calls) == (2 if taken else 0)


def test_free_slots_read_zeros_whatever_memory_they_get(monkeypatch):
    """The gather sources are allocated uninitialised: the GEMM writes their token rows and the
    zero block is zeroed.  With NaN-filled allocations the result must not change (a NaN at a free
    slot reaches real gradients through 0 * NaN in the softmax backward)."""
    attn, ln, mask, h = _setup(True, True, False, False, torch.float32)

    def run():
        y = ar.attention_sublayer(h, ln, attn, mask, 0)
        return y, torch.autograd.grad(y.square().sum(), [h, *attn.parameters()])

    want, gwant = run()
    real = torch.Tensor.new_empty
    monkeypatch.setattr(torch.Tensor, "new_empty",
                        lambda self, *a, **k: real(self, *a, **k).fill_(float("nan")))
    got, ggot = run()
    assert torch.equal(got, want)
    assert all(torch.equal(a, b) for a, b in zip(ggot, gwant))
