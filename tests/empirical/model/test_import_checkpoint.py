"""``posenc import-checkpoint``: a state_dict saved as the paper's scripts save theirs becomes a
run folder whose model gives the reference's logits, that ablate and the probe read; bad input
is one line, exit 2, and no folder."""

import math

import pytest
import torch
from test_paper_code import TOL, reference, tokens

import posenc
from posenc.cli import main
from posenc.empirical.analysis.probe import position_probe


#: posenc's default trigger ids at the smoke preset (the reference models below use them)
SMOKE_TRIGGERS = {"distance": "1,2", "count": "1,2,3,4"}


def _import(tmp_path, pe, ckpt, out, task="distance", heads=4):
    return main(["import-checkpoint", str(ckpt), "--paper-code", "--pe", pe, "--task", task,
                 "--out", str(out), "--heads", str(heads), "--preset", "smoke",
                 "--trigger-ids", SMOKE_TRIGGERS[task]])


@pytest.mark.parametrize("pe,task", [("alibi", "distance"), ("relative", "count"),
                                     ("rope", "distance"), ("partialrope:1", "count"),
                                     ("random", "distance"), ("mla", "distance")])
def test_imported_run_gives_the_reference_logits(tmp_path, pe, task):
    ref = reference(pe, seed=3)
    torch.save(ref.state_dict(), tmp_path / "model.pth")
    assert _import(tmp_path, pe, tmp_path / "model.pth", tmp_path / "run", task) == 0
    run = posenc.load_run(tmp_path / "run")
    assert run.config.model.code == "paper"
    tok = tokens(task)
    with torch.no_grad():
        diff = (run.model(tok) - ref(tok)).abs().max().item()
    assert diff <= TOL


def test_imported_run_can_be_ablated_and_probed(tmp_path, capsys):
    ref = reference("alibi", seed=1)
    torch.save(ref.state_dict(), tmp_path / "model.pth")
    run_dir = tmp_path / "run"
    assert posenc.import_checkpoint(tmp_path / "model.pth", "alibi", "distance", run_dir, heads=4,
                                    preset="smoke", trigger_ids=[1, 2]).config.model.pe == "alibi:slopes=exp0"
    assert main(["ablate", str(run_dir), "--examples", "40"]) == 0
    assert "deposit" in capsys.readouterr().out
    run = posenc.load_run(run_dir)
    probe = position_probe(run.model, run.data().test, max_examples=60)
    assert len(probe["sites"]) >= 3 and all(math.isfinite(v) for v in probe["probe_r2"].values())


def _fails(tmp_path, capsys, pe, ckpt, match):
    out = tmp_path / "out"
    assert _import(tmp_path, pe, ckpt, out) == 2
    err = capsys.readouterr().err
    assert err.startswith("posenc: error:") and match in err and err.count("\n") == 1, err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_bad_files_wrong_pe_and_key_mismatch_are_one_clear_error(tmp_path, capsys):
    (tmp_path / "junk.pth").write_bytes(b"not a torch file")
    _fails(tmp_path, capsys, "alibi", tmp_path / "junk.pth", "cannot read")
    _fails(tmp_path, capsys, "alibi", tmp_path / "missing.pth", "does not exist")
    sd = reference("relative").state_dict()
    torch.save(sd, tmp_path / "rel.pth")
    _fails(tmp_path, capsys, "alibi", tmp_path / "rel.pth", "unexpected layers.0.relative_bias_table")
    _fails(tmp_path, capsys, "transformer-xl", tmp_path / "rel.pth", "unknown paper PE")
    torch.save(reference("partialrope:2").state_dict(), tmp_path / "partial.pth")
    _fails(tmp_path, capsys, "rope", tmp_path / "partial.pth", "missing")
    del sd["layers.1.norm2.bias"]
    torch.save(sd, tmp_path / "cut.pth")
    _fails(tmp_path, capsys, "relative", tmp_path / "cut.pth", "missing layers.1.norm2.bias")
    torch.save({"a": 1}, tmp_path / "dict.pth")
    _fails(tmp_path, capsys, "nope", tmp_path / "dict.pth", "not hold a state_dict")
    # a partial-RoPE checkpoint with 4 heads read as 2 heads: its cos/sin tables say otherwise
    torch.save(reference("partialrope:2").state_dict(), tmp_path / "p2.pth")
    out = tmp_path / "out"
    assert main(["import-checkpoint", str(tmp_path / "p2.pth"), "--paper-code", "--pe",
                 "partialrope:2", "--task", "distance", "--out", str(out), "--heads", "2",
                 "--preset", "smoke", "--trigger-ids", "1,2"]) == 2
    assert "not the table" in capsys.readouterr().err and not out.exists()


