"""``spec_from_hf_config`` against transformers itself: for each config of
tests/encodings/test_hf_config.py, the spec's frequencies and attention factor (posenc.numerics)
equal those of the model's own rotary embedding built from the same config -- its
``inv_freq`` and ``attention_scaling``, i.e. ``ROPE_INIT_FUNCTIONS[rope_type]`` for a scaled one
-- and an ALiBi spec's slopes equal Bloom's / MPT's / Falcon's.  The class defaults the mapping
assumes for missing keys are transformers' own.  Skipped without transformers.

Tolerance: transformers computes frequencies in float32 (1e-5 relative, as
tests/test_rope_scaling_transformers.py)."""

from __future__ import annotations

import importlib
import logging

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from posenc.encodings import parse_spec  # noqa: E402
from posenc.encodings.hf_config import MAPPERS, spec_from_hf_config  # noqa: E402
from posenc.numerics.conventions import alibi_slopes, rope_attention_factor, rope_frequencies  # noqa: E402

from test_hf_config import CASES  # noqa: E402

logging.getLogger("transformers").setLevel(logging.ERROR)


def hf_config(data):
    return transformers.AutoConfig.for_model(data["model_type"], **{
        k: v for k, v in data.items() if k != "model_type"})


def module(model_type):
    return importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")


