"""The packed attention function (posenc.empirical.fast.packed_attention): its backward is the
gradient of its forward (float64 gradcheck), its forward is attention computed example by example in each
example's own frame (a plain loop), and the model takes it exactly where it covers the case."""

import contextlib
import math
from unittest import mock

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from posenc.empirical import fast
from posenc.empirical.config import ModelConfig
from posenc.empirical.fast import attention_sublayer as ar
from posenc.empirical.fast import block_stack as bs
from posenc.empirical.fast import packed_attention as pa
from posenc.empirical.fast.mask import PackedMask
from posenc.empirical.model.transformer import build_model
from posenc.empirical.model.pe.rotary import Rotary

H, D = 2, 4  # heads, head dim


def _batch(lengths, T, interior=False):
    """keep (B, T): real tokens a prefix, or (interior) a padding slot inside each example."""
    keep = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    if interior:
        for b, n in enumerate(lengths):
            if n >= 3:
                keep[b, 1] = False
    return keep


def _rotary(planes):
    thetas = torch.rand(H, planes, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return Rotary(D, thetas)


def _inputs(lengths, T, interior, causal, planes, bias_heads, seed):
    keep = _batch(lengths, T, interior)
    mask = PackedMask.pack(keep, causal, T, torch.float64, torch.device("cpu"),
                           merge=not interior)
    g = torch.Generator().manual_seed(seed)
    N = int(keep.sum())
    qkv = torch.randn(N, 3 * H * D, generator=g, dtype=torch.float64, requires_grad=True)
    # a Toeplitz bias b[h, i - j]: what merged rows may carry (the loop reads it per example)
    diag = torch.randn(bias_heads, 2 * T - 1, generator=g, dtype=torch.float64)
    idx = torch.arange(T)[:, None] - torch.arange(T)[None, :] + T - 1
    bias = diag[:, idx].requires_grad_(True) if bias_heads else None
    w = _rotary(planes).phasors(T, 0, torch.float64) if planes else None
    if mask.merged:
        masks = [mask.blocks[:, None]]
    else:
        masks = [mask.keys[:, None, None, :]]
    if causal:
        masks.append(mask.causal)
    return keep, mask, qkv, bias, w, masks


def _turn(y, c, s, planes):
    y = y.clone()
    a, b = y[:, 0:2 * planes:2].clone(), y[:, 1:2 * planes:2].clone()
    y[:, 0:2 * planes:2], y[:, 1:2 * planes:2] = a * c - b * s, a * s + b * c
    return y


def _loop(keep, qkv, bias, planes, causal):
    """Attention example by example, head by head, on each example's real tokens, in its own
    frame: the rotation and the bias at the example's own positions (0, 1, ...)."""
    out = torch.zeros(qkv.shape[0], H * D, dtype=qkv.dtype)
    rot = _rotary(planes) if planes else None
    n0 = 0
    for b in range(keep.shape[0]):
        pos = keep[b].nonzero().squeeze(1)  # its real positions
        L = len(pos)
        x = qkv[n0:n0 + L].detach().view(L, 3, H, D)
        for h in range(H):
            q, k, v = x[:, 0, h], x[:, 1, h], x[:, 2, h]
            if rot is not None:  # (a, b) -> (a cos - b sin, a sin + b cos) per plane
                ang = pos.double()[:, None] * rot.thetas[h][None, :]
                c, s = ang.cos(), ang.sin()
                q, k = _turn(q, c, s, planes), _turn(k, c, s, planes)
            s_ = q @ k.T / math.sqrt(D)
            if bias is not None:
                s_ = s_ + bias.detach()[h if bias.shape[0] > 1 else 0][pos][:, pos]
            if causal:
                s_ = s_.masked_fill(pos[None, :] > pos[:, None], float("-inf"))
            out[n0:n0 + L, h * D:(h + 1) * D] = torch.softmax(s_, -1) @ v
        n0 += L
    return out


CASES = st.tuples(st.lists(st.integers(1, 9), min_size=1, max_size=5),  # lengths
                  st.booleans(), st.booleans(),  # interior padding, causal
                  st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, H]))  # planes, bias heads


def _drawn(case, seed):
    """The inputs of a drawn case; causal with an interior hole is not drawn (a padding query
    whose keys are all masked: a NaN row the padded path shares; not a case the model runs)."""
    lengths, interior, causal, planes, bias_heads = case
    assume(not (interior and causal))
    T = max(lengths) + 1  # some padding: a packed forward
    return _inputs(lengths, T, interior, causal, planes, bias_heads, seed)


