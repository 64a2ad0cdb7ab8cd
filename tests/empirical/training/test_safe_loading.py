"""Safe loading of run folders: a checkpoint is checked against its
folder's config and against the config asked for; every damaged file, a full disk and a
read-only folder are one line and exit 2, never a traceback, a wrong result or a partial file."""

import errno
import json
import shutil

import pytest
import torch

import posenc.atomic
from posenc.cli import main
from posenc.empirical.config import preset
from posenc.empirical.training.runs import CHECKPOINT, CONFIG, METRICS, RESULT, load_run
from posenc.errors import PosencError

SMALL = ["--preset", "smoke", "--epochs", "1", "--samples", "300"]


def _train(out, *extra):
    return main(["train", *SMALL, "--out", str(out), *extra])


@pytest.fixture(scope="module")
def rope_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("safe") / "rope"
    assert _train(out, "--pe", "rope") == 0
    return out


@pytest.fixture
def run(tmp_path, rope_run):
    """A private copy of the finished RoPE run."""
    return shutil.copytree(rope_run, tmp_path / "run")


def _one_line(capsys, argv, match=""):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, (code, err)
    assert err.count("\n") == 1 and err.startswith("posenc: error: ") and "Traceback" not in err, err
    assert match in err, err
    return err


# -- item 1: the checkpoint against the configs --------------------------------------------

@pytest.mark.parametrize("other", [["--pe", "alibi"], ["--pe", "rope", "--seed", "1"]])
def test_checkpoint_of_another_config_is_never_resumed(capsys, run, other):
    """Without train_config.json and train_summary.json, `train --pe alibi` resumed the
    RoPE checkpoint and reported its weights as an ALiBi run (exit 0)."""
    (run / CONFIG).unlink()
    (run / RESULT).unlink()
    before = (run / CHECKPOINT).read_bytes()
    err = _one_line(capsys, ["train", *SMALL, "--out", str(run), *other], "another config")
    assert ("model.pe 'rope' -> 'alibi'" in err) if "alibi" in other else ("seed 0 -> 1" in err)
    assert (run / CHECKPOINT).read_bytes() == before and not (run / CONFIG).exists()


def test_same_config_still_resumes_after_the_config_file_is_lost(capsys, run):
    acc = load_run(run).metrics[-1]["test_acc"]
    (run / CONFIG).unlink()
    (run / RESULT).unlink()
    assert _train(run, "--pe", "rope") == 0
    assert f"test accuracy {acc:.4f}" in capsys.readouterr().out


@pytest.mark.parametrize("edit", [{"pe": "alibi"}, {"n_heads": 2}, {"pe": "alibi", "n_heads": 2}])
def test_edited_train_config_is_refused_by_ablate_and_train(capsys, run, edit):
    """Editing train_config.json (pe, n_heads) and running `ablate R` exited 0."""
    cfg = json.loads((run / CONFIG).read_text())
    cfg["model"].update(edit)
    (run / CONFIG).write_text(json.dumps(cfg))
    key = "model.pe" if "pe" in edit else "model.n_heads"
    _one_line(capsys, ["ablate", str(run)], key)
    assert not (run / "ablation-zero.json").exists()
    with pytest.raises(PosencError, match="another config"):
        load_run(run)
    if "n_heads" not in edit:  # asking for what the edited file says: the checkpoint says no
        _one_line(capsys, ["train", *SMALL, "--out", str(run), "--pe", edit["pe"]], "another config")


def test_load_run_checks_the_config_asked_for(run):
    asked = preset("smoke", pe="rope", seed=0, epochs=1, **{"task.n_samples": 300})
    assert load_run(run, expected=asked).config == asked
    assert load_run(run, expected=asked.replace(num_threads=2, device="cpu")).epoch == 1
    with pytest.raises(PosencError, match="seed 0 -> 3"):
        load_run(run, expected=asked.replace(seed=3))


def test_checkpoint_without_config_is_refused(run):
    ckpt = torch.load(run / CHECKPOINT, weights_only=True)
    del ckpt["config"]
    torch.save(ckpt, run / CHECKPOINT)
    with pytest.raises(PosencError, match="does not record a valid config"):
        load_run(run)


# -- item 7: damaged files ------------------------------------------------------------------

def _truncate(p):
    p.write_bytes(p.read_bytes()[:-7])


def _ckpt_edit(change):
    def edit(p):
        ckpt = torch.load(p, weights_only=True)
        change(ckpt)
        torch.save(ckpt, p)
    return edit