def hf_rotary(data):
    """(inv_freq, attention factor) of the model's rotary embedding for this config."""
    config = hf_config(data)
    mod = module(data["model_type"])
    if data["model_type"] == "gptj":                    # a sin | cos table: read position 1
        emb = mod.GPTJRotaryEmbedding(config)
        sin = emb.embed_positions[1, : emb.embed_positions.shape[1] // 2].double()
        return torch.asin(sin).numpy(), 1.0
    (name,) = [n for n in dir(mod) if n.endswith("RotaryEmbedding")]
    emb = getattr(mod, name)(config)
    return emb.inv_freq.double().numpy(), float(emb.attention_scaling)


ROTARY = [n for n, c in CASES.items() if c[1].startswith("rope")]


@pytest.mark.parametrize("name", ROTARY)
def test_the_spec_has_the_frequencies_of_transformers_own_rotary_embedding(name):
    data = CASES[name][0]
    spec_text, info = spec_from_hf_config(data)
    spec = parse_spec(spec_text)
    inv_freq, s = hf_rotary(data)
    ours = rope_frequencies(spec, info["head_dim"])
    assert ours.shape == inv_freq.shape == (info["rotary_dims"] // 2,)
    np.testing.assert_allclose(ours, inv_freq, rtol=1e-5, atol=0)
    assert rope_attention_factor(spec) == pytest.approx(s, rel=1e-12)


@pytest.mark.parametrize("name, kind, seq_len", [
    ("llama3.1", "llama3", None), ("qwen2 yarn", "yarn", None),
    ("llama rope_parameters (transformers 5)", "linear", None),
    ("phi3 longrope", "longrope", None), ("phi3 longrope", "longrope", 5000),
    ("phi3 class default original", "longrope", 5000),
    ("llama dynamic", "dynamic", 2048), ("llama dynamic", "dynamic", 9000)])
def test_scaled_specs_equal_rope_init_functions(name, kind, seq_len):
    """ROPE_INIT_FUNCTIONS at the length the spec states (longrope past its original length:
    the long factors; dynamic past max_position_embeddings: a larger base)."""
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    data = CASES[name][0]
    spec_text, info = spec_from_hf_config(data, seq_len=seq_len)
    spec = parse_spec(spec_text)
    inv_freq, s = rope_utils.ROPE_INIT_FUNCTIONS[kind](hf_config(data), "cpu", seq_len=seq_len)
    np.testing.assert_allclose(rope_frequencies(spec, info["head_dim"]),
                               inv_freq.double().numpy(), rtol=1e-5, atol=0)
    assert rope_attention_factor(spec) == pytest.approx(float(s), rel=1e-12)


@pytest.mark.parametrize("heads", [1, 4, 8, 12, 16, 20])
@pytest.mark.parametrize("name", ["bloom", "mpt", "falcon alibi"])
def test_alibi_specs_have_the_models_slopes(name, heads):
    data = CASES[name][0]
    spec = parse_spec(spec_from_hf_config(data)[0])
    n = 6
    if data["model_type"] == "mpt":
        bias = module("mpt").build_mpt_alibi_tensor(heads, n)[:, 0]            # slope (j - n + 1)
        slopes = (bias[:, -1] - bias[:, -2]).double().numpy()
    else:
        bias = module(data["model_type"]).build_alibi_tensor(
            torch.ones(1, n, dtype=torch.long), heads, torch.float32)[:, 0]     # slope j
        slopes = bias[:, 1].double().numpy()
    rtol = 1e-2 if data["model_type"] == "falcon" else 1e-6                  # bfloat16 slopes
    np.testing.assert_allclose(alibi_slopes(heads, spec.slopes), slopes, rtol=rtol)


#: Models of several layer groups: the group the default tests state.
GROUP = {"gemma3_text": "full_attention", "llama4_text": "rope"}


@pytest.mark.parametrize("model_type", sorted(MAPPERS))
def test_the_assumed_class_defaults_are_transformers_own(model_type):
    """A config.json that states only model_type: the mapping's head dim, heads and spec are
    those of transformers' config class at its defaults (saved with every key it has)."""
    layers = GROUP.get(model_type)
    bare = spec_from_hf_config({"model_type": model_type}, layers=layers)
    config = hf_config({"model_type": model_type})
    full = spec_from_hf_config(config.to_dict(), layers=layers)
    assert bare == full or (bare[0], bare[1]["head_dim"]) == (full[0], full[1]["head_dim"])
    heads = getattr(config, "num_attention_heads", None) or config.num_heads
    head_dim = getattr(config, "qk_head_dim", None) or getattr(config, "head_dim", None) \
        or getattr(config, "d_kv", None) or config.hidden_size // heads
    assert (bare[1]["head_dim"], bare[1]["heads"]) == (head_dim, heads)
    if bare[0].startswith("rope"):          # the length dynamic NTK and YaRN/LongRoPE read
        assert bare[1]["max_position_embeddings"] == config.max_position_embeddings


@pytest.mark.parametrize("model_type", sorted(MAPPERS))
def test_every_position_key_transformers_reads_is_read_and_no_other_is_refused(model_type):
    """TRANSFORMERS_READS holds the position keys of the model's config class (its parameters
    and the legacy rope keys the class converts), so a key outside it is one transformers'
    code ignores; and the mapping reads each of them (none is left to the "ignored" note)."""
    import inspect

    from posenc.encodings.hf_config import POSITIONAL, TRANSFORMERS_READS

    cls = transformers.AutoConfig.for_model(model_type).__class__
    params = set(inspect.signature(cls.__init__).parameters) | set(getattr(cls, "__annotations__", {}))
    params |= set(getattr(cls, "attribute_map", {}).values())
    legacy = {"rope_scaling", "rope_theta", "partial_rotary_factor"} if "rope_parameters" in params \
        else set()
    assert {k for k in params | legacy if POSITIONAL.search(k)} <= set(TRANSFORMERS_READS[model_type])
    config = {k: None for k in TRANSFORMERS_READS[model_type]}     # None: the class default
    config["model_type"] = model_type
    notes = spec_from_hf_config(config, layers=GROUP.get(model_type))[1]["notes"]
    assert not [n for n in notes if n.startswith("ignored ")], notes


FIXTURES = {"mixtral": None, "qwen2_moe": None, "olmo2": None, "starcoder2": None, "gemma2": None,
            "phi3": None, "deepseek_v3": None, "gemma3_text": "full_attention",
            "gemma3_text sliding": "sliding_attention"}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_fixtures_specs_have_transformers_own_frequencies(name):
    """tests/encodings/hf_configs: the spec's frequencies and attention factor are those of the
    model's own rotary embedding (Gemma 3: of the layer type stated)."""
    from pathlib import Path
    import json

    path = Path(__file__).parent / "hf_configs" / f"{name.split()[0]}.json"
    data = json.loads(path.read_text())
    spec_text, info = spec_from_hf_config(data, layers=FIXTURES[name])
    config = hf_config(data)
    mod = module("gemma3" if data["model_type"] == "gemma3_text" else data["model_type"])
    (cls,) = [n for n in dir(mod) if n.endswith("RotaryEmbedding")]
    emb = getattr(mod, cls)(config)
    prefix = f"{FIXTURES[name]}_" if FIXTURES[name] else ""
    inv_freq = getattr(emb, f"{prefix}inv_freq").double().numpy()
    s = getattr(emb, f"{prefix}attention_scaling")
    spec = parse_spec(spec_text)
    np.testing.assert_allclose(rope_frequencies(spec, info["head_dim"]), inv_freq, rtol=1e-5, atol=0)
    assert rope_attention_factor(spec) == pytest.approx(float(s), rel=1e-12)


@pytest.mark.parametrize("data, spec", [
    ({"model_type": "stablelm", "hidden_size": 256, "num_attention_heads": 4,
      "partial_rotary_factor": 0.25}, "rope:fraction=0.25,pairing=half"),
    ({"model_type": "granite", "hidden_size": 256, "num_attention_heads": 4,
      "rope_theta": 500000.0, "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
     "rope:base=500000,pairing=half,scaling=linear,factor=2")])
def test_a_model_type_outside_the_table_is_read_through_transformers(data, spec):
    """Its standardised rope parameters: the spec has the frequencies of the model's own rotary
    embedding."""
    got, info = spec_from_hf_config(data)
    assert got == spec and "not in --from-hf's table" in info["notes"][0]
    inv_freq, s = hf_rotary(data)
    np.testing.assert_allclose(rope_frequencies(parse_spec(got), info["head_dim"]), inv_freq,
                               rtol=1e-5, atol=0)


def test_a_model_type_without_rope_outside_the_table_is_refused_in_one_line():
    from posenc.errors import PosencError

    with pytest.raises(PosencError, match="RobertaConfig has no rope_parameters"):
        spec_from_hf_config({"model_type": "roberta"})
    with pytest.raises(PosencError, match="transformers refused the config"):
        spec_from_hf_config({"model_type": "no_such_model"})
