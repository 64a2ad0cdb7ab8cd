"""``posenc ablate --hf DIR`` / ``--gguf FILE`` end to end on tiny saved models, and every user
error as one line with exit status 2, nothing written."""

import json

import pytest
from tiny_models import tiny


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    """A tiny Llama folder with a word-level tokenizer (offline, built here)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("llama")
    model = tiny("llama")
    words = ["<s>", "[UNK]"] + [f"w{chr(97 + i)}{chr(97 + j)}" for i in range(26) for j in range(3)]
    words = words[:model.config.vocab_size]
    tok = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", unk_token="[UNK]").save_pretrained(folder)
    model.config.bos_token_id = 0
    model.save_pretrained(folder)
    (folder / "words.txt").write_text(" ".join(words[2 + i % 70] for i in range(900)))
    return folder


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert")
    tiny("bert-no-head").save_pretrained(folder)
    return folder


def test_ablate_hf_folder_json_plot_and_out(main, llama_dir, tmp_path):
    out, plot = tmp_path / "r.json", tmp_path / "r.png"
    res = main("ablate", "--hf", str(llama_dir), "--layers", "1", "--examples", "4", "--length", "6",
               "--unit", "kv-group", "--out", str(out), "--plot", str(plot), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data == json.loads(out.read_text())
    assert data["mode"] == "mean" and data["unit"] == "kv-group" and data["model"]["kv_heads"] == 2
    assert [la["layer"] for la in data["layers"]] == [1] and len(data["layers"][0]["head_acc"]) == 2
    assert data["probe"]["predictions"] == 4 * 5 and plot.stat().st_size > 1000


def test_ablate_text_probe_with_the_folder_tokenizer(main, llama_dir):
    res = main("ablate", "--hf", str(llama_dir), "--probe", "text", "--text", str(llama_dir / "words.txt"),
               "--examples", "3", "--length", "40", "--mode", "zero")
    assert res.returncode == 0, res.stderr
    assert "probe text" in res.stdout and "zero ablation per head" in res.stdout
    assert "single-head layers" in res.stdout


def test_ablate_encoder_without_head_order_probe(main, bert_dir):
    res = main("ablate", "--hf", str(bert_dir), "--examples", "4", "--length", "6", "--json")
    assert res.returncode == 2 and "needs the tokenizer's [CLS] and [SEP]" in res.stderr  # none saved


@pytest.mark.parametrize("argv, message", [
    (["--hf", "HuggingFaceTB/SmolLM2-135M"], "is not a local folder"),
    (["--gguf", "missing.gguf"], "is not a file here"),
    (["--hf", "DIR", "--unit", "layer"], "unknown ablation unit"),
    (["--hf", "DIR", "--mode", "half"], "unknown ablation mode"),
    (["--hf", "DIR", "--probe", "order"], "not for decoder models"),
    (["--hf", "DIR", "--layers", "0,x"], "comma-separated layer indices"),
    (["--hf", "DIR", "--layers", "7"], "layer indices in 0..1"),
    (["--hf", "DIR", "--text", "/dev/urandom", "--probe", "text"], "not a regular file"),
    (["--hf", "DIR", "--out", "OUT.txt"], "ending in .json"),
    (["RUN", "--hf", "DIR"], "exactly one"),
    ([], "exactly one"),
])
def test_ablate_real_model_errors(main, llama_dir, tmp_path, argv, message):
    argv = [str(llama_dir) if a == "DIR" else str(tmp_path / "o.txt") if a == "OUT.txt" else
            str(tmp_path) if a == "RUN" else a for a in argv]
    res = main("ablate", *argv, "--examples", "3", "--length", "5")
    assert res.returncode == 2
    errors = [line for line in res.stderr.splitlines() if line.startswith("posenc: error:")]
    assert len(errors) == 1 and message in errors[0], res.stderr
    assert "Traceback" not in res.stderr and not list(tmp_path.iterdir())


def test_ablate_refusals_of_model_files(main, tmp_path, bert_dir):
    fake = tmp_path / "m.gguf"
    fake.write_bytes(b"NOPE" + bytes(60))
    res = main("ablate", "--gguf", str(fake))
    assert res.returncode == 2 and "is not a GGUF file" in res.stderr
    from transformers import T5Config
    (tmp_path / "t5").mkdir()
    T5Config(d_model=32, num_layers=1, num_heads=2, d_kv=16, d_ff=32,
             vocab_size=64).save_pretrained(tmp_path / "t5")
    res = main("ablate", "--hf", str(tmp_path / "t5"))
    assert res.returncode == 2 and "model type 't5' is not supported" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    res = main("ablate", "--hf", str(bert_dir), "--probe", "masked-induction")
    assert res.returncode == 2 and "no masked-LM head" in res.stderr
    res = main("ablate", "--hf", str(tmp_path))
    assert res.returncode == 2 and "holds no config.json" in res.stderr


def test_api_dispatches_a_model_folder(llama_dir):
    import posenc

    result = posenc.ablate(str(llama_dir), examples=3, length=5, layers=[0])
    assert result.mode == "mean" and result.model["model_type"] == "llama"
    assert len(result.table.layers) == 1 and result.single_head_layers is not None
    with pytest.raises(posenc.PosencError, match="do not apply to a pretrained model"):
        posenc.ablate(str(llama_dir), batch_size=3)


def test_ablate_gguf_file_equals_the_model_it_holds(main, tmp_path):
    """A GGUF file goes through transformers' GGUF reader and its own tokenizer, and gives the
    ablation of the model written into it."""
    pytest.importorskip("gguf")
    from tiny_gguf import write_llama_gguf

    from posenc.api.pretrained import ablate_pretrained

    model = tiny("llama", seed=4)
    write_llama_gguf(model, tmp_path / "tiny.gguf")
    out = tmp_path / "r.json"
    res = main("ablate", "--gguf", str(tmp_path / "tiny.gguf"), "--examples", "4", "--length", "6",
               "--mode", "resample", "--seed", "3", "--out", str(out))
    assert res.returncode == 0, res.stderr
    got = json.loads(out.read_text())
    assert got["model"]["model_type"] == "llama" and got["model"]["source"].endswith("tiny.gguf")
    # the GGUF tokenizer's pool (its word tokens w0.. at ids 2..) beside the model object alone
    from posenc.empirical.pretrained.loading import load
    from posenc.encodings.hf_local import local_model
    loaded = load(local_model(None, str(tmp_path / "tiny.gguf")))
    direct = ablate_pretrained(model, "resample", examples=4, length=6, seed=3, tokenizer=loaded.tokenizer)
    for a, b in zip(got["layers"], direct.to_dict()["layers"]):
        assert a["head_acc"] == pytest.approx(b["head_acc"], abs=1e-12)
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-4)
