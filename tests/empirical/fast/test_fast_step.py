"""The model's (reference) forward computes what the model computed before the speed-ups: same
logits (float32 and float64) and gradients as the pre-speed-up forward (SDPA, real-formula RoPE,
per-layer masks) on the same weights, for every PE family and model switch; the kernel choice;
shared parameter-free modules leave the checkpoint layout unchanged.  (The fast path against the
reference: test_fast.py, test_packing.py.)"""

import pytest
import torch
import torch.nn.functional as F
from empirical_reference import old_model_logits

from posenc.empirical.config import ModelConfig
from posenc.empirical.model.attention import CPU_SDPA_MIN_HEAD_DIM, kernel_for
from posenc.empirical.model.transformer import build_model

PES = ["rope", "rope:pairing=half,fraction=0.5", "rope:heads=1,keep=0.5", "alibi",
       "alibi:direction=causal", "relative_bias", "relative_bias:mode=table,max_distance=5",
       "sinusoidal", "learned_absolute", "nope", "hybrid:additive=alibi", "paper-rope",
       "custom:frequencies=1;0.1", "custom:kernel=exp(-abs(k)/4)"]
SWITCHES = [{}, {"causal": True}, {"kv_source": "input"}, {"mask_padding": False}]


def _model(pe, dtype=torch.float32, **kw):
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, d_model=32, n_heads=4, n_layers=3, d_ff=48, **kw)
    m = build_model(cfg, vocab_size=11, n_classes=5, max_len=30).to(dtype)
    with torch.no_grad():  # larger than init, learned biases included: O(1) differences matter
        for p in m.parameters():
            p.normal_(0.0, 0.5)
    return m


def _tokens(trailing: bool = False):
    """Some examples padded; ``trailing``: the last 3 columns are padding in every example (the
    forward drops them when padding is masked)."""
    tok = torch.randint(1, 11, (6, 13), generator=torch.Generator().manual_seed(2))
    tok[1, 9:] = 0
    tok[4, 5:] = 0
    if trailing:
        tok[:, 10:] = 0
    return tok


@pytest.mark.parametrize("trailing", [False, True], ids=["padded", "trailing-padding"])
@pytest.mark.parametrize("kw", SWITCHES, ids=lambda kw: ",".join(kw) or "default")
@pytest.mark.parametrize("pe", PES)
def test_logits_and_gradients_equal_the_previous_forward(pe, kw, trailing):
    model, tok = _model(pe, **kw), _tokens(trailing)
    y = torch.arange(6) % 5
    new = model(tok, offset=2)
    old = old_model_logits(model, tok, offset=2)
    # float32, logits O(1-10): the two forwards differ only in summation order and in the
    # rotation (one complex product vs. two real products), ~1e-7 relative; 1e-5 absolute.
    assert torch.allclose(new, old, rtol=0, atol=1e-5), (new - old).abs().max()
    g_new = torch.autograd.grad(F.cross_entropy(new, y), list(model.parameters()), allow_unused=True)
    g_old = torch.autograd.grad(F.cross_entropy(old, y), list(model.parameters()), allow_unused=True)
    for (name, _), a, b in zip(model.named_parameters(), g_new, g_old):
        assert (a is None) == (b is None), name
        if a is not None:
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-5), (name, (a - b).abs().max())


@pytest.mark.parametrize("pe", ["rope", "rope:pairing=half", "alibi", "relative_bias"])
def test_float64_logits_equal_the_previous_forward_to_rounding(pe):
    model = _model(pe, dtype=torch.float64, causal=True)
    tok = _tokens(trailing=True)
    assert torch.allclose(model(tok), old_model_logits(model, tok), rtol=0, atol=1e-12)


def test_the_reference_can_tell_a_wrong_rotation():
    """A sign error in RoPE (rotating by -theta) moves the logits far beyond the tolerance."""
    model, tok = _model("rope"), _tokens()
    old = old_model_logits(model, tok)
    with torch.no_grad():
        model.blocks[0].attn.rotary.thetas.neg_()
        model.blocks[0].attn.rotary._cache.clear()
        assert (model(tok) - old).abs().max() > 1e-3


def test_kernel_chosen_once_by_head_dim_and_device():
    assert kernel_for(8) == kernel_for(CPU_SDPA_MIN_HEAD_DIM - 1) == "explicit"
    assert kernel_for(CPU_SDPA_MIN_HEAD_DIM) == "sdpa"
    rope = _model("rope")
    assert {b.attn.kernel for b in rope.blocks} == {kernel_for(rope.blocks[0].attn.head_dim)}
    mla = _model("mla").blocks[0].attn  # MLA: d_qk = head_dim + rope_dim
    assert mla.kernel == kernel_for(mla.head_dim + mla.rope_dim)
    # on a GPU SDPA at every head dim, chosen when the model is built for it (no GPU needed)
    assert kernel_for(8, "cuda") == kernel_for(8, torch.device("cuda", 0)) == "sdpa"
    cfg = ModelConfig(pe="rope", d_model=32, n_heads=4, n_layers=2)
    built = build_model(cfg, 12, 10, 16, device="cuda")
    assert {b.attn.kernel for b in built.blocks} == {"sdpa"}
    assert {b.attn.kernel for b in build_model(cfg, 12, 10, 16).blocks} == {"explicit"}


