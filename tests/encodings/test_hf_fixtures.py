"""``--from-hf`` on one config.json per shipped model type: the fixtures in
hf_configs/ keep the position fields of the models' published config.json files (Llama 3.1 8B,
Mistral 7B v0.1, Mixtral 8x7B, Qwen2 7B, Qwen1.5-MoE-A2.7B, Qwen3 8B, Gemma 7B, Gemma 2 9B,
Gemma 3 1B, Phi-3 128k (its 48 longrope factors per list), OLMo 2 7B, StarCoder2 7B, Pythia 1B,
DeepSeek-V3, Llama 4 (class defaults), GPT-2, BERT base, BLOOM 560m, MPT 7B, Falcon 7B and
Falcon-RW 1B, T5 small); the mapped spec is asserted exactly, and what posenc cannot state is
refused in one line naming the field.  No transformers needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from posenc.cli import main
from posenc.encodings import parse_spec
from posenc.encodings.hf_config import spec_from_hf_config
from posenc.errors import PosencError

HERE = Path(__file__).parent / "hf_configs"

#: fixture -> (spec, head dim, heads)
MAPPED = {
    "llama": ("rope:base=500000,pairing=half,scaling=llama3,factor=8,original=8192", 128, 32),
    "mistral": ("rope:pairing=half", 128, 32),
    "mixtral": ("rope:base=1000000,pairing=half", 128, 32),
    "qwen2": ("rope:base=1000000,pairing=half", 128, 28),
    "qwen2_moe": ("rope:base=1000000,pairing=half", 128, 16),
    "qwen3": ("rope:base=1000000,pairing=half", 128, 32),
    "gemma": ("rope:pairing=half", 256, 16),
    "gemma2": ("rope:pairing=half", 256, 16),
    "olmo2": ("rope:base=500000,pairing=half", 128, 32),
    "starcoder2": ("rope:base=1000000,pairing=half", 128, 36),
    "gpt_neox": ("rope:fraction=0.25,pairing=half", 256, 8),
    "deepseek_v3": ("rope:fraction=0.3333333333333333,scaling=yarn,factor=40,attention_factor=1",
                    192, 128),
    "gpt2": ("learned_absolute:max_len=1024", 64, 12),
    "bert": ("learned_absolute", 64, 12),
    "bloom": ("alibi:direction=causal", 64, 16),
    "mpt": ("alibi:direction=causal", 128, 32),
    "falcon": ("rope:pairing=half", 64, 71),
    "falcon_alibi": ("alibi:direction=causal", 64, 32),
    "t5": ("relative_bias", 64, 8),
}


def load(name):
    return json.loads((HERE / f"{name}.json").read_text())


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_each_fixture_maps_to_its_spec(name):
    spec, info = spec_from_hf_config(HERE / f"{name}.json")
    assert (spec, info["head_dim"], info["heads"]) == MAPPED[name]
    assert parse_spec(spec).to_string() == spec


def test_phi3_longrope_keeps_its_48_factors_per_list():
    spec, info = spec_from_hf_config(HERE / "phi3.json")
    rope = parse_spec(spec)
    assert (info["head_dim"], rope.scaling, rope.factor, rope.original) == (96, "longrope", 32, 4096)
    assert list(rope.short_factor) == load("phi3")["rope_scaling"]["short_factor"]
    assert list(rope.long_factor) == load("phi3")["rope_scaling"]["long_factor"]


@pytest.mark.parametrize("name, layers, spec", [
    ("gemma3_text", "sliding_attention", "rope:pairing=half"),
    ("gemma3_text", "full_attention", "rope:base=1000000,pairing=half"),
    ("llama4", "rope", "rope:base=500000")])
def test_a_model_of_several_layer_groups_is_stated_per_group(name, layers, spec):
    got, info = spec_from_hf_config(HERE / f"{name}.json", layers=layers)
    assert got == spec and info["layers"] == layers
    assert sum(info["layer_groups"].values()) == load(name).get("num_hidden_layers", 48) or \
        name == "llama4"


def test_gemma3_full_layers_take_the_scaling_the_sliding_ones_do_not():
    data = {**load("gemma3_text"), "rope_scaling": {"rope_type": "linear", "factor": 8.0}}
    assert spec_from_hf_config(data, layers="full_attention")[0] == \
        "rope:base=1000000,pairing=half,scaling=linear,factor=8"
    assert spec_from_hf_config(data, layers="sliding_attention")[0] == "rope:pairing=half"
    nested = {**load("gemma3_text"), "rope_parameters": {             # transformers 5's form
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
    del nested["rope_scaling"]
    assert spec_from_hf_config(nested, layers="full_attention")[0] == \
        "rope:base=1000000,pairing=half,scaling=linear,factor=8"


def test_groups_of_one_spec_are_the_models_with_a_note_on_the_window():
    spec, info = spec_from_hf_config(HERE / "gemma2.json")
    assert info["layer_groups"] == {"sliding_attention": 21, "full_attention": 21}
    assert any("sliding_window=4096" in n for n in info["notes"])


@pytest.mark.parametrize("source, layers, words", [
    ("gemma3_text", None, "layer_types: the layers differ in position (sliding_attention (22 "
                          "layers): rope:pairing=half; full_attention (4 layers): "
                          "rope:base=1000000,pairing=half); state one group with --hf-layers"),
    ("llama4", None, "nope (12 layers): refused"),
    ("llama4", "nope", "attn_temperature_tuning: true: the NoPE layers scale the query"),
    ("gemma3_text", "rope", "layers='rope': not a layer group"),
    ({"model_type": "bert", "position_embedding_type": "relative_key"}, None,
     "position_embedding_type: 'relative_key'"),
    ({"model_type": "deepseek_v3", "rope_interleave": "yes"}, None, "rope_interleave: must be"),
    ({"model_type": "llama4", "text_config": 3}, None, "without a text_config object"),
])
def test_what_cannot_be_stated_is_one_line_naming_it(source, layers, words):
    with pytest.raises(PosencError) as exc:
        spec_from_hf_config(HERE / f"{source}.json" if isinstance(source, str) else source,
                            layers=layers)
    assert words in str(exc.value) and "\n" not in str(exc.value), str(exc.value)


def test_llama4_nope_layers_without_temperature_tuning_are_nope():
    data = load("llama4")
    data["text_config"]["attn_temperature_tuning"] = False
    assert spec_from_hf_config(data, layers="nope")[0] == "nope"


def test_derive_from_hf_of_phi3_longrope_exits_0_with_its_planes(capsys):
    code = main(["derive", "--from-hf", str(HERE / "phi3.json"), "--heads", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["derived_family"] == "multiplicative"
    planes = out["config_planes"]
    assert planes["head_dim"] == 96 and len(planes["theta"]) == 48
    short = load("phi3")["rope_scaling"]["short_factor"]
    assert planes["theta"][1] == pytest.approx(10000 ** (-2 / 96) / short[1], rel=1e-12)


def test_bound_takes_hf_layers_and_refuses_it_without_from_hf(capsys):
    code = main(["bound", "--from-hf", str(HERE / "gemma3_text.json"), "--hf-layers",
                 "full_attention", "--n", "8", "--json", "--plane-seeds", "0"])
    captured = capsys.readouterr()
    assert code == 0 and "rope:base=1000000,pairing=half (gemma3_text, head dim 256" in captured.err
    assert main(["bound", "rope", "--n", "8", "--hf-layers", "rope"]) == 2
    assert "--hf-layers goes with --from-hf" in capsys.readouterr().err


def test_without_transformers_a_type_outside_the_table_is_refused_naming_the_table(monkeypatch):
    from posenc.encodings import hf_transformers

    monkeypatch.setattr(hf_transformers, "available", lambda: False)
    with pytest.raises(PosencError) as exc:
        spec_from_hf_config({"model_type": "stablelm"})
    assert "'stablelm' is not supported by --from-hf; supported: bert, bloom" in str(exc.value)


def test_hf_config_imports_neither_torch_nor_transformers():
    import subprocess
    import sys

    code = ("import sys; import posenc.encodings.hf_config as h; "
            "h.spec_from_hf_config({'model_type': 'llama'}); "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
