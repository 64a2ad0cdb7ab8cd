"""``spec_from_hf_config``: a local config.json -> the exact catalogue spec,
per architecture; every position field it cannot state is refused in one line naming it, and a
position key transformers' code ignores is ignored with a note.
No transformers here (tests/encodings/test_hf_config_transformers.py compares with it)."""

from __future__ import annotations

import json

import pytest

from posenc.encodings import RoPE, parse_spec
from posenc.encodings.hf_config import MAPPERS, spec_from_hf_config
from posenc.errors import PosencError

LONG = [1.0 + m / 10 for m in range(32)]          # longrope factors for 64 rotary dims

#: (config, expected spec, expected head dim, expected heads)
CASES = {
    "llama": ({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
               "rope_theta": 500000.0, "vocab_size": 128256, "intermediate_size": 1024},
              "rope:base=500000,pairing=half", 64, 4),
    "llama3.1": ({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
                  "rope_theta": 500000.0, "max_position_embeddings": 131072,
                  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                   "original_max_position_embeddings": 8192,
                                   "rope_type": "llama3"}},
                 "rope:base=500000,pairing=half,scaling=llama3,factor=8,original=8192", 64, 4),
    "llama rope_parameters (transformers 5)": (
        {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
         "rope_parameters": {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}},
        "rope:pairing=half,scaling=linear,factor=4", 64, 4),
    "llama dynamic": ({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
                       "max_position_embeddings": 2048,
                       "rope_scaling": {"type": "dynamic", "factor": 2.0}},
                      "rope:pairing=half,scaling=dynamic,factor=2,original=2048,seq_len=2048",
                      64, 4),
    "mistral head_dim": ({"model_type": "mistral", "hidden_size": 256, "num_attention_heads": 4,
                          "head_dim": 32, "rope_theta": 1000000.0, "sliding_window": 4096},
                         "rope:base=1000000,pairing=half", 32, 4),
    "qwen2 yarn": ({"model_type": "qwen2", "hidden_size": 256, "num_attention_heads": 4,
                    "rope_theta": 1000000.0,
                    "rope_scaling": {"type": "yarn", "factor": 4.0,
                                     "original_max_position_embeddings": 32768}},
                   "rope:base=1000000,pairing=half,scaling=yarn,factor=4,original=32768", 64, 4),
    "qwen3 default head_dim": ({"model_type": "qwen3", "hidden_size": 256,
                                "num_attention_heads": 4, "rope_theta": 1000000.0},
                               "rope:base=1000000,pairing=half", 128, 4),     # not 256 / 4
    "gemma default head_dim": ({"model_type": "gemma", "hidden_size": 2048,
                                "num_attention_heads": 8},
                               "rope:pairing=half", 256, 8),
    "gpt_neox legacy": ({"model_type": "gpt_neox", "hidden_size": 256, "num_attention_heads": 4,
                         "rotary_pct": 0.25, "rotary_emb_base": 10000, "use_parallel_residual": True},
                        "rope:fraction=0.25,pairing=half", 64, 4),
    "gpt_neox default": ({"model_type": "gpt_neox", "hidden_size": 256, "num_attention_heads": 4},
                         "rope:fraction=0.25,pairing=half", 64, 4),
    "phi-2": ({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
               "partial_rotary_factor": 0.4, "rope_theta": 10000.0, "rope_scaling": None},
              "rope:fraction=0.4,pairing=half", 80, 32),
    "phi3 longrope": ({"model_type": "phi3", "hidden_size": 256, "num_attention_heads": 4,
                       "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
                       "rope_scaling": {"type": "longrope", "short_factor": LONG,
                                        "long_factor": [2 * f for f in LONG]}},
                      RoPE(pairing="half", scaling="longrope", factor=32.0, original=4096,
                           short_factor=tuple(LONG),
                           long_factor=tuple(2 * f for f in LONG)).to_string(), 64, 4),
    "phi3 class default original": (
        {"model_type": "phi3", "hidden_size": 256, "num_attention_heads": 4,
         "max_position_embeddings": 16384,
         "rope_scaling": {"type": "longrope", "short_factor": LONG, "long_factor": LONG,
                          "original_max_position_embeddings": 2048}},
        RoPE(pairing="half", scaling="longrope", factor=4.0, original=4096,  # Phi3Config's 4096
             short_factor=tuple(LONG), long_factor=tuple(LONG)).to_string(), 64, 4),
    "gptj": ({"model_type": "gptj", "n_embd": 256, "n_head": 4, "rotary_dim": 16,
              "n_positions": 512},
             "rope:fraction=0.25", 64, 4),
    "falcon rotary": ({"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 4,
                       "alibi": False, "rope_theta": 10000.0},
                      "rope:pairing=half", 64, 4),
    "falcon alibi": ({"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 4,
                      "alibi": True, "rope_theta": 10000.0},
                     "alibi:direction=causal", 64, 4),
    "bloom": ({"model_type": "bloom", "hidden_size": 64, "n_head": 8}, "alibi:direction=causal",
              8, 8),
    "mpt": ({"model_type": "mpt", "d_model": 256, "n_heads": 4, "max_seq_len": 2048,
             "learned_pos_emb": True, "attn_config": {"alibi": True, "alibi_bias_max": 8}},
            "alibi:direction=causal", 64, 4),
    "t5": ({"model_type": "t5", "d_model": 512, "d_kv": 64, "num_heads": 8, "n_positions": 512,
            "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128},
           "relative_bias", 64, 8),
    "t5 buckets": ({"model_type": "t5", "relative_attention_num_buckets": 16,
                    "relative_attention_max_distance": 64},
                   "relative_bias:num_buckets=16,max_distance=64", 64, 8),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_architecture_maps_to_its_exact_spec(name):
    config, want, head_dim, heads = CASES[name]
    spec, info = spec_from_hf_config(config)
    assert spec == want
    assert (info["head_dim"], info["heads"]) == (head_dim, heads)
    assert parse_spec(spec).to_string() == spec                 # the catalogue's own parser
    assert info["model_type"] == config["model_type"]


def test_every_supported_model_type_has_a_case():
    """A case here or a fixture config.json (tests/encodings/test_hf_fixtures.py)."""
    from pathlib import Path

    from posenc.encodings.hf_config import WRAPPERS

    fixtures = {json.loads(p.read_text())["model_type"]
                for p in (Path(__file__).parent / "hf_configs").glob("*.json")}
    covered = {c[0]["model_type"] for c in CASES.values()} | {WRAPPERS.get(m, m) for m in fixtures}
    assert covered == set(MAPPERS)


def test_a_file_and_its_folder_give_the_same_spec(tmp_path):
    config = CASES["qwen2 yarn"][0]
    (tmp_path / "config.json").write_text(json.dumps(config))
    spec, info = spec_from_hf_config(tmp_path / "config.json")
    assert spec == CASES["qwen2 yarn"][1] and info["source"].endswith("config.json")
    assert spec_from_hf_config(str(tmp_path))[0] == spec


def test_keys_unrelated_to_position_are_ignored_and_equal_sources_agree():
    base = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4}
    noisy = {**base, "vocab_size": 7, "intermediate_size": 9, "rms_norm_eps": 1e-6,
             "tie_word_embeddings": True, "torch_dtype": "bfloat16", "architectures": ["X"]}
    assert spec_from_hf_config(noisy)[0] == spec_from_hf_config(base)[0] == "rope:pairing=half"
    both = {**base, "rope_theta": 500000, "rope_parameters": {"rope_theta": 500000.0}}
    assert spec_from_hf_config(both)[0] == "rope:base=500000,pairing=half"


