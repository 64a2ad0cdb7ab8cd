"""The front door: ``import posenc`` gives the toolkit lazily, with the CLI's own errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import posenc
from posenc.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_import_is_lazy(tmp_path):
    """``import posenc`` loads no heavy module, nor does naming a front-door function (the
    lazy-import rule of docs/architecture.md; tests/test_layers.py holds the report and the CLI
    to it)."""
    code = ("import sys, posenc\n"
            "heavy = [m for m in ('torch', 'sympy', 'scipy', 'matplotlib', 'hypothesis') "
            "if m in sys.modules]\n"
            "print(heavy)\n"
            "posenc.bound\n"
            "print('sympy' in sys.modules, 'torch' in sys.modules, 'scipy' in sys.modules)\n")
    out = _run_python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "[]"
    assert lines[1] == "False False False"   # bound's module imports numerics only when called


def test_every_public_name_resolves():
    for name in posenc.__all__:
        assert getattr(posenc, name) is not None
    assert set(posenc.__all__) <= set(dir(posenc))
    with pytest.raises(AttributeError):
        posenc.no_such_name  # noqa: B018


def test_posenc_error_is_a_value_error():
    assert issubclass(posenc.PosencError, ValueError)
    with pytest.raises(ValueError):
        posenc.parse_spec("rope:base=")


#: (Python call, the same request on the command line)
BAD_INPUT = [
    (lambda: posenc.derive("nonsense"), ["derive", "nonsense"]),
    (lambda: posenc.derive("rope:pairing=diagonal"), ["derive", "rope:pairing=diagonal"]),
    (lambda: posenc.bound("alibi", n=[0]), ["bound", "alibi", "--n", "0"]),
    (lambda: posenc.bound("nope:x=1", n=[8]), ["bound", "nope:x=1", "--n", "8"]),
    (lambda: posenc.bound("alibi", n=[20000], method="dense"),
     ["bound", "alibi", "--n", "20000", "--method", "dense"]),
    (lambda: posenc.verify("no-such-claim"), ["verify", "no-such-claim"]),
    (lambda: posenc.verify(profile="ci", examples=0), ["verify", "--examples", "0"]),
    (lambda: posenc.check("no_such_module_xyz:f"), ["check", "no_such_module_xyz:f"]),
    (lambda: posenc.check("no_such_module_xyz:f", kind="alibi"),
     ["check", "no_such_module_xyz:f", "--kind", "alibi"]),
    (lambda: posenc.train("distance", "rope", preset="huge"),
     ["train", "--pe", "rope", "--preset", "huge"]),
    (lambda: posenc.train("sorting", "rope", preset="smoke"),
     ["train", "--task", "sorting", "--preset", "smoke"]),
    (lambda: posenc.load_run("/nonexistent/run"), ["ablate", "/nonexistent/run"]),
    (lambda: posenc.reproduce("huge"), ["reproduce", "--preset", "huge"]),
    (lambda: posenc.reproduce("smoke", backend="slurm"),
     ["reproduce", "--preset", "smoke", "--backend", "slurm"]),
    # an override may not change what a run is (its role's PE, task, seed): once it relabelled
    # every role of a sweep ("rope" training ALiBi) or raised a TypeError
    (lambda: posenc.reproduce("smoke", overrides={"model.pe": "alibi"}),
     ["reproduce", "--preset", "smoke", "--set", 'model.pe="alibi"']),
    (lambda: posenc.reproduce("smoke", overrides={"seed": 5}),
     ["reproduce", "--preset", "smoke", "--set", "seed=5"]),
    (lambda: posenc.reproduce("smoke", overrides={"task.name": "count"}),
     ["reproduce", "--preset", "smoke", "--set", 'task.name="count"']),
    (lambda: posenc.reproduce("smoke", overrides={"pe": "alibi"}),
     ["reproduce", "--preset", "smoke", "--set", "pe=alibi"]),
    (lambda: posenc.reproduce("smoke", overrides={"lr": float("inf")}),
     ["reproduce", "--preset", "smoke", "--set", "lr=Infinity"]),
]


@pytest.mark.parametrize("call,argv", BAD_INPUT, ids=[" ".join(a) for _, a in BAD_INPUT])
def test_bad_input_raises_the_cli_message(call, argv, capsys):
    with pytest.raises(posenc.PosencError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"posenc: error: {message}"]


@pytest.mark.parametrize("overrides,fragment", [
    ({"model.pe": "alibi"}, "set the PE"), ({"seed": 5}, "set the seed"),
    ({"task": {"name": "count"}}, "set the task"), ({"model.code": "paper"}, "--paper-code"),
    ({"lr": float("nan")}, "'lr' must be float; got nan"), ({"lr": float("inf")}, "lr must be a finite"),
    ({"weight_decay": float("inf")}, "weight_decay must be a finite number"),
    ({"grad_clip": 0}, "grad_clip must be a finite number > 0"),
    ({"task.sampler": "code"}, "task.sampler must be one of clean, paper; got 'code'")])
def test_train_refuses_overrides_that_contradict_its_arguments(tmp_path, overrides, fragment):
    with pytest.raises(posenc.PosencError, match=fragment):
        posenc.train("distance", "rope", preset="smoke", seed=0, out=tmp_path / "r",
                     overrides=overrides)
    assert not (tmp_path / "r").exists()


def test_bound_report_is_the_cli_json(capsys):
    import json

    from posenc.numerics.bound_table import bound_report

    rep = posenc.bound("alibi", n=[16, 48])
    raw = bound_report("alibi", [16, 48])
    got = rep.to_dict()
    for row in got["rows"] + raw["rows"]:
        row.pop("seconds")
    assert got == raw
    assert all(isinstance(r, posenc.BoundRow) for r in rep.rows)
    assert [g.n for g in rep.growth] == [16, 48]
    assert main(["bound", "alibi", "--n", "16,48", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [r["quantity"] for r in printed["rows"]] == [r.quantity for r in rep.rows]


def test_bound_violations_are_the_rows_that_break_their_bound():
    rep = posenc.bound("rope", n=32)
    assert rep.violations == tuple(r for r in rep.rows if r.holds is False) == ()
    broken = posenc.BoundReport(rep.spec, rep.kernel, rep.content,
                                rep.rows[:1] + (rep.rows[1].__class__(
                                    **{**rep.rows[1].__dict__, "holds": False}),), rep.growth)
    assert broken.violations == (broken.rows[1],)


def test_to_frame_needs_pandas_only_when_called():
    rep = posenc.bound("alibi", n=8)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(posenc.PosencError, match="pandas"):
            rep.to_frame()
    else:
        frame = rep.to_frame()
        assert list(frame["quantity"]) == [r.quantity for r in rep.rows]


def test_verify_returns_typed_results():
    (res,) = posenc.verify("rope-relative-identity", examples=3)
    assert isinstance(res, posenc.ClaimResult)
    assert res.claim == "rope-relative-identity" and res.ok and res.holds
    assert res.to_dict()["claim"] == res.claim


def _rope(x, pos, base=10000.0):
    theta = base ** (-np.arange(0, x.shape[-1], 2) / x.shape[-1])
    cos, sin = np.cos(pos[:, None] * theta), np.sin(pos[:, None] * theta)
    a, b = x[..., 0::2], x[..., 1::2]
    return np.stack([a * cos - b * sin, a * sin + b * cos], axis=-1).reshape(x.shape)


def test_check_takes_a_callable():
    good = posenc.check(_rope)
    assert isinstance(good, posenc.ConformanceReport) and good.kind == "rope" and good.ok
    assert good.impl == "_rope"
    absolute = posenc.check(lambda x, pos: _rope(x, pos * pos), kind="rope", name="squared")
    assert absolute.impl == "squared" and not absolute.ok
    with pytest.raises(posenc.PosencError, match="callable"):
        posenc.check(42)


def test_train_load_run_and_ablate(tmp_path):
    from posenc.empirical.analysis.ablation import ablate

    run = posenc.train("distance", "alibi", preset="smoke", seed=3, out=tmp_path / "r",
                       overrides={"epochs": 1})
    assert isinstance(run, posenc.Run) and run.training is not None
    assert run.config.model.pe == "alibi" and run.config.seed == 3 and run.config.epochs == 1
    again = posenc.train("distance", "alibi", preset="smoke", seed=3, out=tmp_path / "r",
                         overrides={"epochs": 1})
    assert again.training.skipped
    loaded = posenc.load_run(tmp_path / "r")
    table = posenc.ablate(tmp_path / "r", examples=64, save=True)
    direct = ablate(loaded.model, loaded.data().test.subset(slice(0, 64)), "zero")
    assert table == direct
    assert (tmp_path / "r" / "ablation-zero.json").is_file()


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Python", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README's Python section has no ```python block"
    return match.group(1)


@pytest.mark.slow
def test_readme_python_example_runs_verbatim(tmp_path):
    out = _run_python(_readme_example(), tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("multiplicative")
    assert lines[1].endswith("bounds violated: 0")
    assert lines[2] == "True"
    assert (tmp_path / "runs" / "rope" / "train_summary.json").is_file()


# -- arguments of the wrong kind (found by a hostile review): one PosencError, never a bare
#    TypeError/AttributeError/IndexError, a truthy string taken for True, or a wrong table --

@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("api") / "run"
    return posenc.train("distance", "rope", preset="smoke", seed=0, out=out,
                        overrides={"epochs": 1})


WRONG_KIND = {
    "bound content 9x8": lambda: posenc.bound("alibi", 8, content=np.ones((9, 8))),
    "bound content NaN": lambda: posenc.bound("alibi", 8, content=np.full((8, 8), np.nan)),
    "bound content complex": lambda: posenc.bound("alibi", 8, content=np.eye(8) * 1j),
    "bound content 3-D": lambda: posenc.bound("alibi", 8, content=np.ones((8, 8, 2))),
    "bound content str": lambda: posenc.bound("alibi", 8, content="x"),
    "bound content short tuple": lambda: posenc.bound("alibi", 8, content=("seeded", 2)),
    "bound content seed -1": lambda: posenc.bound("alibi", 8, content=("seeded", 2, -1)),
    "bound seed -1": lambda: posenc.bound("relative_bias", 8, seed=-1),
    "bound seed 1.5": lambda: posenc.bound("learned_absolute", 8, seed=1.5),
    "bound n float": lambda: posenc.bound("alibi", 8.0),
    "bound n None": lambda: posenc.bound("alibi", None),
    "bound spec None": lambda: posenc.bound(None, 8),
    "bound head True": lambda: posenc.bound("alibi", 8, head=True),
    "bound values str": lambda: posenc.bound("relative_bias", 8, values="x"),
    "verify []": lambda: posenc.verify([]),
    "verify 3": lambda: posenc.verify(3),
    "verify [None]": lambda: posenc.verify([None]),
    "derive None": lambda: posenc.derive(None),
    "derive prove str": lambda: posenc.derive("nope", prove="no"),
    "train pe None": lambda: posenc.train("distance", None, preset="smoke"),
    "train out 5": lambda: posenc.train("distance", "rope", preset="smoke", out=5),
    "train overrides list": lambda: posenc.train("distance", "rope", preset="smoke",
                                                 overrides=["a"]),
    "train paper_code str": lambda: posenc.train("distance", "rope", preset="smoke",
                                                 paper_code="yes"),
    "train seed 2**70": lambda: posenc.train("distance", "rope", preset="smoke", seed=2**70),
    "train device bogus": lambda: posenc.train("distance", "rope", preset="smoke",
                                               device="bogus"),
    "load_run None": lambda: posenc.load_run(None),
    "reproduce roles []": lambda: posenc.reproduce("smoke", roles=[]),
    "reproduce workers 1.5": lambda: posenc.reproduce("smoke", workers=1.5),
    "reproduce log None": lambda: posenc.reproduce("smoke", log=None),
    "reproduce overrides list": lambda: posenc.reproduce("smoke", overrides=["x"]),
    # a string was taken as True (and ran the whole sweep)
    "reproduce wait no": lambda: posenc.reproduce("smoke", wait="no"),
    "reproduce until_decided yes": lambda: posenc.reproduce("smoke", until_decided="yes"),
}


@pytest.mark.parametrize("name", sorted(WRONG_KIND))
def test_an_argument_of_the_wrong_kind_is_one_posenc_error(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(posenc.PosencError) as info:
        WRONG_KIND[name]()
    assert "\n" not in str(info.value)
    assert not any(tmp_path.iterdir()), "a refused call left files behind"


@pytest.mark.parametrize("call", [
    lambda run: posenc.ablate(run, batch_size=-1),
    lambda run: posenc.ablate(run, batch_size=0),
    lambda run: posenc.ablate(run, save="no"),
    lambda run: posenc.ablate(run, bogus_option=1),
    lambda run: posenc.ablate(run, device="bogus"),
    lambda run: posenc.ablate(None),
    lambda run: posenc.load_run(run.run_dir, device="bogus"),
], ids=["batch -1", "batch 0", "save str", "unknown option", "device", "run None", "load device"])
def test_ablate_and_load_refuse_wrong_arguments(smoke_run, call):
    with pytest.raises(posenc.PosencError) as info:
        call(smoke_run)
    assert "corrupt" not in str(info.value)
    assert not (smoke_run.run_dir / "ablation-zero.json").exists()


def test_numpy_integers_are_integers(smoke_run):
    rep = posenc.bound("alibi", np.int64(8), head=np.int64(1))
    assert [g.n for g in rep.growth] == [8]
    table = posenc.ablate(smoke_run, examples=np.int64(10))
    assert table.n_examples == 10
    form = posenc.derive("rope", head_dim=np.int64(4), n_heads=np.int32(2))  # was refused
    assert (form.head_dim, form.n_heads) == (4, 2) and type(form.head_dim) is int


@pytest.mark.parametrize("options,fragment", [
    ({"seed": 2**70}, "seed=1180591620717411303424 exceeds"), ({"seed": "x"}, "seed must be"),
    ({"seed": -1}, "seed must be an integer >= 0"), ({"batch_size": 0}, "batch_size must be"),
    ({"batched": "no"}, "batched must be True or False"),
    ({"expand": 1}, "expand must be True, False or None")])
def test_ablate_options_are_checked_in_one_line(smoke_run, options, fragment):
    # seed=2**70 was a raw RuntimeError from torch's generator, seed="x" a raw ValueError
    with pytest.raises(posenc.PosencError, match=fragment):
        posenc.ablate(smoke_run, mode="resample", examples=10, **options)


def test_a_device_that_is_missing_writes_no_run_folder(tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(posenc.PosencError, match="cuda"):
        posenc.train("distance", "rope", preset="smoke", device="cuda", out=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_roles_and_tasks_take_a_comma_string():
    from posenc.arguments import names
    assert names("roles", "rope, alibi") == ["rope", "alibi"]
    assert names("roles", ("rope",)) == ["rope"]
    assert names("roles", None) is None


def test_bound_json_is_strict_and_the_cli_prints_it(capsys):
    import json
    rep = posenc.bound("alibi", [1, 2, 8])
    text = rep.to_json()
    assert "Infinity" not in text and "NaN" not in text
    assert any(r.exact == float("inf") for r in rep.rows)     # to_dict keeps the floats
    assert main(["bound", "alibi", "--n", "1,2,8", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    mine = json.loads(text)
    for doc in (printed, mine):
        for row in doc["rows"]:
            row.pop("seconds")
    assert printed == mine


def test_check_copies_the_input_of_an_in_place_rotary_function():
    def in_place(x, pos):
        x[...] = _rope(x, pos)
        return x
    assert posenc.check(in_place, kind="rope").ok


@pytest.mark.parametrize("timeout", [-1, "5", float("nan"), 0])
def test_check_validates_its_timeout_for_a_callable_too(timeout):
    with pytest.raises(posenc.PosencError, match="timeout"):
        posenc.check(_rope, timeout=timeout)


def test_parse_spec_of_a_non_string_says_so():
    with pytest.raises(posenc.PosencError, match="must be a string"):
        posenc.parse_spec(5)


@pytest.mark.parametrize("edit", [
    lambda s: s.update(best_test_acc=0.123),
    lambda s: s["final"].update(test_acc=0.5),
], ids=["best_test_acc", "final test_acc"])
def test_a_summary_that_disagrees_with_the_checkpoint_is_refused(smoke_run, tmp_path, edit):
    import json
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(smoke_run.run_dir, copy)
    assert posenc.load_run(copy).result == smoke_run.result
    summary = json.loads((copy / "train_summary.json").read_text())
    edit(summary)
    (copy / "train_summary.json").write_text(json.dumps(summary))
    with pytest.raises(posenc.PosencError, match="disagrees with the checkpoint"):
        posenc.load_run(copy)


def test_bound_values_file_with_nan_names_the_file(tmp_path, capsys):
    path = tmp_path / "v.npy"
    np.save(path, np.array([1.0, np.nan]))
    assert main(["bound", "relative_bias", "--n", "8", "--values", str(path)]) == 2
    assert capsys.readouterr().err.strip() == \
        f"posenc: error: values in {path} must be finite numbers (no NaN or infinity)"
    with pytest.raises(posenc.PosencError, match="^values must be finite"):
        posenc.bound("relative_bias", 8, values=np.array([1.0, np.inf]))


FUNCTIONS = sorted(n for n in posenc.__all__ if callable(getattr(posenc, n))
                   and not isinstance(getattr(posenc, n), type))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_public_function_refuses_an_unknown_keyword_in_one_line(name, tmp_path, monkeypatch):
    """As the CLI refuses an unknown option ("unrecognized arguments: --bogus 1"), before any
    work (run in an empty folder: nothing may be written); ablate, which takes **options,
    names its options itself."""
    import inspect
    monkeypatch.chdir(tmp_path)
    with pytest.raises(posenc.PosencError) as exc:
        getattr(posenc, name)("rope", bogus=1)
    text = str(exc.value)
    if any(p.kind is p.VAR_KEYWORD for p in inspect.signature(getattr(posenc, name)).parameters.values()):
        assert "bogus" in text
    else:
        assert text.startswith(f"posenc.{name}: unrecognized arguments: bogus=1 (it takes ")
    assert "\n" not in text and not list(tmp_path.iterdir())


def test_public_functions_still_pickle_by_reference():
    """The argument-checking wrapper is what ``posenc.NAME`` is, and pickles as that name (a
    process pool or a functools.partial can take it)."""
    import pickle
    for name in ("parse_spec", "bound", "train", "check"):
        fn = getattr(posenc, name)
        assert pickle.loads(pickle.dumps(fn)) is fn


def test_a_huge_integer_is_one_line_not_pythons_digit_limit():
    with pytest.raises(posenc.PosencError, match="base must be float; got an integer of about 5001"):
        posenc.spec_from_dict({"name": "rope", "base": 10 ** 5000})


def test_a_missing_argument_is_one_line_and_the_signature_is_kept():
    import inspect
    with pytest.raises(posenc.PosencError, match=r"posenc.bound: missing a required argument: 'n'"):
        posenc.bound("rope")
    assert "head_dim" in inspect.signature(posenc.bound).parameters
    assert posenc.bound.__doc__ and posenc.bound.__name__ == "bound"


def test_check_gives_a_rotary_function_its_head_dim():
    """head_dim reaches the function checked (dim, its former name, too); both at once: refused."""
    seen: list[int] = []

    def rope(x, positions):
        seen.append(x.shape[-1])
        return _rope(x, positions)
    assert posenc.check(rope, "rope", head_dim=12).ok and set(seen) == {12}
    seen.clear()
    assert posenc.check(rope, "rope", dim=6).ok and set(seen) == {6}
    seen.clear()
    assert posenc.check(rope, "rope").ok and set(seen) == {64}
    with pytest.raises(posenc.PosencError, match="dim is head_dim's former name"):
        posenc.check(rope, "rope", head_dim=8, dim=8)
