"""The fast path's door (posenc.empirical.fast.forward) against the reference forward
(``model(tokens)``, posenc.empirical.model.transformer): logits and every parameter gradient in float64, for
every catalogue entry (posenc.encodings.all_entries) under every preset's model switches, the
paper-code mode where the entry has one (for every PE but MLA: padding not masked, an ordinary
token, so the door runs one dense row per example; MLA: packed), the causal mask and keys / values
from the input, on batches with padding of varied lengths (trailing padding included) and
without padding.

A PE the fast path does not know falls back to the reference with a logged reason; training
picks the path by ``TrainConfig.step``.  (The Toeplitz condition for merging rows:
tests/test_fast_toeplitz.py; the import boundary: tests/test_layers.py.)
"""

import dataclasses
import importlib
import logging

import pytest
import torch
import torch.nn.functional as F

from posenc.empirical import fast
from posenc.empirical.config import PRESET_NAMES, ModelConfig, TrainConfig, preset
from posenc.empirical.model.transformer import build_model
from posenc.empirical.paper_specs import paper_code_fields, paper_code_problem
from posenc.encodings import all_entries, parse_spec
from rope_scaling_reference import scaled_specs
from posenc.errors import PosencError

#: every entry, and two scaled RoPEs (the fast path rotates by the module's phasors, which carry
#: the attention factor: interleaved on every head, and half pairing on one head)
ENTRIES = list(all_entries()) + [(t, parse_spec(t)) for t in scaled_specs(planes=4)
                                 if t.startswith(("rope:pairing=half", "rope:scaling=yarn"))]
#: the model switches a preset or paper-code mode sets (sizes are shrunk below)
SWITCHES = ("dropout", "activation", "kv_source", "causal", "mask_padding", "code")
T = 11
#: entries also run with padding unmasked alone (paper-code mode covers it with its other
#: switches; MLA's paper-code model masks padding, so only this case runs it unmasked)
UNMASKED = ("rope", "relative_bias", "mla", "xpos")


def _cases():
    cases = []
    for name, spec in ENTRIES:
        pe = spec.to_string()
        for p in PRESET_NAMES:
            m = preset(p, pe=pe).model
            cases.append((name, pe, p, {k: getattr(m, k) for k in SWITCHES}))
        cases.append((name, pe, "causal", {"causal": True}))
        cases.append((name, pe, "kv-input", {"kv_source": "input"}))
        if name in UNMASKED:
            cases.append((name, pe, "unmasked", {"mask_padding": False}))
        if paper_code_problem(spec) is None:
            cases.append((name, pe, "paper-code", {k.split(".", 1)[1]: v
                                                   for k, v in paper_code_fields(spec).items()}))
    return cases


CASES = _cases()


def _model(pe, **kw):
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, d_model=16, n_heads=2, n_layers=2, d_ff=24, **kw)
    vocab = 11 if cfg.code != "paper" else 12  # paper code: classes = vocabulary
    m = build_model(cfg, vocab_size=vocab, n_classes=5, max_len=20).double()
    with torch.no_grad():  # larger than init, learned biases included: O(1) differences matter
        for p in m.parameters():
            p.normal_(0.0, 0.5)
    return m.train(not cfg.dropout)  # dropout draws differ by layout: eval when it is on


def _tokens(padded: bool):
    tok = torch.randint(1, 11, (6, T), generator=torch.Generator().manual_seed(3))
    if padded:  # varied lengths; the last two columns padding in every example
        for b, n in enumerate([9, 3, 7, 1, 5, 2]):
            tok[b, n:] = 0
    return tok


@pytest.mark.parametrize("padded", [True, False], ids=["padded", "dense"])
@pytest.mark.parametrize("name,pe,where,kw", CASES, ids=[f"{n}-{w}" for n, _, w, _ in CASES])
def test_fast_forward_equals_the_reference_in_float64(name, pe, where, kw, padded):
    model, tok = _model(pe, **kw), _tokens(padded)
    assert fast.why_not(model, tok) is None  # the fast path covers it: no fallback
    y = torch.arange(6) % 5
    params = list(model.parameters())
    got, want = fast.forward(model, tok, offset=1), model(tok, offset=1)
    assert torch.allclose(got, want, rtol=1e-10, atol=1e-10), (got - want).abs().max()
    g_got = torch.autograd.grad(F.cross_entropy(got, y), params, allow_unused=True)
    g_want = torch.autograd.grad(F.cross_entropy(want, y), params, allow_unused=True)
    for (name, _), a, b in zip(model.named_parameters(), g_got, g_want):
        assert (a is None) == (b is None), name
        if a is not None:
            assert torch.allclose(a, b, rtol=1e-8, atol=1e-10), (name, (a - b).abs().max())


