"""The encoder with every catalogue PE: a training step, relative-PE shift invariance,
SDPA vs explicit attention, hooks, causal masking and user errors."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.encodings import all_entries
from posenc.empirical.config import ModelConfig
from posenc.empirical.model.transformer import build_model
from posenc.errors import PosencError

ENTRIES = list(all_entries())


def _pe(name, spec):
    return name if name.startswith("paper") else spec.to_string()


def _model(pe="rope", max_len=40, **kw):
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, **{"d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, **kw})
    return build_model(cfg, vocab_size=12, n_classes=6, max_len=max_len)


def _tokens(B=4, T=10, seed=0):
    return torch.randint(1, 12, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name,spec", ENTRIES, ids=[n for n, _ in ENTRIES])
def test_every_pe_trains_a_step_with_finite_loss(name, spec):
    model = _model(_pe(name, spec), dropout=0.1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tok, y = _tokens(), torch.tensor([0, 1, 2, 3])
    tok[0, 7:] = 0
    loss0 = F.cross_entropy(model(tok), y)
    loss0.backward()
    assert torch.isfinite(loss0)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    opt.step()
    assert torch.isfinite(F.cross_entropy(model(tok), y))


RELATIVE = ["rope", "rope:pairing=half,keep=0.5", "rope:heads=1,fraction=0.5", "nope", "alibi",
            "alibi:slopes=exp", "relative_bias", "relative_bias:mode=table", "mla",
            "custom:kernel=exp(-abs(k)/4)", "custom:frequencies=1;0.1"]
ABSOLUTE = ["sinusoidal", "learned_absolute", "paper-rope", "paper-mla", "hybrid",
            "hybrid:additive=learned_absolute"]


@settings(max_examples=10)
@given(st.sampled_from(RELATIVE), st.integers(1, 200))
def test_relative_pe_logits_are_shift_invariant(pe, shift):
    """Shifting every position by t leaves a relative PE's logits unchanged (RoPE: exactly in
    exact arithmetic; float32 rounding of angles up to ~200 rad gives ~1e-5)."""
    model = _model(pe, max_len=300).eval()
    tok = _tokens()
    with torch.no_grad():
        a, b = model(tok), model(tok, offset=shift)
    assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()


@pytest.mark.parametrize("pe", ABSOLUTE)
def test_absolute_pe_logits_change_with_a_shift(pe):
    model = _model(pe, max_len=300).eval()
    with torch.no_grad():
        assert (model(_tokens()) - model(_tokens(), offset=7)).abs().max() > 1e-3


@pytest.mark.parametrize("pe", ["rope", "alibi", "mla", "relative_bias"])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_path_equals_explicit_path(pe, causal):
    """Either kernel gives the same logits to rounding; a pattern hook under SDPA reads a side
    computation and leaves SDPA's logits bit for bit, and sees the explicit kernel's pattern."""
    model = _model(pe, causal=causal).eval()
    tok = _tokens()
    tok[1, 6:] = 0
    pattern = lambda n: n.endswith("hook_pattern")  # noqa: E731
    with torch.no_grad():
        slow, explicit = model.run_with_cache(tok, names_filter=pattern)
        for block in model.blocks:
            block.attn.kernel = "sdpa"
        fast = model(tok)
        looked, cache = model.run_with_cache(tok, names_filter=pattern)
    assert len(cache) == 2 and torch.equal(looked, fast)
    assert all(torch.allclose(cache[n], explicit[n], atol=1e-6) for n in cache)
    assert torch.allclose(fast, slow, atol=1e-5)  # float32, two summation orders


def test_causal_pattern_is_lower_triangular_and_rows_sum_to_one():
    model = _model("rope", causal=True).eval()
    _, cache = model.run_with_cache(_tokens(), names_filter=lambda n: n.endswith("hook_pattern"))
    for pat in cache.values():
        assert torch.all(pat.triu(1) == 0)
        assert torch.allclose(pat.sum(-1), torch.ones(()), atol=1e-6)


def test_padding_keys_get_no_attention_when_masked():
    model = _model("rope").eval()
    tok = _tokens()
    tok[:, 6:] = 0
    _, cache = model.run_with_cache(tok, names_filter=lambda n: n.endswith("hook_pattern"))
    for pat in cache.values():
        assert torch.all(pat[..., 6:] == 0)


def test_hook_can_edit_and_hooks_are_removed_afterwards():
    model = _model("rope").eval()
    tok = _tokens()
    with torch.no_grad():
        base = model(tok)

        def kill(z, hook):
            return torch.zeros_like(z)
        edited = model.run_with_hooks(tok, fwd_hooks=[(lambda n: n.endswith("hook_z"), kill)])
        again = model(tok)
    assert not torch.allclose(base, edited)
    assert torch.equal(base, again)
    assert not any(h.active for h in model.hook_points().values())
    with pytest.raises(KeyError):
        model.run_with_hooks(tok, fwd_hooks=[("blocks.0.attn.hook_nothing", kill)])


@pytest.mark.parametrize("kw,match", [
    (dict(pe="rope", d_model=12, n_heads=4), "even head dimension"),
    (dict(pe="custom:frequencies=1;2;3;4;5", d_model=16, n_heads=2), "frequencies"),
    (dict(pe="relative_bias:num_buckets=32,max_distance=4"), "max_distance"),
    (dict(pe="learned_absolute:max_len=8"), "max_len"),
    (dict(pe="rope", d_model=10, n_heads=4), "divisible"),
    (dict(pe="ropey"), "unknown positional encoding"),
])
def test_unbuildable_specs_are_user_errors(kw, match):
    with pytest.raises(PosencError, match=match):
        _model(**kw)


def test_head_weights_reproduce_the_projections():
    for pe in ("rope", "mla"):
        model = _model(pe).eval()
        attn = model.blocks[0].attn
        W = attn.head_weights()
        x = torch.randn(3, 16)
        H, dh = 2, 8
        if pe == "rope":
            q = attn.qkv(x)[:, :16].view(3, H, dh)
        else:
            q = attn.q_up(attn.q_down(x)).view(3, H, dh)
        assert torch.allclose(torch.einsum("hdD,tD->thd", W["W_q"], x), q, atol=1e-5)