def test_parameter_free_modules_are_shared_and_not_in_the_state_dict():
    for pe in ("rope", "alibi", "hybrid:additive=alibi"):
        model = _model(pe)
        parts = [(b.attn.rotary, b.attn.bias) for b in model.blocks]
        assert all(p == parts[0] for p in parts)
        assert not any("rotary" in k or "slopes" in k for k in model.state_dict())
    learned = _model("relative_bias")
    assert learned.blocks[0].attn.bias is not learned.blocks[1].attn.bias  # one table per layer


@pytest.mark.parametrize("pe", ["rope", "rope:pairing=half", "rope:fraction=0.5,heads=2",
                                "rope:pairing=half,fraction=0.5,keep=0.5"])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "odd-offset", "bfloat16"])
def test_rotation_equals_explicit_2x2_rotations(pe, layout):
    """The rotation (pairs viewed as complex numbers, copied first where the layout does not allow
    the view; half pairing; bfloat16 through float32) against the explicit plane-by-plane
    rotation matrices of empirical_reference."""
    from empirical_reference import rope_planes_ref, rotate_ref

    from posenc.empirical.model.pe.rotary import rope_rotary
    from posenc.encodings import parse_spec
    spec, H, T, d = parse_spec(pe), 4, 6, 8
    rot = rope_rotary(spec, d, H)
    base = torch.randn(2, T, 3 * H * d + 1, generator=torch.Generator().manual_seed(0))
    if layout == "odd-offset":  # storage offset 1: pairs cannot be viewed as complex numbers
        x = base[..., 1:1 + H * d].view(2, T, H, d).transpose(1, 2)
    else:
        x = base[..., :H * d].reshape(2, T, H, d).transpose(1, 2)  # strided (B, H, T, d)
    if layout == "contiguous":
        x = x.contiguous()
    if layout == "bfloat16":
        x = x.to(torch.bfloat16)
    got = rot(x, offset=3).double()
    for b in range(2):
        for h in range(H):
            planes = rope_planes_ref(spec, d, h, H)
            for t in range(T):
                want = rotate_ref(x[b, h, t].double(), planes, t + 3)
                # float32 products of O(1) values: 1e-6; bfloat16: two products and a sum, each
                # rounded to 8 bits (unit roundoff 2^-8), of values up to max|x|
                tol = 3 * 2.0 ** -8 * float(x.abs().max()) if layout == "bfloat16" else 1e-6
                assert torch.allclose(got[b, h, t], want, atol=tol), (b, h, t)


@pytest.mark.parametrize("pe", ["rope", "alibi", "mla"])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_kernel_equals_the_explicit_kernel_and_the_previous_forward(pe, causal):
    """Head dim 32 takes SDPA; hooking the pattern reads it from a side computation and leaves
    SDPA's output, bit for bit; the explicit kernel agrees to rounding."""
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, d_model=64, n_heads=2, n_layers=2, d_ff=32, causal=causal)
    model = build_model(cfg, vocab_size=11, n_classes=5, max_len=30).eval()
    assert model.blocks[0].attn.kernel == "sdpa"
    tok = _tokens()
    with torch.no_grad():
        fast = model(tok)
        looked, cache = model.run_with_cache(tok, names_filter=lambda n: n.endswith("hook_pattern"))
        assert len(cache) == 2 and torch.equal(looked, fast)
        for block in model.blocks:
            block.attn.kernel = "explicit"
        slow = model(tok)
        assert torch.allclose(fast, slow, atol=1e-5)  # float32, two summation orders
        if pe != "mla":
            assert torch.allclose(fast, old_model_logits(model, tok), atol=1e-5)


def test_trailing_padding_is_dropped_by_the_fast_path_only(monkeypatch):
    """The reference runs at the length it is given, hooked or not (a hook never changes what is
    computed); the fast path drops the columns that are padding in every example."""
    from posenc.empirical import fast
    from posenc.empirical.model.attention import HeadAblation
    from posenc.empirical.fast import packed
    model, tok = _model("rope").eval(), _tokens(trailing=True)
    seen = []
    ln1 = model.blocks[0].ln1
    forward = ln1.forward  # a spy, not a torch hook: a torch hook would keep the full length too
    ln1.forward = lambda x: seen.append(x.shape[1]) or forward(x)
    with torch.no_grad():
        model(tok)
        _, cache = model.run_with_cache(tok, names_filter="blocks.0.attn.hook_z")
        model(tok, ablation=HeadAblation(0, torch.ones(1, 4), cache["blocks.0.attn.hook_z"]))
    assert seen == [13, 13, 13] and cache["blocks.0.attn.hook_z"].shape[1] == 13
    trimmed = []
    real = packed.trim
    monkeypatch.setattr(packed, "trim", lambda *a: (lambda r: trimmed.append(r[0].shape[1]) or r)(
        real(*a)))
    with torch.no_grad():
        assert torch.allclose(fast.forward(model, tok), model(tok), atol=1e-5)
    assert trimmed == [10]
