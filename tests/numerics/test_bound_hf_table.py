"""``bound --hf DIR`` on a learned absolute PE uses the model's own position table (BERT's
``position_embeddings``, GPT-2's ``wpe``), read from its safetensors (one file or shards),
pytorch_model.bin or GGUF file, not the seeded stand-in: the bound's rows are those of that
table given as ``--values``, and the position Gram's spectrum and distance from Toeplitz are those
of the table transformers itself loads.  A rotary model's weights are never read.  Bad input is
one line, exit status 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

import hf_models  # noqa: E402
from posenc.cli import main  # noqa: E402

FAST = ("--json", "--plane-seeds", "0", "--reference", "none")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tables")
    out = {"bert": hf_models.bert(root / "bert"), "gpt2": hf_models.gpt2(root / "gpt2"),
           "bert_bin": hf_models.bert(root / "bert_bin", "bin"),
           "gpt2_sharded": hf_models.gpt2(root / "gpt2_sharded", "sharded"),
           "llama": hf_models.llama(root / "llama"), "root": root}
    return {k: str(v) for k, v in out.items()}


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def own_table(folder, kind):
    """The position table as transformers loads the model."""
    if kind == "bert":
        model = transformers.BertModel.from_pretrained(folder)
        return model.embeddings.position_embeddings.weight.detach().double().numpy()
    model = transformers.GPT2LMHeadModel.from_pretrained(folder)
    return model.transformer.wpe.weight.detach().double().numpy()


def reference_distance(g):
    """||G - T(G)||_F / ||G||_F, T(G) by a loop over the diagonals."""
    n = g.shape[0]
    t = np.empty_like(g)
    for k in range(-(n - 1), n):
        idx = [(i, i + k) for i in range(n) if 0 <= i + k < n]
        t[tuple(zip(*idx))] = np.mean([g[i, j] for i, j in idx])
    return np.linalg.norm(g - t) / np.linalg.norm(g)


def strip(report):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in report["rows"]]


@pytest.mark.parametrize("name, kind, key", [
    ("bert", "bert", "embeddings.position_embeddings.weight"),
    ("bert_bin", "bert", "embeddings.position_embeddings.weight"),
    ("gpt2", "gpt2", "transformer.wpe.weight"),
    ("gpt2_sharded", "gpt2", "transformer.wpe.weight")])
def test_bound_hf_uses_the_models_own_table(models, capsys, tmp_path, name, kind, key):
    import os
    folder = models[name]
    assert ("model.safetensors.index.json" in os.listdir(folder)) == (name == "gpt2_sharded")
    code, out, err = run(capsys, "bound", "--hf", folder, "--n", "8,24", *FAST)
    assert code == 0, err
    report = json.loads(out)
    section = report["position_table"]
    width = 32
    rows = 40 if kind == "bert" else 48
    assert section["source"] == "model" and section["name"] == key
    assert section["shape"] == [rows, width] and section["dtype"] == "float32"
    table = own_table(folder, kind)
    for gram in section["gram"]:
        n = gram["n"]
        g = table[:n] @ table[:n].T
        # float32 weights, float64 Gram of <= 24 x 32 entries: eigvalsh agrees to ~1e-16 ||G||
        ev = np.linalg.eigvalsh(g)[::-1]
        np.testing.assert_allclose(gram["eigenvalues"], ev, rtol=0, atol=1e-12 * ev[0])
        assert gram["toeplitz_distance"] == pytest.approx(reference_distance(g), rel=1e-10)
        assert 0 < gram["toeplitz_distance"] < 1          # a random init is far from Toeplitz
    assert report["kernel"]["source"] == "given"
    # the bound's rows are those of the model's table given as --values
    np.save(tmp_path / "table.npy", table)
    spec = f"learned_absolute:max_len={rows}"
    given = json.loads(run(capsys, "bound", spec, "--values", tmp_path / "table.npy",
                           "--head-dim", "16", "--heads", "2", "--d-model", "32", "--n", "8,24",
                           *FAST)[1])
    assert strip(report) == strip(given)
    # and not those of the seeded stand-in --from-hf uses
    code, out, err = run(capsys, "bound", "--from-hf", folder, "--n", "8,24", *FAST)
    stand_in = json.loads(out)
    assert "seeded stand-in" in err
    assert "position_table" not in stand_in and stand_in["kernel"]["source"] == "seeded draw"
    assert strip(stand_in) != strip(report)


def test_the_text_says_which_table_and_the_distance_definition(models, capsys):
    code, out, _ = run(capsys, "bound", "--hf", models["bert"], "--n", "8", "--plane-seeds", "0")
    assert code == 0
    assert "the model's own table embeddings.position_embeddings.weight, 40 positions x 32 " \
           "(float32" in out
    assert "d(G) = ||G - T(G)||_F / ||G||_F, T(G) = G with each diagonal replaced by its mean" in out


def test_a_gpt2_gguf_files_table_is_read(models, capsys, tmp_path):
    table = np.random.default_rng(0).standard_normal((48, 32)).astype(np.float32)
    path = hf_models.gguf_file(tmp_path / "g.gguf", arch="gpt2", heads=2,
                               tensors={"position_embd.weight": table,
                                        "token_embd.weight": np.zeros((16, 32), np.float32)})
    code, out, err = run(capsys, "bound", "--gguf", path, "--n", "16", *FAST)
    assert code == 0, err
    section = json.loads(out)["position_table"]
    assert section["name"] == "position_embd.weight" and section["shape"] == [48, 32]
    g = table[:16].astype(np.float64) @ table[:16].T.astype(np.float64)
    np.testing.assert_allclose(section["gram"][0]["eigenvalues"], np.linalg.eigvalsh(g)[::-1],
                               rtol=0, atol=1e-12 * np.abs(g).max())


def test_a_rotary_models_weights_are_not_read(models, capsys, tmp_path):
    import shutil
    folder = tmp_path / "llama"
    shutil.copytree(models["llama"], folder)
    (folder / "model.safetensors").write_bytes(b"not weights")
    code, out, err = run(capsys, "bound", "--hf", folder, "--n", "8", *FAST)
    assert code == 0 and "position_table" not in json.loads(out)


@pytest.mark.parametrize("args, words", [
    (["--hf", "BERT", "--n", "8", "--values", "X.npy"], "--values not taken: the model's own"),
    (["--hf", "BERT", "--n", "64"], "the model's table embeddings.position_embeddings.weight has "
                                    "40 positions; --n 64 is longer"),
    (["--hf", "BERT", "--n", "8", "--d-model", "64"], "--d-model 64 differs from the width"),
    (["--hf", "NOWEIGHTS", "--n", "8"], "holds no weights (model.safetensors, pytorch_model.bin"),
    (["--hf", "CORRUPT", "--n", "8"], "cannot read"),
    (["--hf", "WRONGKEY", "--n", "8"], "holds no tensor named "
                                     "*embeddings.position_embeddings.weight"),
])
def test_bad_input_is_one_line(models, capsys, tmp_path, args, words):
    import shutil
    from safetensors.numpy import save_file
    for name in ("NOWEIGHTS", "CORRUPT", "WRONGKEY"):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(f"{models['bert']}/config.json", folder)
    (tmp_path / "CORRUPT" / "model.safetensors").write_bytes(b"\x08" + b"\x00" * 40)
    save_file({"other.weight": np.zeros((2, 2), np.float32)},
              str(tmp_path / "WRONGKEY" / "model.safetensors"))
    names = {"BERT": models["bert"], **{n: str(tmp_path / n) for n in ("NOWEIGHTS", "CORRUPT",
                                                                         "WRONGKEY")}}
    code, out, err = run(capsys, "bound", *[names.get(a, a) for a in args])
    lines = [line for line in err.splitlines() if line.startswith("posenc:")]
    assert code == 2 and out == "" and len(lines) == 1 and words in lines[0], err


def test_the_case_docs_usage_quotes(models, capsys):
    """docs/usage.md shows bound --hf on a BertModel of this config at torch.manual_seed(0)
    (tests/hf_models.bert): d(G) and lambda_max at n = 8 and 40, to its 6 digits."""
    code, out, _ = run(capsys, "bound", "--hf", models["bert"], "--n", "8,40", *FAST)
    gram = {g["n"]: g for g in json.loads(out)["position_table"]["gram"]}
    assert code == 0
    assert f"{gram[8]['toeplitz_distance']:.6g}" == "0.407958"
    assert f"{gram[40]['toeplitz_distance']:.6g}" == "0.736097"
    assert f"{gram[40]['lambda_max']:.6g}" == "0.0540886" and gram[40]["rank"] == 32
