"""Packed forwards (posenc.empirical.fast.packing, through the fast path's door
posenc.empirical.fast.forward): the token-wise parts on the real tokens only, short examples
sharing attention rows, compute what the model's own (reference) forward computes -- logits and
gradients, for every PE family and model switch, on random length patterns -- and the rows are a
valid first-fit packing.  Rows are merged only for PEs that see positions through i - j."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.empirical.config import ModelConfig
from posenc.empirical import fast
from posenc.empirical.fast import packed as fast_packed
from posenc.empirical.fast.mask import PackedMask
from posenc.empirical.model.transformer import build_model
from posenc.empirical.fast.packing import Packing

T = 13
PES = ["rope", "rope:pairing=half,fraction=0.5", "rope:heads=1,keep=0.5", "alibi",
       "relative_bias", "relative_bias:mode=table,max_distance=5", "sinusoidal",
       "learned_absolute", "nope", "hybrid:additive=alibi", "custom:kernel=exp(-abs(k)/4)"]
SWITCHES = [{}, {"causal": True}, {"kv_source": "input"}]
lengths_st = st.lists(st.integers(1, T), min_size=2, max_size=8)


def _model(pe, **kw):
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, d_model=32, n_heads=4, n_layers=2, d_ff=48, **kw)
    m = build_model(cfg, vocab_size=11, n_classes=5, max_len=30)
    with torch.no_grad():  # larger than init, learned biases included: O(1) differences matter
        for p in m.parameters():
            p.normal_(0.0, 0.5)
    return m


def _tokens(lengths, seed=0):
    tok = torch.randint(1, 11, (len(lengths), T), generator=torch.Generator().manual_seed(seed))
    for b, n in enumerate(lengths):
        tok[b, n:] = 0
    return tok


def _grads(model, logits, y):
    return torch.autograd.grad(F.cross_entropy(logits, y), list(model.parameters()),
                               allow_unused=True)


def _assert_same(model, a, b, y):
    # float32, logits O(1-10): summation order and shifted rotation angles, ~1e-7 relative
    assert torch.allclose(a, b, rtol=0, atol=1e-5), (a - b).abs().max()
    for (name, _), ga, gb in zip(model.named_parameters(), _grads(model, a, y), _grads(model, b, y)):
        assert (ga is None) == (gb is None), name
        if ga is not None:
            assert torch.allclose(ga, gb, rtol=1e-4, atol=1e-5), (name, (ga - gb).abs().max())


@pytest.mark.parametrize("kw", SWITCHES, ids=lambda kw: ",".join(kw) or "default")
@pytest.mark.parametrize("pe", PES)
@settings(max_examples=8, deadline=None)
@given(lengths=lengths_st)
def test_packed_forward_equals_the_reference(pe, kw, lengths):
    model, tok = _model(pe, **kw), _tokens(lengths)
    y = torch.arange(len(lengths)) % 5
    _assert_same(model, fast.forward(model, tok, offset=1), model(tok, offset=1), y)


@pytest.mark.parametrize("pe", ["mla", "xpos", "kerple_log", "mla:rope=paper_code"])
@settings(max_examples=8, deadline=None)
@given(lengths=lengths_st)
def test_packed_forward_equals_the_reference_for_the_other_attentions(pe, lengths):
    """The attentions the sub-layer functions do not cover (the modules' own code on packed
    rows): against the reference (itself checked against loops in test_pe / test_parity)."""
    model, tok = _model(pe), _tokens(lengths, seed=1)
    y = torch.arange(len(lengths)) % 5
    _assert_same(model, fast.forward(model, tok), model(tok), y)


@pytest.mark.parametrize("kw", SWITCHES, ids=lambda kw: ",".join(kw) or "default")
@pytest.mark.parametrize("pe", PES)
def test_a_batch_without_padding_runs_packed_and_equals_the_padded_reference(pe, kw):
    """Every token real (the count task): the layouts are reshapes of each other, no mask at all,
    and the sub-layer functions run on them."""
    model, tok = _model(pe, **kw), _tokens([T] * 4)
    mask = PackedMask.pack(tok != 0, False, T, torch.float32, torch.device("cpu"), merge=True)
    assert mask.packing.dense and not mask.packing.merged
    assert mask.keys is None and mask.blocks is None
    x = torch.randn(4, T, 3)
    assert torch.equal(mask.packing.unpack(mask.packing.from_batch(x)), x)
    assert torch.equal(mask.packing.mean(mask.packing.from_batch(x)), x.mean(dim=1))
    y = torch.arange(4) % 5
    _assert_same(model, fast.forward(model, tok, offset=1), model(tok, offset=1), y)


def test_the_cases_above_merge_rows():
    """The length patterns do share rows (else the tests above would not test merging)."""
    keep = _tokens([3, 12, 5, 4, 13, 1]) != 0
    p = Packing(keep, merge=True)
    assert p.merged and p.rows == 3  # 13 | 12 + 1 | 5 + 4 + 3
    assert not Packing(keep, merge=False).merged


def test_a_non_toeplitz_pe_is_never_merged_and_would_be_wrong_merged(monkeypatch):
    """The paper code's MLA mix depends on absolute positions: merging it would shift them."""
    model = _model("mla:rope=paper_code")
    assert not fast.merges_rows(model.spec) and fast.merges_rows(_model("mla").spec)
    tok = _tokens([3, 12, 5, 4, 13, 1])
    right = fast.forward(model, tok)
    assert torch.allclose(right, model(tok), atol=1e-5)
    monkeypatch.setattr(fast_packed, "merges_rows", lambda spec: True)
    assert (fast.forward(model, tok) - right).abs().max() > 1e-3


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, T), min_size=1, max_size=12))
def test_rows_are_a_first_fit_packing(lengths):
    """Each example is one run of consecutive columns of one row, runs do not overlap, and the
    number of rows is first-fit decreasing's (a plain loop)."""
    keep = _tokens(lengths) != 0
    p = Packing(keep, merge=True)
    rows = []  # reference first-fit decreasing: the free columns of each row
    for n in sorted(lengths, reverse=True):
        for r, free in enumerate(rows):
            if free >= n:
                rows[r] -= n
                break
        else:
            rows.append(T - n)
    if not p.merged:
        assert len(rows) == len(lengths) and p.rows == len(lengths)
        return
    assert p.rows == len(rows) < len(lengths)
    slots = p.slots.tolist()
    assert len(set(slots)) == len(slots) == sum(lengths)
    for b in range(len(lengths)):
        mine = [s for s, e in zip(slots, p.example.tolist()) if e == b]
        assert mine == list(range(mine[0], mine[0] + lengths[b])) if mine else lengths[b] == 0
        assert not mine or mine[0] // T == mine[-1] // T  # one row
        for s in mine:
            assert p.segments.view(-1)[s] == b


