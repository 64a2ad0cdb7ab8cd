"""``check --from-hf`` on models whose layers differ in position (Gemma 3: sliding layers with
RoPE base 10^4, full layers with 10^6; Llama 4: RoPE and NoPE layers): without ``--hf-layers``
every layer group is checked in turn, with it the one named; transformers' code is found for the
text model types of multimodal models (``gemma3_text`` lives in transformers.models.gemma3,
``llama4_text`` in transformers.models.llama4), and a Gemma 3 rotary embedding is asked for the
layer type checked.  Before: ``check`` told the user to pass ``--hf-layers``, which it did not
take, and a forced group ended in a ModuleNotFoundError traceback."""

from __future__ import annotations

import json

import pytest

transformers = pytest.importorskip("transformers")

from posenc.checker.hf_code import check_hf, check_hf_groups, module_name, rotary_function  # noqa: E402
from posenc.cli import main  # noqa: E402

SMALL_GEMMA3 = dict(hidden_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                    num_hidden_layers=3, intermediate_size=64, vocab_size=64,
                    layer_types=["sliding_attention", "sliding_attention", "full_attention"])


def write(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("model_type, folder", [("gemma3_text", "gemma3"), ("llama4_text", "llama4"),
                                                ("gemma3", "gemma3"), ("llama", "llama"),
                                                ("gpt_neox", "gpt_neox")])
def test_model_types_map_to_transformers_module_folders(model_type, folder):
    assert module_name(model_type) == folder


def test_the_default_gemma3_text_config_is_checked_group_by_group(tmp_path, capsys):
    path = write(tmp_path, transformers.Gemma3TextConfig().to_dict())
    code, out, err = run(capsys, "check", "--from-hf", path)
    assert code == 0, err
    assert "## layer group sliding_attention (22 of 26 layers)" in out
    assert "## layer group full_attention (4 of 26 layers)" in out
    assert out.count("\nconforms") == 2 and "every group checked conforms" in out
    assert "rope:base=1000000,pairing=half (gemma3_text, head dim 256, 8 heads)" in err
    assert "--hf-layers" not in err          # no advice to pass an option


def test_the_multimodal_gemma3_configs_text_config_is_checked(tmp_path, capsys):
    data = transformers.Gemma3Config(text_config=SMALL_GEMMA3).to_dict()
    assert data["model_type"] == "gemma3"
    code, out, err = run(capsys, "check", "--from-hf", write(tmp_path, data), "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and "text_config" in err
    assert [(g["layers"], g["layer_count"]) for g in report["groups"]] == [
        ("sliding_attention", 2), ("full_attention", 1)]


@pytest.mark.parametrize("group, base", [("sliding_attention", 10000), ("full_attention", 1000000)])
def test_a_forced_group_checks_that_layer_types_code(tmp_path, capsys, group, base):
    path = write(tmp_path, transformers.Gemma3TextConfig(**SMALL_GEMMA3).to_dict())
    code, out, _ = run(capsys, "check", "--from-hf", path, "--hf-layers", group)
    assert code == 0 and "layer group" not in out and f"layer_type={group!r}" in out
    # the code of this layer type rotates with this base: another expectation fails
    other = 1000000 if base == 10000 else 10000
    code, out, _ = run(capsys, "check", "--from-hf", path, "--hf-layers", group, "--expect",
                       f"base={other}")
    assert code == 1 and "DOES NOT CONFORM" in out
    assert run(capsys, "check", "--from-hf", path, "--hf-layers", group, "--expect",
               f"base={base}")[0] == 0


def test_the_rotary_function_of_each_gemma3_layer_type_differs():
    import numpy as np
    data = transformers.Gemma3TextConfig(**SMALL_GEMMA3).to_dict()
    x = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    pos = np.arange(5)
    slide = rotary_function(data, 16, "sliding_attention")(x, pos).numpy()
    full = rotary_function(data, 16, "full_attention")(x, pos).numpy()
    assert np.allclose(slide[0], x[0]) and np.allclose(full[0], x[0])     # position 0
    assert not np.allclose(slide[1:], full[1:], atol=1e-3)


def test_check_hf_takes_a_layer_group_and_names_it(tmp_path):
    data = transformers.Gemma3TextConfig(**SMALL_GEMMA3).to_dict()
    report, spec, info = check_hf(data, layers="full_attention")
    assert report.ok and spec == "rope:base=1000000,pairing=half"
    assert report.summary["from_hf"]["layers"] == "full_attention"
    results = check_hf_groups(data)
    assert [g for g, _, _ in results] == ["sliding_attention", "full_attention"]


def test_llama4_checks_its_rope_layers_and_says_why_not_its_nope_layers(tmp_path, capsys):
    data = transformers.Llama4TextConfig(hidden_size=64, num_attention_heads=4, head_dim=16,
                                         num_hidden_layers=4, intermediate_size=64,
                                         intermediate_size_mlp=64).to_dict()
    path = write(tmp_path, data)
    code, out, _ = run(capsys, "check", "--from-hf", path, "--json")
    groups = {g["layers"]: g for g in json.loads(out)["groups"]}
    assert code == 0 and groups["rope"]["checked"] and groups["rope"]["ok"]
    assert "interleaved" in json.dumps(groups["rope"]["properties"])
    assert not groups["nope"]["checked"] and "attn_temperature_tuning" in groups["nope"]["why"]
    code, out, _ = run(capsys, "check", "--from-hf", path, "--hf-layers", "rope", "--expect",
                       "pairing=half")
    assert code == 1                           # its complex multiply pairs (2m, 2m+1)


@pytest.mark.parametrize("args, words", [
    (["--hf-layers", "middle"], "layers='middle': not a layer group of this gemma3_text; its "
                                "groups: sliding_attention, full_attention"),
    (["--hf-layers", "full_attention", "--kind", "rope"], "--kind not taken"),
])
def test_bad_layer_groups_are_one_line(tmp_path, capsys, args, words):
    path = write(tmp_path, transformers.Gemma3TextConfig(**SMALL_GEMMA3).to_dict())
    code, out, err = run(capsys, "check", "--from-hf", path, *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err, err


@pytest.mark.parametrize("command", [["check"], ["bound", "--n", "8"], ["derive"]])
def test_a_layer_group_of_a_model_without_groups_is_refused(tmp_path, capsys, command):
    path = write(tmp_path, {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2})
    code, out, err = run(capsys, *command, "--from-hf", path, "--hf-layers", "full_attention")
    assert code == 2 and out == "" and "layers='full_attention': a llama's layers share one " \
                                       "position encoding" in err and err.count("\n") == 1, err
