"""Paper-code mode is exact: posenc's model with ``code='paper'`` gives the logits of an
independent re-implementation of the paper code's forward (paper_reference.py) with the same
weights, for every PE of the sweep and both tasks; deliberate deviations are caught."""

import pytest
import torch
from paper_reference import MLATransformerDecoder, TransformerDecoder

from posenc.empirical.config import apply_overrides, preset
from posenc.empirical.training.paper_import import convert
from posenc.empirical.paper_specs import paper_code_fields
from posenc.empirical.training.runs import model_for
from posenc.empirical.tasks import make_split
from posenc.encodings import parse_spec

# smoke sizes: d_model 32, 4 heads, 2 layers, d_ff 64, vocabulary 16, length 16
D, H, LAYERS, FF, VOCAB, LEN = 32, 4, 2, 64, 16, 16
PES = ("nope", "absolute", "alibi", "relative", "random", "rope", "partialrope:1",
       "partialrope:2", "partialrope:4", "mla")
#: float32 through 2 layers of width 32: the two implementations sum in different orders
#: (per-head loops vs fused GEMMs); measured differences are ~1e-6, far below this.
TOL = 1e-5


def reference(pe, seed=0, deviation=None):
    torch.manual_seed(seed)
    if pe == "mla":
        ref = MLATransformerDecoder(VOCAB, D, H, LAYERS, FF, LEN, latent=128, deviation=deviation)
    elif pe.startswith("partialrope:"):
        ref = TransformerDecoder(VOCAB, D, H, LAYERS, FF, LEN, "partial",
                                 rope_heads=int(pe.split(":")[1]), deviation=deviation)
    else:
        ref = TransformerDecoder(VOCAB, D, H, LAYERS, FF, LEN, pe, deviation=deviation)
    return ref.eval()


def posenc_model(pe, task, state_dict):
    spec, _, state = convert(state_dict, pe, H)
    cfg = preset("smoke", task=task, pe=spec)
    cfg = apply_overrides(cfg, paper_code_fields(spec))
    model = model_for(cfg)
    model.load_state_dict(state)
    return model.eval()


#: the spec strings imported runs of these checkpoints store (their run ids hash them)
IMPORTED = {"nope": "nope", "absolute": "sinusoidal", "alibi": "alibi:slopes=exp0",
            "relative": "relative_bias:mode=table,max_distance=15", "random": "learned_absolute:max_len=16",
            "rope": "hybrid:additive=sinusoidal,additive.layout=half", "partialrope:1": "rope:heads=1",
            "partialrope:2": "rope:heads=2", "partialrope:4": "rope",
            "mla": "mla:kv_latent=128,q_latent=128,absolute=learned,rope=paper_code"}


@pytest.mark.parametrize("pe", PES)
def test_an_imported_checkpoint_stores_the_spec_string_it_stored_before(pe):
    """convert gives the catalogue spec itself (no string to parse again); the config stores
    the same string as when convert returned strings, so imported runs keep their run ids."""
    spec = convert(reference(pe).state_dict(), pe, H)[0]
    assert spec == parse_spec(IMPORTED[pe])
    assert preset("smoke", pe=spec).model.pe == IMPORTED[pe]


def tokens(task, n=48):
    cfg = preset("smoke", task=task)
    toks = make_split(cfg.task, 0).test.tokens[:n]
    assert toks.shape[1] == LEN
    return toks


def max_diff(pe, task, deviation=None):
    ref = reference(pe)
    model = posenc_model(pe, task, ref.state_dict())
    if deviation is not None:  # the same weights in a deviating reference
        bad = reference(pe, deviation=deviation)
        bad.load_state_dict(ref.state_dict(), strict=False)
        ref = bad
    tok = tokens(task)
    with torch.no_grad():
        return (ref(tok) - model(tok)).abs().max().item()


@pytest.mark.parametrize("task", ["distance", "count"])
@pytest.mark.parametrize("pe", PES)
def test_paper_code_model_matches_the_reference_logit_for_logit(pe, task):
    diff = max_diff(pe, task)
    print(f"{pe} {task}: max |logit diff| = {diff:.2e}")
    assert diff <= TOL


def test_the_distance_batch_has_padding():
    """Mean pooling over padding and unmasked padding are only tested if there is padding."""
    assert (tokens("distance") == 0).any(dim=1).float().mean() > 0.5