def test_block_mask_and_mean_against_loops():
    lengths = [3, 12, 5, 4, 13, 1]
    keep = _tokens(lengths) != 0
    p = Packing(keep, merge=True)
    m, seg = p.block_mask(torch.float64), p.segments
    for r in range(p.rows):
        for i in range(T):
            for j in range(T):
                assert m[r, i, j] == (0.0 if seg[r, i] == seg[r, j] else float("-inf"))
    y = torch.randn(p.n_tokens, 4, dtype=torch.float64)
    mean = p.mean(y)
    for b, n in enumerate(lengths):
        assert torch.allclose(mean[b], y[p.example == b].mean(0), atol=1e-12)
    x = torch.randn(p.rows, T, 4, dtype=torch.float64)
    assert torch.equal(p.unpack(p.pack(x)).view(-1, 4)[p.slots], x.view(-1, 4)[p.slots])


@pytest.mark.parametrize("merge", [True, False])
def test_the_constant_score_terms_sum_once_per_forward_and_equal_the_terms_added_one_by_one(merge):
    lengths = [3, 12, 5, 4, 13, 1]
    keep = _tokens(lengths) != 0
    mask = PackedMask.pack(keep, True, T, torch.float64, torch.device("cpu"), merge=merge)
    assert mask.merged == merge
    bias = torch.randn(2, T, T, dtype=torch.float64)
    total = mask.packed_constant(bias)
    assert mask.packed_constant(bias) is total  # once per forward: the layers share it
    rows = mask.packing.rows
    s = torch.randn(rows, 2, T, T, dtype=torch.float64)
    masked = s + (mask.blocks[:, None] if merge else mask.keys[:, None, None, :])
    if not merge:  # a padding query sees its own key
        pad = (mask.keys == float("-inf")).nonzero()
        masked[pad[:, 0], :, pad[:, 1], pad[:, 1]] = s[pad[:, 0], :, pad[:, 1], pad[:, 1]]
    masked += mask.causal
    assert torch.equal(s + total, masked + bias)  # bit for bit (0 / -inf masks)
    assert torch.equal(s + mask.packed_constant(None), masked)
    dense = PackedMask.pack(torch.ones(2, 4, dtype=torch.bool), False, 4, torch.float64,
                            torch.device("cpu"), merge=False)
    assert dense.packed_constant(None) is None


