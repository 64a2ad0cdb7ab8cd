"""The MLP sub-layer function (posenc.empirical.fast.mlp_sublayer): its backward is the gradient
of its forward (float64 gradcheck), its forward is the modules' ``h + mlp(ln(h))``, and the fast
path takes it exactly where it covers the case."""

import pytest
import torch
from torch import nn

from posenc.empirical import fast
from posenc.empirical.config import ModelConfig
from posenc.empirical.fast import block_stack as bs
from posenc.empirical.fast import mlp_sublayer as mr
from posenc.empirical.model.transformer import build_model


def _modules(act, dtype=torch.float64, inner_dropout=None):
    torch.manual_seed(0)
    ln = nn.LayerNorm(6).to(dtype)
    inner = [inner_dropout] if inner_dropout is not None else []
    mlp = nn.Sequential(nn.Linear(6, 10), act, *inner, nn.Linear(10, 6)).to(dtype)
    with torch.no_grad():
        for p in [*ln.parameters(), *mlp.parameters()]:
            p.normal_(0.0, 0.7)  # LayerNorm weights away from (1, 0): their gradients matter
    return ln, mlp


@pytest.mark.parametrize("act", [nn.GELU(), nn.ReLU()], ids=["gelu", "relu"])
def test_backward_is_the_gradient_of_the_forward(act):
    ln, mlp = _modules(act)
    h = torch.randn(7, 6, dtype=torch.float64, requires_grad=True)
    params = [ln.weight, ln.bias, mlp[0].weight, mlp[0].bias, mlp[2].weight, mlp[2].bias]

    def f(h, g, b, w1, b1, w2, b2):
        return mr.MLPSublayer.apply(h, g, b, w1, b1, w2, b2, ln.eps, isinstance(act, nn.GELU))

    assert torch.autograd.gradcheck(f, (h, *params), eps=1e-6, atol=1e-8, rtol=1e-6)


@pytest.mark.parametrize("act", [nn.GELU(), nn.ReLU()], ids=["gelu", "relu"])
def test_forward_and_gradients_are_the_modules(act):
    ln, mlp = _modules(act, torch.float32)
    h = torch.randn(40, 6, requires_grad=True)
    got = mr.mlp_sublayer(h, ln, mlp)
    want = h + mlp(ln(h))
    # float32, O(1) values, sums of <= 10 products: the same kernels, ~1e-7 relative
    assert torch.allclose(got, want, rtol=0, atol=1e-6)
    params = [h, *ln.parameters(), *mlp.parameters()]
    g = torch.randn_like(want)
    for a, b in zip(torch.autograd.grad(got, params, g), torch.autograd.grad(want, params, g)):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-5)


def test_what_it_covers():
    ln, mlp = _modules(nn.GELU(), torch.float32)
    assert mr.supports(ln, mlp, False, torch.float32)
    assert not mr.supports(ln, mlp, True, torch.float32)  # an active dropout after it
    assert not mr.supports(ln, mlp, False, torch.bfloat16)
    assert not mr.supports(ln, _modules(nn.GELU(approximate="tanh"))[1], False, torch.float32)
    assert not mr.supports(ln, _modules(nn.SiLU())[1], False, torch.float32)
    drop = _modules(nn.GELU(), torch.float32, inner_dropout=nn.Dropout(0.1))[1]
    assert not mr.supports(ln, drop.train(), False, torch.float32)
    assert mr.supports(ln, drop.eval(), False, torch.float32)  # off in eval: skipped


@pytest.mark.parametrize("kw,taken", [({}, True), ({"activation": "relu"}, True),
                                      ({"dropout": 0.1}, False)])
def test_the_model_takes_it_in_a_packed_forward(monkeypatch, kw, taken):
    calls = []  # one per layer: alone (MLPSublayer) or in the block stack
    real = mr.MLPSublayer.apply
    monkeypatch.setattr(mr.MLPSublayer, "apply", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(bs, "mlp_forward", lambda *a, real=bs.mlp_forward: calls.append(1) or real(*a))
    torch.manual_seed(0)
    m = build_model(ModelConfig(pe="rope", d_model=16, n_heads=2, n_layers=2, d_ff=16, **kw),
                    vocab_size=11, n_classes=5, max_len=20).train()
    tok = torch.randint(1, 11, (3, 9), generator=torch.Generator().manual_seed(0))
    tok[0, 5:] = 0  # padding: a packed forward
    fast.forward(m, tok).sum().backward()
    assert len(calls) == (2 if taken else 0)
    calls.clear()
    m(tok)  # the reference forward: the modules
    assert not calls
