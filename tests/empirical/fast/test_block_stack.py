"""BlockStack (posenc.empirical.fast.block_stack): every block of a packed forward in one autograd
function -- bit for bit what the per-sub-layer functions compute, forward and backward;
torch.autograd.gradcheck of its backward in float64; and when the model takes it."""

import pytest
import torch

from posenc.empirical import fast
from posenc.empirical.config import ModelConfig
from posenc.empirical.fast import block_stack as bs
from posenc.empirical.fast import packed as fast_packed
from posenc.empirical.fast.mask import PackedMask
from posenc.empirical.model.transformer import build_model

CASES = [("rope", {}), ("alibi", {"causal": True}), ("relative_bias", {}), ("sinusoidal", {}),
         ("rope:heads=1,keep=0.5", {"activation": "relu"}), ("nope", {})]


def _model(pe, dtype=torch.float32, **kw):
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, d_model=16, n_heads=2, n_layers=3, d_ff=24, **kw)
    return build_model(cfg, vocab_size=11, n_classes=5, max_len=20).to(dtype).train()


def _tokens():
    tok = torch.randint(1, 11, (4, 9), generator=torch.Generator().manual_seed(1))
    tok[0, 5:] = 0
    tok[2, 2:] = 0  # padding: a packed forward with merged rows
    return tok


def _run(m, tok):
    m.zero_grad(set_to_none=True)
    out = fast.forward(m, tok)
    out.square().sum().backward()
    return out, {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("pe,kw", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_stack_is_the_per_sublayer_functions_bit_for_bit(monkeypatch, pe, kw, dtype):
    m, tok = _model(pe, dtype, **kw), _tokens()
    calls = []
    real = bs.BlockStack.apply
    monkeypatch.setattr(bs.BlockStack, "apply", lambda *a: calls.append(1) or real(*a))
    got, ggot = _run(m, tok)
    assert calls == [1]  # one function for all three blocks
    monkeypatch.setattr(fast_packed, "stacked", lambda blocks, dtype: False)
    want, gwant = _run(m, tok)  # each block's AttentionSublayer and MLPSublayer
    assert calls == [1]
    assert torch.equal(got, want)
    assert ggot.keys() == gwant.keys() and len(ggot) == len(list(m.parameters()))
    assert all(torch.equal(ggot[n], gwant[n]) for n in gwant)


@pytest.mark.parametrize("pe,kw", [("rope", {}), ("relative_bias", {"causal": True}),
                                   ("alibi", {"activation": "relu"})])
def test_gradcheck_of_the_stack(pe, kw):
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, d_model=4, n_heads=2, n_layers=2, d_ff=6, **kw)
    m = build_model(cfg, vocab_size=11, n_classes=5, max_len=10).double()
    for block in m.blocks:  # a Q/K/V bias too (the paper code's; its models take other paths)
        block.attn.qkv.bias = torch.nn.Parameter(torch.randn(12, dtype=torch.float64))
    keep = torch.tensor([[True] * 5 + [False], [True, True, False, False, False, False],
                         [True] * 6])
    mask = PackedMask.pack(keep, cfg.causal, 6, torch.float64, torch.device("cpu"),
                           merge=True)
    assert mask.packing is not None
    plans, tensors = bs.stack_inputs(m.blocks, mask, 0, torch.float64)
    present = [i for i, t in enumerate(tensors) if t is not None]
    leaves = [tensors[i].detach().clone().requires_grad_(True) for i in present]
    assert tensors[3] is not None  # b_qkv
    if pe == "relative_bias":
        assert tensors[6] is not None  # a learned bias is an input of the function
    h = torch.randn(mask.packing.n_tokens, 4, dtype=torch.float64, requires_grad=True)

    def f(h, *xs):
        full = [None] * len(tensors)
        for i, x in zip(present, xs):
            full[i] = x
        return bs.BlockStack.apply(h, plans, *full)

    assert torch.autograd.gradcheck(f, (h, *leaves), atol=1e-6)


@pytest.mark.parametrize("pe,kw", [("xpos", {}), ("mla", {}), ("rope", {"dropout": 0.1}),
                                   ("nope", {"kv_source": "input"})])
def test_the_model_takes_it_only_when_every_block_is_covered(monkeypatch, pe, kw):
    calls = []
    real = bs.BlockStack.apply
    monkeypatch.setattr(bs.BlockStack, "apply", lambda *a: calls.append(1) or real(*a))
    m = _model(pe, **kw)
    fast.forward(m, _tokens()).sum().backward()
    assert not calls
    if "dropout" in kw:
        m.eval()  # no dropout in eval: the stack
        fast.forward(m, _tokens())
        assert calls == [1]


def test_a_second_derivative_is_refused_not_wrong():
    """The backwards are hand-written from saved intermediates (no graph of their own): a
    second derivative through them would be silently wrong, so it raises instead."""
    m, tok = _model("rope"), _tokens()
    params = list(m.parameters())
    grads = torch.autograd.grad(fast.forward(m, tok).square().sum(), params,
                                create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        sum(g.square().sum() for g in grads if g.requires_grad).backward()