@pytest.mark.parametrize("pe,deviation", [
    ("nope", "ln_kv"), ("rope", "ln_kv"), ("partialrope:2", "ln_kv"),
    ("alibi", "slope_from_1"), ("mla", "true_rotation"), ("rope", "interleaved_table"),
    ("absolute", "final_ln"), ("relative", "masked_pool"),
])
def test_a_deliberate_deviation_fails_the_parity(pe, deviation):
    diff = max_diff(pe, "distance", deviation)
    print(f"{pe} with {deviation}: max |logit diff| = {diff:.2e}")
    assert diff > 100 * TOL


def test_the_old_paper_code_switches_were_not_exact():
    """posenc's earlier --paper-code (LN1 on the K/V input, posenc's own model) differs."""
    ref = reference("nope")
    exact = posenc_model("nope", "distance", ref.state_dict())
    old = model_for(apply_overrides(preset("smoke", task="distance", pe="nope"),
                                    {**paper_code_fields(parse_spec("nope")), "model.code": "posenc"}))
    own = old.state_dict()
    old.load_state_dict({k: v[: own[k].shape[0]] for k, v in exact.state_dict().items() if k in own},
                        strict=False)  # its own ln_f stays at the identity-like init
    tok = tokens("distance")
    with torch.no_grad():
        assert (exact(tok) - ref(tok)).abs().max() <= TOL
        assert (old.eval()(tok)[:, :10] - ref(tok)[:, :10]).abs().max() > 100 * TOL


def test_the_mla_mix_is_not_a_rotation():
    """The paper code's MLA 'RoPE' changes norms (a rotation keeps them) and its q.k is not a
    function of the offset alone."""
    from posenc.empirical.model.pe.rotary import PaperCodeMix
    mix = PaperCodeMix(8, 10000.0)
    x = torch.randn(1, 1, 1, 8, dtype=torch.float64).expand(1, 1, 6, 8).contiguous()
    y = mix(x)
    ratio = y.norm(dim=-1) / x.norm(dim=-1)
    assert (ratio - 1).abs().max() > 1e-2
    q, k = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    rq = mix(q.expand(1, 1, 6, 8).contiguous())[0, 0]
    rk = mix(k.expand(1, 1, 6, 8).contiguous())[0, 0]
    logits = rq @ rk.T  # (6, 6)
    assert abs(logits[1, 0] - logits[2, 1]) > 1e-3  # same offset, different logit


def test_paper_code_mode_refuses_a_pe_its_code_does_not_have():
    from posenc.errors import PosencError
    with pytest.raises(PosencError, match="paper-code mode has no model"):
        paper_code_fields(parse_spec("alibi"))
    with pytest.raises(PosencError, match="kv_source"):
        apply_overrides(preset("smoke", pe="nope"), {"model.code": "paper"})


def test_dropout_sits_where_the_code_puts_it():
    """trans.py: dropout on the attention weights and after each residual branch; mla.py:
    after the GELU and after the MLP only."""
    def build(pe):
        spec = parse_spec(pe)
        cfg = apply_overrides(preset("smoke", pe=pe), {**paper_code_fields(spec), "model.dropout": 0.1})
        return model_for(cfg)
    block = build("paper-alibi").blocks[0]
    assert block.attn.dropout == 0.1 and block.drop_attn.p == 0.1 and block.drop.p == 0.1
    assert not any(isinstance(m, torch.nn.Dropout) for m in block.mlp)
    block = build("paper-mla").blocks[0]
    assert block.attn.dropout == 0.0 and block.drop_attn.p == 0.0 and block.drop.p == 0.1
    assert isinstance(block.mlp[2], torch.nn.Dropout) and block.mlp[2].p == 0.1


@pytest.mark.parametrize("command", [["derive", "paper-mla"], ["derive", "mla:rope=paper_code"],
                                     ["bound", "paper-mla", "--n", "8"]])
def test_derive_and_bound_say_the_paper_mla_is_not_toeplitz(command, capsys):
    """No Toeplitz form is printed for the paper code's MLA: one error line saying why."""
    from posenc.cli import main
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "not a rotation" in err and "not Toeplitz" in err and err.count("\n") == 1
    from posenc.encodings import derivable_entries
    assert "paper-mla" not in dict(derivable_entries()) and parse_spec("mla").has_toeplitz_form