@pytest.mark.parametrize("pe,causal", [("rope", True), ("relative_bias", False),
                                       ("relative_bias", True)])
def test_leading_padding_and_an_all_padding_example_keep_real_gradients_finite(pe, causal):
    """Packed, a padding query sees its own key: after leading padding under the causal mask,
    or in an example that is all padding, its softmax row would be all -inf and its NaN would
    reach the real gradients (0 * NaN in dV = P^T dZ).  The real examples' logits and the
    gradients equal those of the same examples without the padding-only rows: the left-padded
    example shifted to the start (a PE that sees i - j only) and the all-padding one left out."""
    torch.manual_seed(0)
    m = build_model(ModelConfig(pe=pe, d_model=16, n_heads=2, n_layers=2, d_ff=16, causal=causal),
                    vocab_size=11, n_classes=5, max_len=20).double().train()
    tok = torch.randint(1, 11, (3, 9), generator=torch.Generator().manual_seed(0))
    tok[0, :3] = 0  # leading padding
    tok[1] = 0  # all padding
    ref = torch.stack([torch.cat([tok[0, 3:], tok[0, :3]]), tok[2]])  # shifted, ex. 1 left out

    def run(t, rows):
        m.zero_grad(set_to_none=True)
        out = fast.forward(m, t)[rows]
        out.square().sum().backward()
        return out, [p.grad.clone() for p in m.parameters()]

    got, ggot = run(tok, [0, 2])
    want, gwant = run(ref, [0, 1])
    assert torch.allclose(got, want, atol=1e-10)
    assert all(g.isfinite().all() for g in ggot)
    assert all(torch.allclose(a, b, atol=1e-10) for a, b in zip(ggot, gwant))


def test_prefix_padding_only():
    """Interior padding (not a prefix of real tokens) is packed but never merged: shifting a
    segment would change its distances."""
    keep = torch.tensor([[True, False, True, False], [True, False, False, False]])
    assert not Packing(keep, merge=True).merged
    mask = PackedMask.pack(keep, False, 4, torch.float32, torch.device("cpu"), merge=True)
    assert mask.blocks is None and mask.keys is not None


def test_hooks_see_the_padded_layout():
    """A hook attached: the door runs the reference (hooks see its layouts)."""
    model, tok = _model("rope"), _tokens([3, 12, 5, 4, 13, 1])
    seen = []
    model.blocks[1].hook_resid_pre.add_hook(lambda x, hook: seen.append(tuple(x.shape)))
    fast.forward(model, tok)
    assert seen == [(6, T, 32)]