def test_yarn_mscale_becomes_the_attention_factor_transformers_computes():
    config = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
              "rope_scaling": {"type": "yarn", "factor": 40.0, "mscale": 1.0,
                               "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096}}
    spec = parse_spec(spec_from_hf_config(config)[0])
    import math
    want = (0.1 * math.log(40) + 1) / (0.1 * 0.707 * math.log(40) + 1)
    assert spec.attention_factor == pytest.approx(want, rel=1e-12)


def test_length_dependent_scalings_say_the_length_they_are_stated_for():
    config = CASES["llama dynamic"][0]
    spec, info = spec_from_hf_config(config, seq_len=10000)
    assert spec.endswith("seq_len=10000") and not info["notes"]
    assert "max_position_embeddings=2048" in spec_from_hf_config(config)[1]["notes"][0]


#: (config, the spec without the ignored keys, the note's words): keys transformers' code for the
#: model type does not read -- real bloom-560m configs carry offset_alibi, gpt-j-6b's rotary
IGNORED = {
    "bloom offset_alibi": ({"model_type": "bloom", "n_head": 16, "hidden_size": 1024,
                            "offset_alibi": 100}, "offset_alibi"),
    "gptj rotary": ({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary": True,
                     "rotary_dim": 64}, "rotary"),
    "gptj rope_theta": ({"model_type": "gptj", "rope_theta": 500000.0}, "rope_theta"),
    "llama position_embedding_type": ({"model_type": "llama", "position_embedding_type":
                                       "absolute"}, "position_embedding_type"),
    "qwen2 mrope_section": ({"model_type": "qwen2", "rope_scaling": {
        "type": "default", "mrope_section": [16, 24, 24]}}, "rope_parameters.mrope_section"),
    "mpt attn_config.rope": ({"model_type": "mpt", "attn_config": {"alibi": True, "rope": False,
                                                                   "rope_theta": 10000}},
                             "attn_config.rope, attn_config.rope_theta"),
}


@pytest.mark.parametrize("name", list(IGNORED))
def test_keys_transformers_ignores_are_ignored_with_a_note(name):
    config, keys = IGNORED[name]
    top = [k for k in keys.split(", ") if "." not in k]
    plain = {k: v for k, v in config.items() if k not in top}
    if "rope_scaling" in config:
        plain["rope_scaling"] = {"type": "default"}
    if "attn_config" in config:
        plain["attn_config"] = {"alibi": True}
    spec, info = spec_from_hf_config(config)
    assert spec == spec_from_hf_config(plain)[0]
    notes = [n for n in info["notes"] if n.startswith("ignored ")]
    assert len(notes) == 1 and keys in notes[0] and "does not read" in notes[0], info["notes"]


REFUSED = {
    "no model_type": ({"hidden_size": 8}, "no model_type"),
    # without transformers: not supported; with it: MambaConfig has no rope_parameters
    "unknown model_type": ({"model_type": "mamba"}, "model_type 'mamba' is not"),
    "rope type": ({"model_type": "llama", "rope_scaling": {"type": "su", "factor": 2.0}},
                  "rope_type='su'"),
    "two bases": ({"model_type": "llama", "rope_theta": 10000,
                   "rope_parameters": {"rope_theta": 500000}}, "rope_parameters.rope_theta, "
                                                               "rope_theta"),
    "two neox bases": ({"model_type": "gpt_neox", "rope_theta": 10000, "rotary_emb_base": 20000},
                       "rope_theta, rotary_emb_base"),
    "per-layer rope": ({"model_type": "llama", "rope_parameters": {
        "full_attention": {"rope_type": "default"}}}, "rope_parameters[full_attention]"),
    "yarn truncate": ({"model_type": "llama", "rope_scaling": {
        "type": "yarn", "factor": 4.0, "truncate": False}}, "rope_parameters.truncate"),
    "llama3 keys": ({"model_type": "llama", "rope_scaling": {"type": "llama3", "factor": 8.0}},
                    "low_freq_factor, high_freq_factor"),
    "partial llama": ({"model_type": "llama", "partial_rotary_factor": 0.5},
                      "partial_rotary_factor"),
    "odd rotary dims": ({"model_type": "phi", "hidden_size": 256, "num_attention_heads": 4,
                         "partial_rotary_factor": 0.3}, "partial_rotary_factor"),
    "mpt without alibi": ({"model_type": "mpt", "attn_config": {"alibi": False}},
                          "attn_config.alibi"),
    "mpt bias max": ({"model_type": "mpt", "attn_config": {"alibi_bias_max": 16}},
                     "attn_config.alibi_bias_max"),
    "t5 decoder": ({"model_type": "t5", "is_decoder": True}, "is_decoder"),
    "falcon alibi + scaling": ({"model_type": "falcon", "alibi": True,
                                "rope_scaling": {"type": "linear", "factor": 2.0}},
                               "alibi, rope_parameters"),
    "bad theta": ({"model_type": "llama", "rope_theta": "big"}, "rope_theta"),
    "infinite length": ({"model_type": "llama", "max_position_embeddings": float("inf"),
                         "rope_scaling": {"type": "dynamic", "factor": 2.0}},
                        "max_position_embeddings"),
    "indivisible width": ({"model_type": "llama", "hidden_size": 100, "num_attention_heads": 3},
                          "hidden_size, num_attention_heads"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_the_catalogue_cannot_state_is_one_line_naming_the_field(name):
    config, named = REFUSED[name]
    with pytest.raises(PosencError) as exc:
        spec_from_hf_config(config)
    text = str(exc.value)
    assert named in text and "\n" not in text, text


@pytest.mark.parametrize("content, words", [
    ("{bad", "not valid JSON"), ("[1, 2]", "JSON list, not an object"), (None, "no such file")])
def test_a_bad_file_is_one_line(tmp_path, content, words):
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(PosencError, match=words) as exc:
        spec_from_hf_config(path)
    assert "\n" not in str(exc.value)
