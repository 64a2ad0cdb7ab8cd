"""hook_attn_scores of the model == an explicit loop (q.k / sqrt(d) + bias) for every catalogue PE.

This is the empirical half of the cross-layer parity claim: the reference is
written in ``empirical_reference.py`` from the catalogue's conventions, with the
model's own weights (``head_weights()``), learned bias tables and normed inputs
(``hook_q_in`` / ``hook_kv_in``).
"""

import pytest
import torch

from empirical_reference import scores_ref
from rope_scaling_reference import scaled_specs
from posenc.encodings import all_entries, parse_spec
from posenc.empirical.config import ModelConfig
from posenc.empirical.model.transformer import build_model

ENTRIES = list(all_entries()) + [(t, parse_spec(t)) for t in scaled_specs(planes=4)]  # head dim 8


def _model(pe: str, dtype=torch.float64, **kw):
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, d_model=16, n_heads=2, n_layers=2, d_ff=16, **kw)
    m = build_model(cfg, vocab_size=11, n_classes=5, max_len=12).to(dtype)
    with torch.no_grad():  # random weights everywhere, incl. learned bias tables and LayerNorms
        for p in m.parameters():
            p.normal_(0.0, 0.6)
    return m.eval()


def _tokens():
    tok = torch.randint(1, 11, (2, 7), generator=torch.Generator().manual_seed(1))
    tok[1, 5:] = 0  # padding at the end of the second example
    return tok


def _check(model, spec, tok, offset=0, atol=1e-9):
    names = lambda n: n.endswith(("hook_attn_scores", "hook_q_in", "hook_kv_in"))  # noqa: E731
    _, cache = model.run_with_cache(tok, names_filter=names, offset=offset)
    T = tok.shape[1]
    for layer in range(len(model.blocks)):
        attn = model.blocks[layer].attn
        got = cache[f"blocks.{layer}.attn.hook_attn_scores"].double()
        for b in range(tok.shape[0]):
            x = cache[f"blocks.{layer}.attn.hook_q_in"][b]
            y = cache[f"blocks.{layer}.attn.hook_kv_in"][b]
            want = scores_ref(spec, attn, x, y, offset)
            for i in range(T):
                for j in range(T):
                    if (model.cfg.mask_padding and tok[b, j] == 0) or (model.cfg.causal and j > i):
                        want[:, i, j] = float("-inf")
            fin = torch.isfinite(want)
            assert torch.equal(fin, torch.isfinite(got[b])), f"mask differs in layer {layer}"
            assert torch.allclose(got[b][fin], want[fin], rtol=0, atol=atol), \
                f"layer {layer}: max err {(got[b][fin] - want[fin]).abs().max():.3g}"


@pytest.mark.parametrize("name,spec", ENTRIES, ids=[n for n, _ in ENTRIES])
def test_scores_equal_reference_float64(name, spec):
    # float64 end to end: differences are rounding of ~16-term dot products (~1e-14).
    model = _model(spec.to_string() if not name.startswith("paper") else name)
    _check(model, spec, _tokens())


@pytest.mark.parametrize("pe", ["rope:pairing=half,fraction=0.5,heads=1", "alibi:direction=causal",
                                "mla:shared_rope_key=false", "relative_bias:mode=table,max_distance=3"])
@pytest.mark.parametrize("kw", [dict(causal=True), dict(kv_source="input"), dict(mask_padding=False)])
def test_scores_equal_reference_with_model_switches(pe, kw):
    model = _model(pe, **kw)
    _check(model, parse_spec(pe), _tokens(), offset=3)


def test_scores_equal_reference_float32():
    # float32: relative rounding ~6e-8 on logits of size ~10 -> 1e-4 absolute is generous but tight.
    for pe in ("rope", "mla", "alibi"):
        model = _model(pe, dtype=torch.float32)
        _check(model, parse_spec(pe), _tokens(), atol=1e-4)