def _scores_both_ways(scale, seed, dtype):
    """Scores of random q, k on merged rows: through the segment columns, and with the -inf block
    mask added; and where query and key share a segment."""
    p = Packing(_tokens([3, 12, 5, 4, 13, 1]) != 0, merge=True)
    R, H, d = p.rows, 2, 4
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(R, H, T, d, generator=g).mul(scale).to(dtype) for _ in range(2))
    qe, ke = p.score_columns(dtype)
    qx, kx = torch.cat([q, qe.expand(R, H, T, -1)], -1), torch.cat([k, ke.expand(R, H, T, -1)], -1)
    ref = q @ k.transpose(-1, -2) + p.block_mask(dtype)[:, None]
    return qx @ kx.transpose(-1, -2), ref, p.block_mask(dtype)[:, None].expand_as(ref) == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_segment_columns_give_the_block_masks_softmax(dtype):
    """The block mask as extra q/k columns (no (rows, T, T) mask in the GEMM) gives the same
    pattern as adding the -inf block mask: on the block the extra products are exact zeros (the
    scores can differ only by the GEMM's accumulation order for a longer K: 1e-6 relative in
    float32), off it exp underflows to exactly 0; bfloat16 to its rounding."""
    scores, ref, same = _scores_both_ways(3, 3, dtype)
    tol = {torch.float32: 1e-6, torch.float64: 1e-14, torch.bfloat16: 1e-2}[dtype]
    assert torch.allclose(scores[same].double(), ref[same].double(), rtol=tol, atol=tol * 10)
    assert torch.allclose(scores.softmax(-1).double(), ref.softmax(-1).double(), rtol=0, atol=tol)
    assert (scores.softmax(-1)[~same] == 0).all() and (scores[~same] < -1e3).all()


def test_packing_is_chosen_by_device():
    """Measured on a CPU only: another device runs the reference (fast.why_not)."""
    model = _model("rope")
    tok = _tokens([3, 12])
    assert fast.why_not(model, tok) is None
    level, reason = fast.why_not(model, tok.to("meta"))
    assert "CPU" in reason


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_segment_columns_hold_for_scores_beyond_any_fixed_gap(dtype):
    """The cross-segment gap must not be a fixed number that large scores can beat: with
    |q.k| ~ 1e5 (a fixed gap of 1e4 leaks whole rows) the pattern is still the -inf block mask's,
    cross-segment weights exactly 0."""
    scores, ref, same = _scores_both_ways(300, 4, dtype)
    pattern = scores.softmax(-1)
    assert (pattern[~same] == 0).all()
    assert torch.allclose(pattern.double(), ref.softmax(-1).double(), rtol=0, atol=1e-2)


def test_merged_rows_are_exact_for_a_steep_xpos_decay():
    """xpos:scale_base=1 scales a score by zeta^-(i - j) (zeta >= 0.29): across segments of a
    merged row that reaches ~1e6 x q.k, far past a fixed 1e4 gap; packed must still be padded."""
    model, tok = _model("xpos:scale_base=1"), _tokens([3, 12, 5, 4, 13, 1])
    assert fast.merges_rows(model.spec)
    packed = fast.forward(model, tok)
    padded = model(tok)
    assert torch.isfinite(padded).all()
    _assert_same(model, packed, padded, torch.arange(6) % 5)


def test_a_torch_module_hook_sees_the_padded_forward():
    """A torch hook (on a submodule, or global) turns packing off: it sees (batch, T, D) and every
    module is called, as without the sub-layer functions."""
    model, tok = _model("rope"), _tokens([3, 12, 5, 4, 13, 1])
    seen = []
    handle = model.blocks[0].mlp.register_forward_hook(lambda m, a, out: seen.append(out.shape))
    fast.forward(model, tok)
    handle.remove()
    assert seen == [(6, T, 32)]
    seen.clear()
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda m, a, out: seen.append(type(m).__name__))
    try:
        fast.forward(model, tok)
    finally:
        handle.remove()
    assert "Sequential" in seen and "LayerNorm" in seen
    calls = []
    model.blocks[0].ln2.register_forward_pre_hook(lambda m, a: calls.append(a[0].shape))
    fast.forward(model, tok)
    assert calls == [(6, T, 32)]
