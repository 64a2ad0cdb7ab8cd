"""``posenc check --from-hf config.json``: transformers' own rotary / ALiBi / T5
code, built from the config, checked against the spec the config maps to.  It passes for each
architecture; it fails when the expectation comes from an altered config (another rope_theta,
rotary_pct, scaling factor, bucket count) or an --expect that says otherwise; bad input is one
line and exit status 2.  Skipped without transformers."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from posenc.checker.hf_code import check_hf  # noqa: E402
from posenc.cli import main  # noqa: E402

LLAMA = {"model_type": "llama", "hidden_size": 128, "num_attention_heads": 4,
         "rope_theta": 500000.0}
CONFIGS = {
    "llama": LLAMA,
    "llama3": {**LLAMA, "max_position_embeddings": 131072,
               "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
    "mistral": {"model_type": "mistral", "hidden_size": 256, "num_attention_heads": 4,
                "head_dim": 32, "rope_theta": 1000000.0},
    "qwen2 yarn": {"model_type": "qwen2", "hidden_size": 128, "num_attention_heads": 4,
                   "rope_scaling": {"type": "yarn", "factor": 4.0,
                                    "original_max_position_embeddings": 4096}},
    "gemma": {"model_type": "gemma", "hidden_size": 128, "num_attention_heads": 4, "head_dim": 16},
    "dynamic": {**LLAMA, "max_position_embeddings": 512,
                "rope_scaling": {"type": "dynamic", "factor": 2.0}},
    "gpt_neox": {"model_type": "gpt_neox", "hidden_size": 128, "num_attention_heads": 2,
                 "rotary_pct": 0.25, "rotary_emb_base": 10000},
    "phi": {"model_type": "phi", "hidden_size": 320, "num_attention_heads": 4,
            "partial_rotary_factor": 0.4},
    "phi3 longrope": {"model_type": "phi3", "hidden_size": 128, "num_attention_heads": 4,
                      "max_position_embeddings": 8192, "original_max_position_embeddings": 1024,
                      "rope_scaling": {"type": "longrope",
                                       "short_factor": [1 + m / 8 for m in range(16)],
                                       "long_factor": [4.0] * 16}},
    "gptj": {"model_type": "gptj", "n_embd": 128, "n_head": 2, "rotary_dim": 16,
             "n_positions": 512},
    "falcon rotary": {"model_type": "falcon", "hidden_size": 128, "num_attention_heads": 4},
    "falcon alibi": {"model_type": "falcon", "hidden_size": 128, "num_attention_heads": 4,
                     "alibi": True},
    "bloom": {"model_type": "bloom", "hidden_size": 64, "n_head": 8},
    "mpt": {"model_type": "mpt", "d_model": 64, "n_heads": 4},
    "t5": {"model_type": "t5", "relative_attention_num_buckets": 32,
           "relative_attention_max_distance": 128},
    "mixtral": {"model_type": "mixtral", "hidden_size": 128, "num_attention_heads": 4},
    "qwen2_moe": {"model_type": "qwen2_moe", "hidden_size": 128, "num_attention_heads": 4},
    "olmo2": {"model_type": "olmo2", "hidden_size": 128, "num_attention_heads": 4,
              "rope_theta": 500000},
    "starcoder2": {"model_type": "starcoder2", "hidden_size": 128, "num_attention_heads": 4},
    "gemma2": {"model_type": "gemma2", "hidden_size": 128, "num_attention_heads": 4,
               "head_dim": 32, "num_hidden_layers": 2},
    # DeepSeek-V3's MLA at small widths, its yarn: the decoupled RoPE on 16 of 48 qk dims,
    # interleaved weights (apply_rotary_pos_emb_interleave)
    "deepseek_v3": {"model_type": "deepseek_v3", "hidden_size": 128, "num_attention_heads": 2,
                    "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "kv_lora_rank": 32,
                    "q_lora_rank": 32, "max_position_embeddings": 163840,
                    "rope_scaling": {"type": "yarn", "factor": 40, "beta_fast": 32,
                                     "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0,
                                     "original_max_position_embeddings": 4096}},
}


def props(report):
    return {p.name: p for p in report.properties}


def verdict(report):
    """The property comparing the code with the expectation (T5's is "T5 buckets")."""
    found = props(report)
    return found.get("expected") or found["T5 buckets"]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_transformers_code_conforms_to_the_spec_of_its_config(name):
    report, spec, info = check_hf(CONFIGS[name])
    assert report.ok, report.text()
    assert verdict(report).status == "pass"
    if spec.startswith("rope"):
        assert spec in verdict(report).detail


ALTERED = {   # config the code is built from -> a config that states something else
    "rope_theta": ("llama", {**LLAMA, "rope_theta": 10000.0}, "base is 500000, expected 10000"),
    "rotary_pct": ("gpt_neox", {**CONFIGS["gpt_neox"], "rotary_pct": 0.5}, "expected fraction 0.5"),
    "scaling factor": ("llama3", {**CONFIGS["llama3"], "rope_scaling": {
        **CONFIGS["llama3"]["rope_scaling"], "factor": 4.0}}, "factor=4"),
    "rotary_dim": ("gptj", {**CONFIGS["gptj"], "rotary_dim": 32}, "fraction"),
    "head_dim": ("mistral", {**CONFIGS["mistral"], "rope_theta": 10000.0}, "base"),
    "num_buckets": ("t5", {**CONFIGS["t5"], "relative_attention_num_buckets": 16},
                    "not the expected bidirectional=True, num_buckets=16"),
    "max_distance": ("t5", {**CONFIGS["t5"], "relative_attention_max_distance": 64},
                     "max_distance=64"),
    "rope_interleave": ("deepseek_v3", {**CONFIGS["deepseek_v3"], "rope_interleave": False},
                        "pairing is interleaved, expected half"),
}


@pytest.mark.parametrize("what", list(ALTERED))
def test_it_fails_when_the_config_states_something_else_than_the_code_does(what):
    code, stated, words = ALTERED[what]
    report, _, _ = check_hf(stated, code=CONFIGS[code])
    assert not report.ok and verdict(report).status == "fail", report.text()
    assert words in verdict(report).detail


@pytest.mark.parametrize("name, expect, words", [
    ("llama", "pairing=interleaved", "pairing is half, expected interleaved"),
    ("llama", "base=20000", "expected 20000"),
    ("qwen2 yarn", "scaling=linear,factor=4", "linear"),
    ("bloom", "slopes=exp", "exp slopes"),
    ("mpt", "direction=symmetric", "direction is causal, expected symmetric"),
    ("falcon alibi", "dtype=float32", ""),
    ("t5", "bidirectional=false", ""),
])
def test_an_expect_key_replaces_the_specs_and_is_checked(name, expect, words):
    report, _, _ = check_hf(CONFIGS[name], expect=expect)
    assert not report.ok, report.text()
    assert words in report.text()


# --- the command ---------------------------------------------------------------------------

def write(tmp_path, config, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


def test_the_command_passes_transformers_code_and_fails_a_wrong_expectation(tmp_path, capsys):
    path = write(tmp_path, CONFIGS["gpt_neox"])
    assert main(["check", "--from-hf", path]) == 0
    out = capsys.readouterr()
    assert "conforms" in out.out and "rope:fraction=0.25,pairing=half" in out.err
    assert main(["check", "--from-hf", path, "--expect", "fraction=0.5", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"]


@pytest.mark.parametrize("args, words", [
    (["check", "IMPL:f", "--from-hf", "CONFIG"], "give an IMPL, --from-hf CONFIG or --hf DIR, "
                                                 "not an IMPL and --from-hf CONFIG"),
    (["check", "--from-hf", "CONFIG", "--head-dim", "32"], "--head-dim not taken"),
    (["check", "--from-hf", "CONFIG", "--dim", "32"], "--head-dim not taken"),
    (["check", "--from-hf", "CONFIG", "--kind", "bias"], "--kind not taken"),
    (["check", "--from-hf", "MISSING"], "no such file"),
    (["check", "--from-hf", "BAD"], "rope_type='su'"),
    (["check", "--from-hf", "GPT2"], "gpt2's learned_absolute:max_len=1024 has no transformers "
                                     "position code to check"),
    (["check", "--from-hf", "CONFIG", "--expect", "base=1"], "--expect base=1"),
    (["check"], "give an IMPL, --from-hf CONFIG or --hf DIR"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, capsys, args, words):
    paths = {"CONFIG": write(tmp_path, LLAMA), "MISSING": str(tmp_path / "none.json"),
             "BAD": write(tmp_path, {"model_type": "llama", "rope_scaling": {"type": "su"}},
                          "bad.json"),
             "GPT2": write(tmp_path, {"model_type": "gpt2"}, "gpt2.json")}
    assert main([paths.get(a, a) for a in args]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("posenc:")]
    assert len(err) == 1 and words in err[0], err


def test_transformers_dynamic_ntk_is_probed_past_its_length_and_its_boundary_is_the_length():
    """The dynamic rule is probed past max_position_embeddings (512 here) and after a
    long call; transformers scales from a call reaching position 512 (max position + 1 > 512),
    and its cache (kept until a short call) must not move that boundary to 511."""
    from posenc.checker import check_callable
    from posenc.checker.hf_code import rotary_function

    report = check_hf(CONFIGS["dynamic"])[0]
    assert props(report)["dynamic scaling"].status == "pass", report.text()
    plain = check_callable(rotary_function(CONFIGS["dynamic"], 32), "rope", dim=32)
    assert plain.summary["call_dependent_from"] == 512, plain.text()
    assert "trained length of 512;" in props(plain)["call-dependent frequencies"].detail
