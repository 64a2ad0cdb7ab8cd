"""``--from-hf CONFIG`` on derive, bound and train (check's is in
tests/checker/test_check_from_hf.py): the config's spec is used exactly as if it had been given,
with the config's head dim and heads where the command takes them; a bad file, bad JSON or an
unsupported field is one line, exit status 2, and nothing is written."""

from __future__ import annotations

import json

import pytest

from posenc.cli import main

NEOX = {"model_type": "gpt_neox", "hidden_size": 96, "num_attention_heads": 3, "rotary_pct": 0.25}
BLOOM = {"model_type": "bloom", "hidden_size": 48, "n_head": 6}
LLAMA3 = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2,
          "rope_theta": 500000.0, "rope_scaling": {
              "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 256}}
UNSUPPORTED = {"model_type": "llama", "rope_scaling": {"type": "su", "factor": 2.0}}


def write(tmp_path, config, name="config.json"):
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return str(path)


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_derive_from_hf_is_derive_of_its_spec_at_a_symbolic_head_dim(tmp_path, capsys):
    code, out, err = run(capsys, "derive", "--from-hf", write(tmp_path, NEOX), "--json")
    assert code == 0 and "rope:fraction=0.25,pairing=half (gpt_neox, head dim 32, 3 heads)" in err
    assert "derived at head dim 8" in err                  # fraction 0.25 of 4 has no pair
    same = run(capsys, "derive", "rope:fraction=0.25,pairing=half", "--head-dim", "8", "--json")
    assert json.loads(out) == json.loads(same[1])


def test_bound_from_hf_takes_the_configs_head_dim_and_heads(tmp_path, capsys):
    for config, spec, dims in ((BLOOM, "alibi:direction=causal", ("8", "6")),
                               (LLAMA3, "rope:base=500000,pairing=half,scaling=llama3,factor=8,"
                                        "original=256", ("32", "2"))):
        code, out, err = run(capsys, "bound", "--from-hf", write(tmp_path, config), "--n", "16",
                             "--json", "--plane-seeds", "0")
        assert code == 0 and spec in err
        given = run(capsys, "bound", spec, "--head-dim", dims[0], "--heads", dims[1], "--n", "16",
                    "--json", "--plane-seeds", "0")
        strip = lambda text: [{k: v for k, v in r.items() if k != "seconds"}  # noqa: E731
                              for r in json.loads(text)["rows"]]
        assert strip(out) == strip(given[1])
        other = run(capsys, "bound", spec, "--n", "16", "--json", "--plane-seeds", "0")
        assert strip(out) != strip(other[1])                 # the defaults 64, 8 differ


def test_train_from_hf_trains_the_configs_spec(tmp_path, capsys, monkeypatch):
    import posenc.api.experiments as experiments
    seen = {}

    def fake_train(task, pe, **kw):
        seen["pe"] = pe
        raise SystemExit(0)
    monkeypatch.setattr(experiments, "train", fake_train)
    with pytest.raises(SystemExit):
        main(["train", "--from-hf", write(tmp_path, NEOX), "--preset", "smoke"])
    from posenc.encodings import parse_spec
    assert seen["pe"] == parse_spec("rope:fraction=0.25,pairing=half")   # the spec, parsed


def test_train_from_hf_runs(tmp_path, capsys):
    code, out, err = run(capsys, "train", "--from-hf", write(tmp_path, NEOX), "--preset", "smoke",
                         "--epochs", "1", "--out", tmp_path / "run")
    assert code == 0 and "rope:fraction=0.25,pairing=half (smoke" in out
    assert json.loads((tmp_path / "run" / "train_config.json").read_text())["model"]["pe"] \
        == "rope:fraction=0.25,pairing=half"


@pytest.mark.parametrize("command", [
    ["derive"], ["bound", "--n", "8", "--plot", "OUT/plot.png"], ["train", "--out", "OUT/run"]])
@pytest.mark.parametrize("config, words", [
    (UNSUPPORTED, "rope_type='su'"), ("{not json", "not valid JSON"), (None, "no such file"),
    ({"model_type": "mpt", "attn_config": {"alibi_bias_max": 16}}, "attn_config.alibi_bias_max")])
def test_a_bad_config_is_one_line_status_2_and_nothing_written(tmp_path, capsys, command, config,
                                                               words):
    path = str(tmp_path / "none.json") if config is None else write(tmp_path, config)
    out = tmp_path / "out"
    out.mkdir()
    args = [a.replace("OUT", str(out)) for a in command]
    code, stdout, err = run(capsys, *args, "--from-hf", path)
    assert code == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err, err
    assert stdout == "" and not list(out.iterdir())


def test_train_refuses_a_spec_the_presets_head_does_not_fit_before_writing(tmp_path, capsys):
    phi3 = {"model_type": "phi3", "hidden_size": 128, "num_attention_heads": 4,
            "original_max_position_embeddings": 1024, "max_position_embeddings": 8192,
            "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 16,
                             "long_factor": [4.0] * 16}}
    code, _, err = run(capsys, "train", "--from-hf", write(tmp_path, phi3), "--preset", "smoke",
                       "--out", tmp_path / "run")
    assert code == 2 and "the preset 'smoke' has head dim 8" in err and "16 entries" in err, err
    assert not (tmp_path / "run").exists()