@pytest.mark.parametrize("pe,kw", [
    ("paper-rope", "paper"), ("paper-relative", "paper"), ("paper-alibi", "paper"),
    ("rope", {}), ("relative_bias", {"causal": True}), ("alibi", {"kv_source": "input"})])
def test_the_attention_in_chunks_equals_the_reference(monkeypatch, pe, kw):
    """Every attention row a chunk of its own (CHUNK_ABOVE and CHUNK_SCORES 0), P recomputed in
    the backward (the paper code's 128-token rows run in chunks); through PackedAttention (keys
    and values from the input), the block stack (merged rows' block masks) and a learned bias's
    gradient."""
    monkeypatch.setattr(fast.packed_attention, "CHUNK_ABOVE", 0)
    monkeypatch.setattr(fast.packed_attention, "CHUNK_SCORES", 0)
    if kw == "paper":
        kw = {k.split(".", 1)[1]: v for k, v in paper_code_fields(parse_spec(pe)).items()}
    model, tok, y = _model(pe, **kw), _tokens(True), torch.arange(6) % 5
    got, want = fast.forward(model, tok), model(tok)
    assert torch.allclose(got, want, rtol=1e-10, atol=1e-10), (got - want).abs().max()
    params = list(model.parameters())
    for a, b in zip(torch.autograd.grad(F.cross_entropy(got, y), params),
                    torch.autograd.grad(F.cross_entropy(want, y), params)):
        assert torch.allclose(a, b, rtol=1e-8, atol=1e-10), (a - b).abs().max()


@pytest.fixture
def fresh_log(monkeypatch):
    monkeypatch.setattr(fast, "_logged", set())


def test_a_pe_the_fast_path_does_not_know_falls_back_loudly(monkeypatch, caplog, fresh_log):
    """A part kind outside fast.COVERED_PART_KINDS (here: rope, as if new) runs the reference, bit
    for bit, with a warning naming it -- once per reason."""
    monkeypatch.setattr(fast, "COVERED_PART_KINDS", fast.COVERED_PART_KINDS - {"rope"})
    model, tok = _model("rope"), _tokens(True)
    with caplog.at_level(logging.INFO, logger="posenc.fast"):
        got = fast.forward(model, tok)
        fast.forward(model, tok)
    assert torch.equal(got, model(tok))
    warnings = [r for r in caplog.records if r.name == "posenc.fast"]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert "rope" in warnings[0].getMessage() and "not covered" in warnings[0].getMessage()


def test_an_unknown_attention_module_falls_back_loudly(monkeypatch, caplog, fresh_log):
    model, tok = _model("alibi"), _tokens(True)
    monkeypatch.setattr(fast, "COVERED_ATTENTION_TYPES", ())
    with caplog.at_level(logging.WARNING, logger="posenc.fast"):
        assert torch.equal(fast.forward(model, tok), model(tok))
    assert "no packed forward" in caplog.text


def test_by_design_fallbacks_are_logged_at_info(caplog, fresh_log):
    model = _model("rope")
    model.blocks[0].hook_resid_pre.add_hook(lambda x, hook: x)
    with caplog.at_level(logging.INFO, logger="posenc.fast"):
        assert torch.equal(fast.forward(model, _tokens(True)), model(_tokens(True)))
    assert "hook" in caplog.text and not any(r.levelno >= logging.WARNING for r in caplog.records)


def test_every_catalogue_kind_is_covered():
    """A new part kind must be added to fast.COVERED_PART_KINDS (after these tests pass for it)."""
    kinds = {p.kind for _, spec in ENTRIES for p in spec.parts()}
    assert kinds <= fast.COVERED_PART_KINDS


def test_the_step_field():
    cfg = preset("smoke")
    assert cfg.step == "fast" and "step" not in cfg.to_dict()  # run ids stay valid
    ref = cfg.replace(step="reference")
    assert ref.to_dict()["step"] == "reference" and ref.run_id() != cfg.run_id()
    with pytest.raises(PosencError, match="step must be fast or reference"):
        TrainConfig(step="packed")


@pytest.mark.parametrize("step", ["fast", "reference"])
def test_training_takes_the_step_it_is_given(monkeypatch, tmp_path, step):
    train_module = importlib.import_module("posenc.empirical.training.train")
    calls = []
    real = fast.forward
    monkeypatch.setattr(train_module, "fast_forward", lambda *a, **k: calls.append(1) or real(*a, **k))
    cfg = preset("smoke", seed=0).replace(epochs=1, step=step)
    cfg = cfg.replace(task=dataclasses.replace(cfg.task, n_samples=300))
    train_module.train(cfg, tmp_path / "run", progress=False)
    assert bool(calls) == (step == "fast")
    opt = train_module.make_optimizer(build_model(cfg.model, 16, 20, 20), cfg)
    assert bool(opt.defaults["fused"]) == (step == "fast")
