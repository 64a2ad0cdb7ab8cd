"""Hook points a TransformerLens user can use unchanged: names, layouts, the calling convention
``fn(activation, hook=...)``, ablation at hook_z equal to the built-in per-head gate, caching,
hook_q before / hook_rot_q after the rotation, hook_embed + hook_pos_embed = resid_pre."""

import pytest
import torch

from posenc.empirical.analysis.ablation import ablated_logits
from posenc.empirical.config import preset
from posenc.empirical.training.runs import dataset_for, model_for


def _smoke(pe="rope", **over):
    cfg = preset("smoke", "distance", pe, **over)
    torch.manual_seed(0)
    model = model_for(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)  # sharper random function: removing a head changes predictions
    tokens = dataset_for(cfg).test.tokens[:48]
    return model.eval(), tokens


# TransformerLens style: a plain function of (activation, hook), the head index in dim 2.
def zero_head(h):
    def hook_fn(z, hook):
        z[:, :, h, :] = 0.0  # [batch, pos, head_index, d_head]
        return z
    return hook_fn


@pytest.mark.parametrize("pe,over", [("rope", {}), ("alibi", {"model.kv_source": "input"}),
                                     ("sinusoidal", {"model.causal": True})])
def test_transformerlens_style_ablation_equals_the_gate_exactly(pe, over):
    model, tok = _smoke(pe, **over)
    L, H = len(model.blocks), model.cfg.n_heads
    changed = 0
    for layer in range(L):
        gate = ablated_logits(model, tok, layer, batched=False)  # (H, B, C): the per-head gate
        with torch.no_grad():
            base = model(tok)
            for h in range(H):
                hooked = model.run_with_hooks(
                    tok, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", zero_head(h))])
                assert torch.equal(hooked, gate[h]), (layer, h)
                changed += int(not torch.equal(hooked, base))
    assert changed == L * H  # every removal changes the logits: the comparison is not vacuous


def test_hook_functions_get_the_hook_point_by_keyword():
    model, tok = _smoke()
    seen = []

    def keyword_only(act, *, hook):  # fails if called as fn(act, hook_point) positionally
        seen.append((hook.name, tuple(act.shape)))
    with torch.no_grad():
        model.run_with_hooks(tok, fwd_hooks=[(lambda n: n.startswith("blocks.1."), keyword_only)])
    B, T = tok.shape
    D, H = model.cfg.d_model, model.cfg.n_heads
    dh = D // H
    shapes = dict(seen)
    assert shapes["blocks.1.attn.hook_q"] == shapes["blocks.1.attn.hook_rot_k"] == (B, T, H, dh)
    assert shapes["blocks.1.attn.hook_z"] == shapes["blocks.1.attn.hook_v"] == (B, T, H, dh)
    assert shapes["blocks.1.attn.hook_pattern"] == shapes["blocks.1.attn.hook_attn_scores"] \
        == (B, H, T, T)
    for name in ("resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post"):
        assert shapes[f"blocks.1.hook_{name}"] == (B, T, D)


def test_cache_in_transformerlens_style_and_its_layouts_are_consistent():
    model, tok = _smoke()
    store = {}

    def cache_fn(act, hook):
        store[hook.name] = act.detach()
    with torch.no_grad():
        out = model.run_with_hooks(tok, fwd_hooks=[(lambda n: True, cache_fn)])
        out2, cache = model.run_with_cache(tok)
    assert torch.equal(out, out2) and set(store) == set(cache)
    assert all(torch.equal(store[n], cache[n]) for n in store)
    assert torch.equal(cache["pattern", 1], cache["blocks.1.attn.hook_pattern"])  # short keys
    assert torch.equal(cache["embed"], cache["hook_embed"])
    attn = model.blocks[1].attn
    z, v, pat = cache["z", 1], cache["v", 1], cache["pattern", 1]
    # z[b, i, h] = sum_j pattern[b, h, i, j] v[b, j, h]  (float32, 16-term sums: 1e-5)
    assert torch.allclose(z, torch.einsum("bhij,bjhd->bihd", pat, v), atol=1e-5)
    # the attention output is z, heads concatenated in head order, through W_O
    B, T = tok.shape
    assert torch.allclose(cache["attn_out", 1], attn.out(z.reshape(B, T, -1)), atol=1e-5)
    assert torch.equal(cache["resid_mid", 1], cache["resid_pre", 1] + cache["attn_out", 1])
    assert torch.equal(cache["resid_post", 1], cache["resid_mid", 1] + cache["mlp_out", 1])
    assert torch.equal(cache["resid_post", 0], cache["resid_pre", 1])


@pytest.mark.parametrize("pe", ["rope", "rope:pairing=half,heads=2", "mla"])
def test_hook_q_is_before_the_rotation_and_hook_rot_q_after(pe):
    model, tok = _smoke(pe)
    with torch.no_grad():
        _, cache = model.run_with_cache(tok, offset=3)
    H, dh = model.cfg.n_heads, model.cfg.d_model // model.cfg.n_heads
    for layer, block in enumerate(model.blocks):
        attn = block.attn
        x = cache[f"blocks.{layer}.attn.hook_q_in"]  # (B, T, D)
        W = attn.head_weights()
        q, rq = cache["q", layer], cache["rot_q", layer]
        k, rk = cache["k", layer], cache["rot_k", layer]
        # hook_q is the plain projection of the normed input (content part for MLA)
        want_q = torch.einsum("hdD,btD->bthd", W["W_q"], x)
        assert torch.allclose(q[..., :dh], want_q, atol=1e-5)
        # rotating hook_q / hook_k with the model's RoPE gives hook_rot_q / hook_rot_k
        lo = dh if pe == "mla" else 0  # MLA rotates its decoupled part only
        for pre, post in ((q, rq), (k, rk)):
            rot = attn.rotary(pre[..., lo:].transpose(1, 2), 3).transpose(1, 2)
            assert torch.allclose(post[..., lo:], rot, atol=1e-6)
            assert torch.equal(post[..., :lo], pre[..., :lo])
            assert (post - pre).abs().max() > 1e-3  # the rotation is not the identity
    assert H == q.shape[2]


@pytest.mark.parametrize("pe", ["sinusoidal", "learned_absolute", "paper-rope"])
def test_embed_plus_pos_embed_is_resid_pre_of_block_0(pe):
    model, tok = _smoke(pe)
    with torch.no_grad():
        _, cache = model.run_with_cache(tok, offset=2)
        assert torch.equal(cache["hook_embed"], model.embed(tok))  # the token embedding alone
        pos = model.pos_embed(tok.shape[1], 2)
    assert torch.equal(cache["hook_pos_embed"], pos.expand(cache["hook_embed"].shape))
    assert torch.equal(cache["hook_embed"] + cache["hook_pos_embed"],
                       cache["blocks.0.hook_resid_pre"])
    assert "hook_pos_embed" not in _smoke("rope")[0].hook_dict  # no absolute PE, no hook


def test_add_hook_and_reset_hooks():
    model, tok = _smoke()
    with torch.no_grad():
        base = model(tok)
        model.add_hook("blocks.0.attn.hook_z", zero_head(1))
        edited = model(tok)
        model.reset_hooks()
        again = model(tok)
    assert not torch.equal(base, edited) and torch.equal(base, again)
    with pytest.raises(KeyError):
        model.add_hook("blocks.0.attn.hook_nothing", zero_head(0))


def _with_kernel(model, kernel):
    for block in model.blocks:
        block.attn.kernel = kernel
    return model


@pytest.mark.parametrize("kernel", ["explicit", "sdpa"])
@pytest.mark.parametrize("over", [{}, {"model.kv_source": "input"}, {"model.causal": True}])
def test_looking_never_changes_the_output(kernel, over):
    """Hooks are data: a hook that only reads (scores, pattern, the projections' inputs) leaves
    the logits bit for bit, with either kernel (SDPA: the scores come from a side computation)."""
    model, tok = _smoke("alibi", **over)
    model = _with_kernel(model, kernel)
    with torch.no_grad():
        plain = model(tok)
        for name in ("hook_attn_scores", "hook_pattern", "hook_kv_in", "hook_q_in"):
            seen = []
            looked = model.run_with_hooks(tok, fwd_hooks=[(lambda n, s=name: n.endswith(s),
                                                           lambda x, hook: seen.append(x.shape))])
            assert len(seen) == len(model.blocks) and torch.equal(looked, plain), name


def test_a_hook_on_kv_in_keeps_the_one_gemm(monkeypatch):
    model, tok = _smoke("rope")

    def two_gemms(*args):
        raise AssertionError("the fused Q/K/V GEMM was split")
    for block in model.blocks:
        monkeypatch.setattr(block.attn, "split_projection", two_gemms)
    with torch.no_grad():
        model.run_with_hooks(tok, fwd_hooks=[(lambda n: n.endswith(("kv_in", "q_in")),
                                              lambda x, hook: None)])


@pytest.mark.parametrize("in_place", [False, True])
def test_an_edited_pattern_is_what_sdpa_computes_from(in_place):
    """An edit (returned or written in place) under SDPA gives the explicit kernel's edited output."""
    def edit(p, hook):
        if in_place:
            p[:, 0] = 0.0
            return None
        return torch.cat([torch.zeros_like(p[:, :1]), p[:, 1:]], dim=1)
    model, tok = _smoke("alibi")
    hooks = [(lambda n: n.endswith("hook_pattern"), edit)]
    with torch.no_grad():
        plain = model(tok)
        want = _with_kernel(model, "explicit").run_with_hooks(tok, fwd_hooks=hooks)
        got = _with_kernel(model, "sdpa").run_with_hooks(tok, fwd_hooks=hooks)
    assert (want - plain).abs().max() > 1e-3
    assert torch.allclose(got, want, atol=1e-6)
