"""The CLI: sub-commands run, and user errors give one line and exit status 2."""

import subprocess
import sys

import pytest


def run_cli(*args, check_code=None):
    proc = subprocess.run([sys.executable, "-m", "posenc", *args], capture_output=True, text=True)
    if check_code is not None:
        assert proc.returncode == check_code, proc.stderr
    return proc


def test_encodings_lists_every_family():
    out = run_cli("encodings", check_code=0).stdout
    for name in ("nope", "sinusoidal", "learned_absolute", "relative_bias", "alibi", "rope", "mla",
                 "hybrid", "custom", "paper-rope"):
        assert name in out


@pytest.mark.parametrize("args", [["nosuchcommand"], ["encodings", "--bogus"]])
def test_bad_arguments_give_one_line_and_status_2(args):
    proc = run_cli(*args, check_code=2)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_stop_on_without_patience_is_one_line_from_cli_and_api(tmp_path):
    """train --stop-on accuracy_or_loss needs --patience: the CLI's line is the API's, exit 2,
    no run folder written."""
    import posenc
    from posenc.errors import PosencError

    out = tmp_path / "run"
    proc = run_cli("train", "--preset", "smoke", "--stop-on", "accuracy_or_loss", "--out", str(out),
                   check_code=2)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "stop_on accuracy_or_loss is an early-stopping rule: give patience too" in proc.stderr
    with pytest.raises(PosencError) as err:
        posenc.train("distance", "rope", preset="smoke", out=str(out),
                     overrides={"stop_on": "accuracy_or_loss"})
    assert str(err.value) in proc.stderr and not out.exists()


def _subparsers():
    """{name: parser} of every sub-command, and "" for the top-level parser."""
    import argparse

    from posenc.cli import build_parser

    top = build_parser()
    subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return {"": top, **subs.choices}


@pytest.mark.parametrize("argv, line", [
    (["bound", "rope"], "posenc: error: bound: the following arguments are required: --n"),
    (["check", "x:f", "--timeout", "soon"],
     "posenc: error: check: argument --timeout: invalid float value: 'soon'"),
    (["--bogus"], "posenc: error: unrecognized arguments: --bogus"),
])
def test_an_argument_error_says_posenc_once(capsys, argv, line):
    """One prefix: main's "posenc: error:", then the sub-command's name -- not "posenc: error:
    posenc bound: ..." as argparse's prog made it."""
    from posenc.cli import main

    assert main(argv) == 2
    assert capsys.readouterr().err == line + "\n"


def test_no_help_text_shows_rest_markup():
    """Module docstrings feed the descriptions: their ``literals`` and :role:`targets` are
    written in plain words in --help."""
    import re

    for name, parser in _subparsers().items():
        text = parser.format_help()
        assert "``" not in text and not re.search(r":[a-z]+:`", text), (name or "posenc", text)


@pytest.mark.parametrize("flag", ["--head-dim", "--dim"])
def test_check_takes_head_dim_like_every_command_and_dim_still(capsys, flag):
    """check's head dimension is --head-dim, as in derive, bound and train; the old --dim is an
    unlisted alias that still reaches the checker."""
    from posenc.cli import main

    assert "--head-dim" in _subparsers()["check"].format_help()
    assert "--dim" not in _subparsers()["check"].format_help().replace("--head-dim", "")
    assert main(["check", "posenc.numerics.logits:rotate", flag, "5"]) == 2
    assert capsys.readouterr().err == "posenc: error: --head-dim must be an even number in " \
                                      "[2, 4096]; got 5\n"


def test_train_set_reaches_the_config_and_its_own_flags_win(api_train_configs, tmp_path):
    """train --set KEY=VALUE, as reproduce has it; an explicit flag (--epochs, --patience) wins
    over a --set of the same field."""
    from posenc.cli import main

    with pytest.raises(api_train_configs.stopped):
        main(["train", "--preset", "smoke", "--out", str(tmp_path / "r"), "--set", "model.n_layers=1",
              "--set", "lr=0.01", "--set", "task.sampler=\"paper\"", "--set", "epochs=7",
              "--epochs", "2", "--set", "patience=9", "--patience", "3"])
    [cfg] = api_train_configs
    assert (cfg.model.n_layers, cfg.lr, cfg.task.sampler) == (1, 0.01, "paper")
    assert (cfg.epochs, cfg.patience) == (2, 3)


def test_dynamics_record_takes_set(monkeypatch, tmp_path):
    import posenc.empirical.pipeline.dynamics_sweep as sweep
    from posenc.cli import main

    jobs = []

    class Recorded(Exception):
        pass

    def no_recording(job, folder, threads):
        jobs.append(job)
        raise Recorded

    monkeypatch.setattr(sweep, "dynamics_worker", no_recording)
    with pytest.raises(Recorded):
        main(["dynamics", str(tmp_path / "r"), "--record", "--preset", "smoke",
              "--set", "model.n_layers=1", "--set", "epochs=5", "--epochs", "2"])
    assert jobs[0]["train"]["model"]["n_layers"] == 1 and jobs[0]["train"]["epochs"] == 2


@pytest.mark.parametrize("command", [["train", "--preset", "smoke"],
                                     ["dynamics", "RUN", "--record", "--preset", "smoke"]])
@pytest.mark.parametrize("setting, line", [
    ("epochs", "--set takes KEY=VALUE; got 'epochs'"),
    ("model.nosuch=1", "unknown config key 'model.nosuch'"),
    ("seed=5", "--set seed=... would change what the run is: set the seed (--seed, --first-seed) "
               "with its own argument"),
])
def test_a_bad_set_is_one_line_and_writes_nothing(capsys, tmp_path, command, setting, line):
    from posenc.cli import main

    out = tmp_path / "r"
    argv = [str(out) if a == "RUN" else a for a in command]
    argv += [] if "RUN" in command else ["--out", str(out)]
    assert main([*argv, "--set", setting]) == 2
    assert capsys.readouterr().err == f"posenc: error: {line}\n" and not out.exists()


def test_dynamics_set_without_record_is_refused(capsys, tmp_path):
    from posenc.cli import main

    assert main(["dynamics", str(tmp_path), "--set", "epochs=1"]) == 2
    assert capsys.readouterr().err == ("posenc: error: dynamics: --set changes the run that "
                                       "--record trains; give --record\n")


def _help_words(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    return {name: parser.format_help().split() for name, parser in _subparsers().items()}


@pytest.mark.parametrize("columns", [24, 50, 64, 80, 100])
def test_help_wraps_only_at_spaces(monkeypatch, columns):
    """Wrapped at a terminal width, every command's help holds the same words as unwrapped (at
    2,000 columns): a name broken at its hyphens (``paper-`` / ``small``) or a long word cut in
    two would show as words the wide help does not have."""
    wide = _help_words(monkeypatch, 2000)
    narrow = _help_words(monkeypatch, columns)
    assert narrow.keys() == wide.keys()
    for name in wide:
        assert narrow[name] == wide[name], name