def test_derive_states_longrope_planes_no_symbolic_head_fits_at_the_configs_head_dim(tmp_path,
                                                                                      capsys):
    phi3 = {"model_type": "phi3", "hidden_size": 128, "num_attention_heads": 4,
            "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 16,
                             "long_factor": [4.0] * 16}}
    code, out, err = run(capsys, "derive", "--from-hf", write(tmp_path, phi3), "--heads", "1")
    assert code == 0 and "its 16 planes do not fit a symbolic head" in err
    assert "the config's planes (head dim 32" in out and "m=15 " in out


def test_derive_of_a_partial_longrope_states_its_planes_too(tmp_path, capsys):
    phi4 = {"model_type": "phi3", "hidden_size": 128, "num_attention_heads": 4,
            "partial_rotary_factor": 0.75,               # Phi-4-mini's fraction: 24 of 32 dims
            "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 12,
                             "long_factor": [4.0] * 12}}
    code, out, err = run(capsys, "derive", "--from-hf", write(tmp_path, phi4), "--heads", "1")
    assert code == 0 and "derived with the factors of its first 1 " in err, err
    assert "m=11 " in out and "m=12 " not in out


def test_derive_refuses_what_no_symbolic_head_fits(tmp_path, capsys):
    neox = {"model_type": "gpt_neox", "hidden_size": 96, "num_attention_heads": 3,
            "rotary_pct": 0.1}                  # 3 of 32 dims rotate: odd, refused by the mapping
    code, out, err = run(capsys, "derive", "--from-hf", write(tmp_path, neox))
    assert code == 2 and out == "" and "rotary dims" in err.splitlines()[-1]


def test_check_from_hf_json_names_the_config_and_its_spec(tmp_path, capsys):
    pytest.importorskip("transformers")
    code, out, _ = run(capsys, "check", "--from-hf", write(tmp_path, BLOOM), "--json")
    summary = json.loads(out)["summary"]["from_hf"]
    assert code == 0 and summary["spec"] == "alibi:direction=causal" and summary["heads"] == 6


@pytest.mark.parametrize("args, words", [
    (["derive", "rope", "--from-hf", "CONFIG"],
     "give a SPEC, --from-hf CONFIG or --hf DIR, not a SPEC and --from-hf CONFIG"),
    (["derive", "--all", "--from-hf", "CONFIG"], "give --all or --from-hf CONFIG, not both"),
    (["bound", "rope", "--n", "8", "--from-hf", "CONFIG"], "not a SPEC and --from-hf CONFIG"),
    (["bound", "--n", "8"], "bound: give a SPEC, --from-hf CONFIG or --hf DIR"),
    (["train", "--pe", "alibi", "--from-hf", "CONFIG"], "give --pe SPEC or --from-hf CONFIG"),
    (["train", "--config", "c.json", "--from-hf", "CONFIG"], "give --config or --from-hf"),
])
def test_from_hf_and_a_spec_exclude_each_other(tmp_path, capsys, args, words):
    path = write(tmp_path, NEOX)
    code, stdout, err = run(capsys, *[path if a == "CONFIG" else a for a in args])
    assert code == 2 and err.count("\n") == 1 and words in err, err


def test_check_from_hf_without_transformers_is_one_line(tmp_path, capsys, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "transformers", None)        # import transformers fails
    code, out, err = run(capsys, "check", "--from-hf", write(tmp_path, BLOOM))
    assert code == 2 and out == "" and err.splitlines()[-1].startswith("posenc: error: check "
                                                                       "--from-hf checks "
                                                                       "transformers' own code")