#: rows per chunk of the attention (pa.chunk_rows): None one pass (the default at these sizes),
#: else that many rows per chunk (P recomputed in the backward)
CHUNKS = st.sampled_from([None, 1, 2])


@contextlib.contextmanager
def _chunked(rows, T):
    """pa.CHUNK_ABOVE / CHUNK_SCORES set so that the attention runs ``rows`` rows per chunk
    (None: as is)."""
    if rows is None:
        yield
        return
    with mock.patch.object(pa, "CHUNK_ABOVE", 0), mock.patch.object(pa, "CHUNK_SCORES", rows * H * T * T):
        yield


@settings(max_examples=40, deadline=None)
@given(case=CASES, seed=st.integers(0, 10_000), chunk=CHUNKS)
def test_forward_is_attention_example_by_example(case, seed, chunk):
    keep, mask, qkv, bias, w, masks = _drawn(case, seed)
    with _chunked(chunk, keep.shape[1]):
        got = pa.PackedAttention.apply(qkv, bias, pa.HeadSlots.of(mask.packing, H), w, tuple(masks),
                                       D ** -0.5)
    # float64, O(1) values, sums of <= 9 terms: rounding ~1e-15
    assert torch.allclose(got, _loop(keep, qkv, bias, case[3], case[2]), rtol=0, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(case=CASES, seed=st.integers(0, 10_000), chunk=CHUNKS)
def test_backward_is_the_gradient_of_the_forward(case, seed, chunk):
    keep, mask, qkv, bias, w, masks = _drawn(case, seed)
    slots = pa.HeadSlots.of(mask.packing, H)
    args = (qkv,) if bias is None else (qkv, bias)

    def f(x, b=None):
        return pa.PackedAttention.apply(x, b, slots, w, tuple(masks), D ** -0.5)

    with _chunked(chunk, keep.shape[1]):
        assert torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-8, rtol=1e-6)


def test_chunk_rows():
    """One pass up to CHUNK_ABOVE score elements (the quick preset's rows: at most 16 of 58
    tokens), then chunks of whole rows within CHUNK_SCORES (at least one); the paper code's
    128-token rows at 8 heads: 2 rows a chunk."""
    assert pa.chunk_rows(16, 8, 58) is None and pa.chunk_rows(8, 8, 128) is None
    assert pa.chunk_rows(9, 8, 128) == 2 and pa.chunk_rows(16, 8, 128) == 2
    assert pa.chunk_rows(4, 8, 512) == 1


def _model(pe, **kw):
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, d_model=16, n_heads=2, n_layers=2, d_ff=16, **kw)
    return build_model(cfg, vocab_size=11, n_classes=5, max_len=20)


@pytest.mark.parametrize("pe,kw,taken", [
    ("rope", {}, True), ("rope:heads=1,keep=0.5", {}, True), ("alibi", {}, True),
    ("relative_bias", {}, True), ("sinusoidal", {"causal": True}, True),
    ("nope", {"kv_source": "input"}, True), ("custom:frequencies=0.5;0.1", {}, True),
    ("rope:pairing=half", {}, False), ("xpos", {}, False), ("rope", {"dropout": 0.1}, False),
])
def test_the_model_takes_it_where_it_covers_the_case(monkeypatch, pe, kw, taken):
    calls = []
    for fn in (pa.PackedAttention, ar.AttentionSublayer, bs.BlockStack):  # alone, or inside
        monkeypatch.setattr(fn, "apply", lambda *a, real=fn.apply: calls.append(1) or real(*a))
    m = _model(pe, **kw).train()
    tok = torch.randint(1, 11, (3, 9), generator=torch.Generator().manual_seed(0))
    tok[0, 5:] = 0
    fast.forward(m, tok).sum().backward()
    assert bool(calls) == taken
    m.eval()
    calls.clear()
    fast.forward(m, tok)
    assert bool(calls) == (taken or "dropout" in kw)  # eval: no attention dropout


def test_one_map_build_per_forward_shared_by_layers(monkeypatch):
    built = []
    real = pa.HeadSlots.__init__
    monkeypatch.setattr(pa.HeadSlots, "__init__", lambda s, *a: built.append(1) or real(s, *a))
    m = _model("rope")
    tok = torch.randint(1, 11, (3, 9), generator=torch.Generator().manual_seed(0))
    tok[0, 5:] = 0
    fast.forward(m, tok)
    assert len(built) == 1