def test_an_existing_folder_is_not_overwritten(tmp_path, capsys):
    torch.save(reference("nope").state_dict(), tmp_path / "m.pth")
    (tmp_path / "out").mkdir()
    assert _import(tmp_path, "nope", tmp_path / "m.pth", tmp_path / "out") == 2
    assert "already exists" in capsys.readouterr().err


@pytest.mark.parametrize("damage,match", [
    (lambda t: t.fill_(float("nan")), "holds non-finite values"),
    (lambda t: t.fill_(float("inf")), "holds non-finite values"),
    ("complex", "is a complex tensor")])
def test_non_finite_or_complex_weights_are_refused(tmp_path, capsys, damage, match):
    # NaN weights were imported, and ablate printed "baseline accuracy 0.0000" with exit 0;
    # complex ones lost their imaginary part with only a torch warning
    sd = reference("alibi", seed=1).state_dict()
    if damage == "complex":
        sd["layers.0.q_linear.weight"] = sd["layers.0.q_linear.weight"].to(torch.complex64)
    else:
        damage(sd["layers.0.q_linear.weight"])
    torch.save(sd, tmp_path / "bad.pth")
    out = tmp_path / "out"
    assert _import(tmp_path, "alibi", tmp_path / "bad.pth", out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err and "layers.0.q_linear.weight" in err, err
    assert not out.exists()


def test_a_plain_pickle_is_one_line_without_warnings(tmp_path, capfd):
    import pickle
    (tmp_path / "p.pth").write_bytes(pickle.dumps({"a": [1, 2]}))
    out = tmp_path / "out"
    assert _import(tmp_path, "nope", tmp_path / "p.pth", out) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith("posenc: error:") and "Warning" not in err, err


def test_a_dangling_symlink_as_out_is_refused_and_the_folder_is_readable(tmp_path, capsys):
    import os
    import stat
    torch.save(reference("nope").state_dict(), tmp_path / "m.pth")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    assert _import(tmp_path, "nope", tmp_path / "m.pth", tmp_path / "link") == 2
    err = capsys.readouterr().err
    assert "already exists" in err and ".link." not in err  # not a hidden temporary folder
    assert _import(tmp_path, "nope", tmp_path / "m.pth", tmp_path / "run") == 0
    assert stat.S_IMODE(os.stat(tmp_path / "run").st_mode) == 0o755  # as trained runs (was 0700)


# --- the data the paper's code trained on: its sampler and its padding to 128 ----------------

def _paper_sized(pe, vocab=128):
    """A reference model with a vocabulary the paper preset's tasks fit (count: 101 classes)."""
    from paper_reference import TransformerDecoder
    torch.manual_seed(5)
    return TransformerDecoder(vocab, 32, 4, 1, 64, 128, pe).eval()


@pytest.mark.parametrize("task, triggers", [("count", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,"
                                             "16,17,18,19,20,21,22,23,24,25,26,27,28,29,30"),
                                            ("distance", "1,2")])
def test_an_import_at_the_paper_preset_is_evaluated_on_the_codes_data(tmp_path, task, triggers):
    ref = _paper_sized("rope")
    torch.save(ref.state_dict(), tmp_path / "model.pth")
    assert main(["import-checkpoint", str(tmp_path / "model.pth"), "--paper-code", "--pe", "rope",
                 "--task", task, "--out", str(tmp_path / "run"), "--heads", "4",
                 "--preset", "paper", "--trigger-ids", triggers]) == 0
    run = posenc.load_run(tmp_path / "run")
    t = run.config.task
    assert t.length == 128  # the code pads every example to 128 and pools all of it
    if task == "count":
        assert t.pad_to == 128 and t.content_length == 120
    else:
        assert t.sampler == "paper"  # fillers from the whole vocabulary, triggers included
    assert t.vocab_size == 128  # the checkpoint's
    from posenc.empirical.tasks import make_split
    tok = make_split(t, 0).test.tokens[:8]
    assert tok.shape[1] == 128
    with torch.no_grad():
        assert (run.model(tok) - ref(tok)).abs().max().item() <= TOL


def test_a_seq_len_given_to_the_import_is_kept(tmp_path):
    ref = _paper_sized("rope", vocab=128)
    torch.save(ref.state_dict(), tmp_path / "model.pth")
    assert main(["import-checkpoint", str(tmp_path / "model.pth"), "--paper-code", "--pe", "rope",
                 "--task", "distance", "--out", str(tmp_path / "run"), "--heads", "4",
                 "--preset", "paper", "--trigger-ids", "1,2", "--seq-len", "126"]) == 0
    assert posenc.load_run(tmp_path / "run").config.task.length == 126
