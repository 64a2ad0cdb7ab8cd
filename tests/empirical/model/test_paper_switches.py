"""The paper-code conventions can be switched on and change the computation as documented:
keys/values from the input embeddings in every layer, unmasked padding, and the paper-* PEs."""

import pytest
import torch

from posenc.empirical.config import ModelConfig
from posenc.empirical.model.transformer import build_model
from posenc.empirical.model.pe import alibi_slopes


def _model(pe="rope", **kw):
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, d_model=16, n_heads=2, n_layers=3, d_ff=32, **kw)
    return build_model(cfg, vocab_size=12, n_classes=5, max_len=16).eval()


def _tokens():
    tok = torch.randint(1, 12, (3, 10), generator=torch.Generator().manual_seed(0))
    tok[0, 7:] = 0
    return tok


def test_kv_from_input_uses_the_embeddings_in_every_layer():
    std, paper = _model(), _model(kv_source="input")
    paper.load_state_dict(std.state_dict())  # same weights, different wiring
    tok = _tokens()
    _, c = paper.run_with_cache(tok)
    for layer in range(3):
        ln1 = paper.blocks[layer].ln1
        assert torch.allclose(c[f"blocks.{layer}.attn.hook_kv_in"], ln1(c["blocks.0.hook_resid_pre"]),
                              atol=1e-6)
        if layer > 0:  # the query side still reads the residual stream
            assert not torch.allclose(c[f"blocks.{layer}.attn.hook_q_in"],
                                      c[f"blocks.{layer}.attn.hook_kv_in"])
    _, s = std.run_with_cache(tok)
    assert torch.equal(s["blocks.1.attn.hook_kv_in"], s["blocks.1.attn.hook_q_in"])
    with torch.no_grad():
        assert (std(tok) - paper(tok)).abs().max() > 1e-3
        # Layer 0 is identical under both wirings (its input is the embedding either way).
        assert torch.allclose(s["blocks.0.attn.hook_z"], c["blocks.0.attn.hook_z"], atol=1e-6)


@pytest.mark.parametrize("pe", ["rope", "sinusoidal", "alibi"])
def test_masked_padding_is_invisible_and_unmasked_padding_is_not(pe):
    masked, paper = _model(pe), _model(pe, mask_padding=False)
    paper.load_state_dict(masked.state_dict())
    tok = torch.randint(1, 12, (2, 8), generator=torch.Generator().manual_seed(1))
    longer = torch.cat([tok, torch.zeros(2, 5, dtype=torch.long)], dim=1)  # 5 more PAD tokens
    with torch.no_grad():
        # masked: extra padding at the end changes nothing (float32, different lengths: 1e-5)
        assert torch.allclose(masked(tok), masked(longer), atol=1e-5)
        # paper code: the padding is attended to and pooled, so the logits move
        assert (paper(tok) - paper(longer)).abs().max() > 1e-3
        # without padding the two conventions agree exactly in function
        assert torch.allclose(masked(tok), paper(tok), atol=1e-6)


def test_paper_presets_differ_from_the_defaults_as_documented():
    tok = _tokens()
    rope, paper_rope = _model("rope"), _model("paper-rope")
    assert rope.pos_embed is None and paper_rope.pos_embed is not None  # trans.py's cat[sin, cos]
    assert paper_rope.pos_embed.layout == "half"
    paper_rope.load_state_dict(rope.state_dict())
    with torch.no_grad():
        assert (rope(tok) - paper_rope(tok)).abs().max() > 1e-3
    press = _model("alibi").blocks[0].attn.bias.slopes.tolist()
    exp = _model("paper-alibi").blocks[0].attn.bias.slopes.tolist()
    # the paper's code: exp(-h/H) for h = 0..H-1, head 0 has slope 1 (was h = 1..H)
    assert press == pytest.approx(alibi_slopes(2, "press"))
    assert exp == pytest.approx([1.0, 0.6065306597126334])
    assert exp == pytest.approx(alibi_slopes(2, "exp0")) and exp != pytest.approx(alibi_slopes(2, "exp"))
    assert _model("paper-relative").blocks[0].attn.bias.weight.shape == (2, 255)  # 2 * 128 - 1 offsets
    assert _model("relative_bias").blocks[0].attn.bias.weight.shape == (2, 32)  # t5 buckets
    assert _model("paper-mla").pos_embed.weight.shape == (16, 16)  # learned, model length
    assert _model("mla").pos_embed is None