DAMAGE = {  # name -> (file, how, exit of `train` (resume/skip), exit of `ablate`, message)
    "metrics truncated": (METRICS, _truncate, 0, 0, ""),
    "metrics empty": (METRICS, lambda p: p.write_text(""), 0, 0, ""),
    "metrics missing": (METRICS, lambda p: p.unlink(), 0, 0, ""),
    "summary corrupt": (RESULT, lambda p: p.write_text('{"final": '), 2, 2, "corrupt or incomplete"),
    "summary {}": (RESULT, lambda p: p.write_text("{}"), 2, 2, "corrupt or incomplete"),
    "config not UTF-8": (CONFIG, lambda p: p.write_bytes(b'{"seed": "\xff\xfe"}'), 2, 2, "not UTF-8"),
    "checkpoint without optimizer": (CHECKPOINT, _ckpt_edit(lambda c: c.pop("optimizer")), 2, 0,
                                     "no optimizer state"),
    "checkpoint with a bad rng": (CHECKPOINT, _ckpt_edit(lambda c: c.update(rng=torch.zeros(3))),
                                  2, 0, "bad RNG state"),
    "checkpoint rng of the wrong size": (
        CHECKPOINT, _ckpt_edit(lambda c: c.update(rng=torch.zeros(7, dtype=torch.uint8))), 2, 0,
        "bad RNG state"),
}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_damaged_run_file_is_one_line_or_harmless(capsys, run, name):
    file, damage, train_code, ablate_code, match = DAMAGE[name]
    acc = load_run(run).metrics[-1]["test_acc"]
    damage(run / file)
    for argv, code in ((["train", *SMALL, "--out", str(run), "--pe", "rope"], train_code),
                       (["ablate", str(run), "--examples", "50"], ablate_code)):
        if code == 2:
            _one_line(capsys, argv, match)
        else:
            assert main(argv) == 0
            out = capsys.readouterr()
            assert "Traceback" not in out.err
            if argv[0] == "train":  # the checkpoint's metrics, not the damaged file's
                assert f"test accuracy {acc:.4f}" in out.out


def test_bad_seed_and_non_utf8_config_file(capsys, tmp_path):
    _one_line(capsys, ["train", *SMALL, "--seed", "-1", "--out", str(tmp_path / "r")], "seed")
    assert not (tmp_path / "r").exists()
    (tmp_path / "c.json").write_bytes(b"\xff\xfe{}")
    _one_line(capsys, ["train", "--config", str(tmp_path / "c.json")], "not UTF-8")


# -- item 7: full disk and read-only folders, simulated in the atomic writer ------------------

def _no_space(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device")


def _read_only(*a, **k):
    raise PermissionError(errno.EACCES, "Permission denied")


FAULTS = {"ENOSPC": ("fsync", _no_space, "No space left"),
          "read-only": ("tempfile.mkstemp", _read_only, "Permission denied")}


def _fault(monkeypatch, kind):
    where, fn, match = FAULTS[kind]
    if where == "fsync":
        monkeypatch.setattr(posenc.atomic.os, "fsync", fn)
    else:
        monkeypatch.setattr(posenc.atomic.tempfile, "mkstemp", fn)
    return match


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("kind", list(FAULTS))
def test_train_on_a_full_or_read_only_disk(capsys, tmp_path, monkeypatch, kind):
    match = _fault(monkeypatch, kind)
    _one_line(capsys, ["train", *SMALL, "--out", str(tmp_path / "r")], match)
    assert _files(tmp_path / "r") == []  # no partial file, not even a hidden temporary one


@pytest.mark.parametrize("kind", list(FAULTS))
def test_ablate_on_a_full_or_read_only_disk(capsys, run, monkeypatch, kind):
    before = {p: (run / p).read_bytes() for p in _files(run)}
    match = _fault(monkeypatch, kind)
    _one_line(capsys, ["ablate", str(run), "--examples", "50"], match)
    _one_line(capsys, ["ablate", str(run), "--examples", "50", "--plot", str(run / "s.png")], match)
    assert {p: (run / p).read_bytes() for p in _files(run)} == before


@pytest.mark.parametrize("kind", list(FAULTS))
def test_dynamics_record_on_a_full_or_read_only_disk(capsys, tmp_path, monkeypatch, kind):
    match = _fault(monkeypatch, kind)
    _one_line(capsys, ["dynamics", str(tmp_path / "d"), "--record", "--preset", "smoke",
                       "--epochs", "1"], match)
    assert _files(tmp_path / "d") == []


# -- item 8: --threads 0 means the same in every command: refused ------------------------------

def test_threads_zero_is_refused_by_every_command(capsys, run, tmp_path):
    for argv in (["train", *SMALL, "--out", str(tmp_path / "t")],
                 ["ablate", str(run)],
                 ["dynamics", str(tmp_path / "d"), "--record", "--preset", "smoke"],
                 ["reproduce", "--preset", "smoke", "--out", str(tmp_path / "s")]):
        for bad in ("0", "-2"):
            err = _one_line(capsys, [*argv, "--threads", bad], "must be a positive integer")
            assert "threads" in err and f"got {bad}" in err, err
    assert not any(tmp_path.glob("[tds]"))  # refused before anything was written


def test_a_checkpoint_write_on_a_full_disk_names_the_file_system_error(tmp_path, monkeypatch):
    """A real full disk fails in the middle of torch's writer, whose own error was
    "[enforce fail at inline_container.cc:672] ..."; the checkpoint is serialised in memory and
    written by posenc, so the file system's "No space left on device" comes out, naming the file."""
    from posenc.empirical.training.runs import atomic_torch_save
    from posenc.errors import WriteError
    real = posenc.atomic.os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh, self.written = fh, 0

        def write(self, data):
            self.written += len(data)
            if self.written > 1000:  # the disk fills after the first kilobyte
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.fh.write(data)

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.fh.__exit__(*exc)
    monkeypatch.setattr(posenc.atomic.os, "fdopen", lambda fd, mode: Full(real(fd, mode)))
    with pytest.raises(WriteError, match="No space left on device") as info:
        atomic_torch_save({"w": torch.zeros(10_000)}, tmp_path / "checkpoint.pt")
    assert "checkpoint.pt" in str(info.value) and "enforce" not in str(info.value)
    assert _files(tmp_path) == []
