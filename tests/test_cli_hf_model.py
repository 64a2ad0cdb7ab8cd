"""``--hf DIR`` and ``--gguf FILE`` on derive, bound and check: a model folder's config.json is
read exactly as ``--from-hf`` reads it, a GGUF file's config is the one transformers derives from
the file; exactly one of SPEC / --from-hf / --hf is taken, and a bad folder or file is one line,
exit status 2.  The models are tiny ``save_pretrained`` folders and GGUF files (tests/hf_models.py)."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("transformers")
pytest.importorskip("gguf")

import hf_models  # noqa: E402
from posenc.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {"llama": str(hf_models.llama(root / "llama")),
            "bert": str(hf_models.bert(root / "bert")),
            "gguf": str(hf_models.gguf_file(root / "gguf" / "tiny.gguf", base=100000.0)),
            "gguf3": str(hf_models.gguf_file(root / "gguf3" / "g3.gguf", arch="gemma3",
                                             base=1000000.0, blocks=6)),
            "root": str(root)}


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def strip(text):
    """bound's JSON rows without their timings."""
    return [{k: v for k, v in r.items() if k != "seconds"} for r in json.loads(text)["rows"]]


def test_derive_and_bound_with_hf_are_those_with_from_hf_of_its_config(models, capsys):
    folder = models["llama"]
    for cmd, extra, key in (("derive", ["--json"], json.loads),
                            ("bound", ["--n", "8", "--json", "--plane-seeds", "0"], strip)):
        code, out, err = run(capsys, cmd, "--hf", folder, *extra)
        assert code == 0 and f"--hf {folder}/config.json: rope:base=50000,pairing=half (llama, " \
                              f"head dim 16, 2 heads)" in err
        same = run(capsys, cmd, "--from-hf", f"{folder}/config.json", *extra)
        assert same[0] == 0 and key(out) == key(same[1])


def test_check_with_hf_checks_the_models_code(models, capsys):
    code, out, err = run(capsys, "check", "--hf", models["llama"])
    assert code == 0 and "conforms" in out and "rope:base=50000" in err
    code, out, _ = run(capsys, "check", "--hf", models["llama"], "--expect", "base=10000")
    assert code == 1 and "DOES NOT CONFORM" in out


def test_gguf_config_is_the_one_transformers_derives_from_the_file(models, capsys):
    import transformers
    from posenc.encodings.hf_config import spec_from_hf_config

    path = models["gguf"]
    folder, name = path.rsplit("/", 1)
    data = transformers.AutoConfig.from_pretrained(folder, gguf_file=name,
                                                   local_files_only=True).to_dict()
    spec, info = spec_from_hf_config(data)
    assert spec == "rope:base=100000,pairing=half" and info["head_dim"] == 8
    code, out, err = run(capsys, "derive", "--gguf", path, "--json")
    assert code == 0 and f"--hf {path}: {spec} (llama, head dim 8, 4 heads)" in err
    assert json.loads(out)["spec"] == json.loads(run(capsys, "derive", spec, "--json")[1])["spec"]
    # the same file named inside its folder
    assert run(capsys, "derive", "--hf", folder, "--gguf", name, "--json")[1] == out
    code, out, err = run(capsys, "check", "--gguf", path)
    assert code == 0 and "conforms" in out
    code, out, _ = run(capsys, "bound", "--gguf", path, "--n", "8", "--json", "--plane-seeds", "0")
    assert code == 0 and strip(out) == strip(run(capsys, "bound", spec, "--head-dim", "8",
                                                 "--heads", "4", "--n", "8", "--json",
                                                 "--plane-seeds", "0")[1])


def test_a_gemma3_gguf_is_checked_layer_group_by_layer_group(models, capsys):
    code, out, err = run(capsys, "check", "--gguf", models["gguf3"], "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"]
    groups = {g["layers"]: g for g in report["groups"]}
    assert {g: groups[g]["layer_count"] for g in groups} == {"sliding_attention": 5,
                                                            "full_attention": 1}
    assert groups["full_attention"]["summary"]["from_hf"]["spec"] == "rope:base=1000000,pairing=half"
    assert groups["sliding_attention"]["summary"]["from_hf"]["spec"] == "rope:pairing=half"
    assert "gemma3_text" in err


@pytest.mark.parametrize("args, words", [
    (["derive", "rope", "--hf", "LLAMA"], "give a SPEC, --from-hf CONFIG or --hf DIR, not a SPEC "
                                          "and --hf DIR"),
    (["derive", "--all", "--hf", "LLAMA"], "give --all or --hf DIR, not both"),
    (["bound", "--n", "8", "--from-hf", "LLAMA", "--hf", "LLAMA"],
     "not --from-hf CONFIG and --hf DIR"),
    (["bound", "rope", "--n", "8", "--gguf", "GGUF"], "not a SPEC and --gguf FILE"),
    (["check", "IMPL:f", "--hf", "LLAMA"], "not an IMPL and --hf DIR"),
    (["check", "--hf-layers", "rope"], "--hf-layers goes with --from-hf CONFIG or --hf DIR"),
    (["bound", "--n", "8", "--hf", "ROOT/none"], "is not a local folder (posenc loads models "
                                                 "offline only"),
    (["bound", "--n", "8", "--hf", "HuggingFaceTB/SmolLM2-135M"], "is not a local folder"),
    (["derive", "--hf", "ROOT"], "holds no config.json"),
    (["check", "--gguf", "LLAMA/config.json"], "is not a GGUF file"),
    (["derive", "--gguf", "ROOT/none.gguf"], "is not a file here"),
    (["derive", "--hf", "LLAMA", "--gguf", "GGUF"], "lies outside --hf"),
])
def test_bad_input_is_one_line_and_status_2(models, capsys, args, words):
    names = {"LLAMA": models["llama"], "GGUF": models["gguf"]}
    args = [names.get(a, a.replace("ROOT", models["root"]).replace("LLAMA", models["llama"]))
            for a in args]
    code, out, err = run(capsys, *args)
    lines = [line for line in err.splitlines() if line.startswith("posenc:")]
    assert code == 2 and out == "" and len(lines) == 1 and words in lines[0], err


def test_a_gguf_file_transformers_cannot_read_is_one_line(models, capsys, tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 12)
    code, out, err = run(capsys, "derive", "--gguf", bad)
    assert code == 2 and out == "" and err.startswith("posenc: error: derive: transformers cannot "
                                                      "read a config from")
    assert err.count("\n") == 1


def test_gguf_without_transformers_names_the_hf_extra(models, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    code, out, err = run(capsys, "derive", "--gguf", models["gguf"])
    assert code == 2 and err.count("\n") == 1 and "pip install 'posenc[hf]'" in err
