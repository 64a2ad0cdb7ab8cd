"""Fuzz (Hypothesis) of the CLI's inputs: spec strings, kernel expressions and numeric arguments
of derive, bound, check, verify and train ; reproduce's --set,
--roles, --seeds, --first-seed (up to the plan: the sweep is a stub), import-checkpoint with
broken files, and the Python API's keyword arguments against the CLI.

Every call runs in-process under a per-call alarm (:data:`PER_CALL_S`; a hang fails the
example) and must end with exit status 0, 1 or 2 -- never an exception escaping ``main``
(that is a traceback on the command line), never "Traceback" on stderr, and on status 2
exactly one ``posenc: error:`` line.  Example counts keep the whole file under ~90 s on one
core; sizes that are valid are drawn small (n <= 48, head dim <= 4), sizes that must be
refused are drawn from the whole range.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import io
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from posenc.cli import main
from posenc.encodings import NAMED_SPECS, REGISTRY

PER_CALL_S = 20
# A real sweep (one smoke run, its report and spectral table) takes ~13 s on an idle core and
# ~35 s beside a training worker (measured); under CI's two xdist workers it went past 20 s.
REAL_RUN_S = 240
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


class Hung(Exception):
    pass


def call(argv: list[str], limit_s: int | None = None) -> tuple[int, str, str]:
    """``main(argv)`` with its exit status and output.  A hang in Python code raises
    :class:`Hung` after ``limit_s`` (default PER_CALL_S); one inside C code (a huge integer
    power never returns to the interpreter, so no signal handler runs) is ended by
    faulthandler's watchdog thread, which dumps every thread's stack and exits the test
    process after 2 ``limit_s``."""
    limit_s = PER_CALL_S if limit_s is None else limit_s

    def _alarm(signum, frame):
        raise Hung(f"no answer within {limit_s} s")

    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit_s)
    faulthandler.dump_traceback_later(2 * limit_s, exit=True)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:                   # argparse: usage errors exit 2
                code = exc.code
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, out.getvalue(), err.getvalue()


def answer(argv: list[str], limit_s: int | None = None) -> tuple[int, str]:
    """(exit status, stderr) of ``main(argv)``, checked: 0, 1 or 2, no traceback, and on 2 one
    ``posenc: error:`` line."""
    code, out, err = call(argv, limit_s)
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    if code == 2 and err.startswith("posenc: error:"):
        assert err.count("\n") == 1, (argv, err)
    return code, err


def check_answer(argv: list[str], limit_s: int | None = None) -> int:
    return answer(argv, limit_s)[0]


# -- strategies -------------------------------------------------------------------------------

HUGE_INTS = ["0", "-1", "1e9", "1e8", "100000", "10000001", "1000000000000", "1e999", "nan",
             "2.5", "x", "", "1e-3"]


def kernel_text() -> st.SearchStrategy[str]:
    leaf = st.sampled_from(["k", "0", "1", "2", "9", "0.5", "10.0", "400", "1e300", "pi", "e",
                            "-1"])

    def extend(sub):
        return st.one_of(
            st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "**"]), sub).map(
                lambda t: f"({t[0]}){t[1]}({t[2]})"),
            st.tuples(st.sampled_from(["exp", "log", "sqrt", "abs", "sin", "tanh", "sign"]),
                      sub).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(st.sampled_from(["min", "max"]), sub, sub).map(
                lambda t: f"{t[0]}({t[1]}, {t[2]})"))
    structured = st.recursive(leaf, extend, max_leaves=8)
    chaotic = st.text(alphabet="k0129.+-*/()e, _a", max_size=24)
    towers = st.sampled_from(["9**9**9", "2**2**2**2**2", "10**400", "(-1)**0.5", "1/0", "0**-1",
                              "k**k", "2**(k**20)", "exp(exp(exp(k)))", "k.real", "__import__"])
    return st.one_of(structured, chaotic, towers)


def _fields(name: str) -> list[str]:
    cls = REGISTRY[name]
    return [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []


@st.composite
def spec_text(draw) -> str:
    kind = draw(st.sampled_from(["catalogue", "catalogue", "kernel", "preset", "garbage"]))
    if kind == "preset":
        return draw(st.sampled_from(sorted(NAMED_SPECS)))
    if kind == "kernel":
        return f"custom:kernel={draw(kernel_text())}"
    if kind == "garbage":
        return draw(st.text(alphabet="ropealibi:=,;.0123456789", max_size=20))
    name = draw(st.sampled_from(sorted(REGISTRY)))
    keys = _fields(name) + ["bogus", "additive", "additive.max_len", "heads"]
    params = draw(st.dictionaries(st.sampled_from(keys), st.one_of(
        st.sampled_from(HUGE_INTS + ["true", "false", "none", "half", "t5", "table", "exp",
                                     "causal", "1;0.5", "1;nan", "sinusoidal", "4", "2", "8"]),
        st.integers(-3, 70).map(str)), max_size=3))
    return name + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")


def mostly(valid: list, invalid: list) -> st.SearchStrategy:
    """Valid values three times as likely, so that the other arguments reach the deep paths."""
    return st.sampled_from(valid * 3 + invalid)


@settings(FUZZ, max_examples=40)
@given(expr=kernel_text(), n=mostly(["8", "33"], ["1", "10000001"]))
def test_fuzz_kernel_expressions_in_bound(expr, n):
    check_answer(["bound", f"custom:kernel={expr}", "--n", n, "--reference", "none"])


@settings(FUZZ, max_examples=50)
@given(spec=spec_text(), n=st.one_of(st.integers(1, 48).map(str), st.sampled_from(HUGE_INTS),
                                     st.just("8,16")),
       head_dim=mostly(["2", "4", "8"], ["7", "0", "-2", "100000", "65536"]),
       heads=mostly(["1", "2", "8"], HUGE_INTS),
       content=mostly(["rank=2,seed=1"], ["rank=1e9", "rank=0", "rank=x", "bogus", "no.npy"]),
       method=st.sampled_from(["auto", "dense", "lanczos"]))
def test_fuzz_bound(spec, n, head_dim, heads, content, method):
    check_answer(["bound", spec, "--n", n, "--head-dim", head_dim, "--heads", heads,
                  "--content", content, "--method", method, "--reference", "none"])


@settings(FUZZ, max_examples=15)
@given(expr=kernel_text())
def test_fuzz_kernel_expressions_in_derive(expr):
    check_answer(["derive", f"custom:kernel={expr}"])


@settings(FUZZ, max_examples=25)
@given(spec=spec_text(), head_dim=mostly([None, "2"], ["0", "9", "100000", "x"]),
       heads=mostly([None, "1", "2"], ["0", "17", "1000000000"]))
def test_fuzz_derive(spec, head_dim, heads):
    argv = ["derive", spec, "--json"]
    if head_dim is not None:
        argv += ["--head-dim", head_dim]
    if heads is not None:
        argv += ["--heads", heads]
    check_answer(argv)


@settings(FUZZ, max_examples=12)
@given(impl=st.sampled_from(["rope_interleaved.py:rope", "alibi.py:alibi", "missing.py:f",
                             "rope_half.py:nothere"]),
       dim=mostly(["2", "4", "16"], ["3", "0", "-2", "100000", "x"]),
       kind=st.sampled_from([None, "rope", "bias"]))
def test_fuzz_check(impl, dim, kind):
    argv = ["check", str(EXAMPLES / impl), "--dim", dim]
    check_answer(argv + (["--kind", kind] if kind else []))


@settings(FUZZ, max_examples=10)
@given(examples=mostly(["1", "2"], ["0", "-1", "1000000000", "x"]),
       claim=st.sampled_from(["no-such-claim", "toeplitz-alibi", None]))
def test_fuzz_verify(examples, claim):
    argv = ["verify", "--examples", examples] + ([claim] if claim else ["--list"])
    check_answer(argv)


@settings(FUZZ, max_examples=8)
@given(pe=st.one_of(st.sampled_from(["rope", "alibi", "nope", "custom:kernel=-abs(k)"]),
                    spec_text()),
       samples=mostly(["64"], ["0", "-1", "1000000000000", "2000000", "x"]),
       epochs=mostly(["1"], ["0", "10000000", "x"]),
       seed=mostly(["0"], ["-1", "x"]))
def test_fuzz_train_smoke(tmp_path_factory, pe, samples, epochs, seed):
    out = tmp_path_factory.mktemp("run")
    check_answer(["train", "--preset", "smoke", "--pe", pe, "--samples", samples,
                  "--epochs", epochs, "--seed", seed, "--out", str(out / "r"), "--threads", "1"])


def test_the_harness_reports_a_hang(monkeypatch):
    """The alarm really fires: a call that never returns fails the example."""
    import time
    monkeypatch.setitem(globals(), "PER_CALL_S", 1)
    monkeypatch.setitem(globals(), "main", lambda argv: time.sleep(5) or 0)
    with pytest.raises(Hung):
        call(["anything"])


# -- reproduce: --set, --roles, --seeds, --first-seed --------------------------------

SET_VALID = ["epochs=1", "lr=0.001", "task.n_samples=200", "model.n_layers=1", "grad_clip=null",
             "patience=2", "betas=[0.9, 0.98]", "model.dropout=0.1", "weight_decay=0"]
SET_KEYS = ["epochs", "lr", "batch_size", "task.n_samples", "model.n_layers", "grad_clip",
            "weight_decay", "patience", "model.dropout", "betas", "model.pe", "seed", "task",
            "preset", "pe", "bogus", "task.bogus", "", " ", "model", "task.name", "lr.x"]
SET_VALUES = ["1", "0", "-1", "2.5", "1e9", "1e999", "-1e999", "NaN", "Infinity", "true", "null",
              '"x"', "x", "[1]", "[0.9, 0.98]", "{}", "", "10000000000000000000000", "1e-3"]


@contextlib.contextmanager
def plan_only():
    """``reproduce`` with every check it makes before the first run, and no run and no report:
    the sweep (``run_plan``) and ``build_report`` are replaced by stubs that record the plan
    (the sweep itself is tested end to end in tests/report and tests/test_store_reliability.py).
    Yields the list of plans that got through."""
    import posenc.reproduction.run as orchestrate
    reached: list = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(orchestrate, "run_plan", lambda plan, store, **kw: reached.append(plan))
        mp.setattr(orchestrate, "build_report", lambda root, **kw: Path(root) / "report.md")
        yield reached


@st.composite
def bad_set_item(draw) -> str:
    key, value = draw(st.sampled_from(SET_KEYS)), draw(st.sampled_from(SET_VALUES))
    return draw(st.sampled_from([f"{key}={value}", f"{key}={value}", key, f"={value}",
                                 f"{key}=={value}"]))


def set_items() -> st.SearchStrategy[list[str]]:
    """0-2 ``--set`` options, two of three valid."""
    item = st.one_of(st.sampled_from(SET_VALID), st.sampled_from(SET_VALID), bad_set_item())
    return st.lists(item, max_size=2).map(lambda xs: [a for x in xs for a in ("--set", x)])


REPRODUCE_SEEDS = ["0", "-1", "1001", "1000000000", "x", "2.5", "1e3", ""]
ROLES_TEXT = ["", " , ", ",", "bogus", "nope,bogus", "NOPE", "nope;rope", "rope,rope",
              "nope,,rope", "mla" * 40]


@settings(FUZZ, max_examples=120)
@given(sets=set_items(), roles=mostly([None, "nope", "rope,alibi", "rope-1head"], ROLES_TEXT),
       seeds=mostly([None, "1", "2"], REPRODUCE_SEEDS),
       first=mostly([None, "0", "7"], ["-1", "2147483647", "2147483646", "1e99", "x"]),
       count_seeds=st.sampled_from([None, None, "1", "0", "5000"]),
       preset=st.sampled_from(["smoke", "smoke", "quick", "paper", "bogus"]),
       tasks=st.sampled_from([None, None, "distance", "count", "distance,count", " , ", "x"]))
def test_fuzz_reproduce_plan(tmp_path_factory, sets, roles, seeds, first, count_seeds, preset,
                             tasks):
    out = tmp_path_factory.mktemp("store") / "s"
    argv = ["reproduce", "--preset", preset, "--out", str(out), "--no-theory", *sets]
    for option, value in (("--roles", roles), ("--seeds", seeds), ("--first-seed", first),
                          ("--count-seeds", count_seeds), ("--tasks", tasks)):
        if value is not None:
            argv += [option, value]
    with plan_only() as reached:
        code = check_answer(argv)
    assert code in (0, 2), argv
    assert (code == 0) == bool(reached), argv
    if code == 2:  # refused before anything was written
        assert not out.exists(), argv


def test_reproduce_runs_at_the_edge_of_the_valid_values(tmp_path):
    """A valid plan runs for real, as small as a sweep gets (one smoke run, ~10 s): the last
    seed allowed, overridden epochs and learning rate.  It is real work, not a fuzz example,
    so its limit is :data:`REAL_RUN_S`."""
    out = tmp_path / "s"
    code = check_answer(["reproduce", "--preset", "smoke", "--seeds", "1", "--first-seed",
                         "2147483647", "--roles", "nope", "--tasks", "distance", "--no-theory",
                         "--workers", "1", "--out", str(out), "--set", "epochs=1", "--set",
                         "lr=1e-3"], limit_s=REAL_RUN_S)
    assert code == 0 and (out / "report" / "report.md").is_file()


# -- import-checkpoint with broken files ------------------------------------------------------

V, D, H, FF, LAYERS = 16, 32, 4, 64, 2   # the paper code's model at smoke sizes (tests/empirical)


def paper_shapes(pe: str) -> dict[str, tuple[int, ...]]:
    """Key names and shapes of the state_dict the paper's trans.py saves for ``nope`` (and
    ``alibi``); ``relative`` adds its (2M+1, H) table per layer."""
    shapes = {"embedding.weight": (V, D), "fc_out.weight": (V, D), "fc_out.bias": (V,)}
    for l in range(LAYERS):
        for name in ("q_linear", "k_linear", "v_linear", "out_linear"):
            shapes[f"layers.{l}.{name}.weight"], shapes[f"layers.{l}.{name}.bias"] = (D, D), (D,)
        shapes.update({f"layers.{l}.ffn.0.weight": (FF, D), f"layers.{l}.ffn.0.bias": (FF,),
                       f"layers.{l}.ffn.2.weight": (D, FF), f"layers.{l}.ffn.2.bias": (D,)})
        for norm in ("norm1", "norm2"):
            shapes[f"layers.{l}.{norm}.weight"] = shapes[f"layers.{l}.{norm}.bias"] = (D,)
        if pe == "relative":
            shapes[f"layers.{l}.relative_bias_table"] = (2 * 8 + 1, H)
    return shapes


def paper_state_dict(pe: str = "nope") -> dict:
    """A state_dict that import-checkpoint accepts as the paper code's ``pe`` model."""
    import torch
    gen = torch.Generator().manual_seed(0)
    return {k: torch.randn(s, generator=gen) * 0.1 for k, s in paper_shapes(pe).items()}


DAMAGE = ["none", "drop", "extra", "nan", "inf", "complex", "int", "bool", "scalar", "empty",
          "transpose", "extra-axis", "flat", "half", "not-a-tensor", "int-key", "float16",
          "wide"]
EXTRA_KEYS = ["layers.2.norm1.weight", "bogus", "layers.x.q_linear.weight",
              "layers.0.relative_bias_table"]


def damaged(pe: str, key: str, how: str) -> dict:
    """The state_dict of :func:`paper_state_dict` with ``key`` broken as ``how`` says."""
    import torch
    sd = paper_state_dict(pe)
    t = sd[key]
    replace = {"nan": lambda: torch.full_like(t, float("nan")),
               "inf": lambda: torch.full_like(t, float("-inf")),
               "complex": lambda: t.to(torch.complex64), "int": lambda: t.long(),
               "bool": lambda: t > 0, "scalar": lambda: torch.tensor(1.0),
               "empty": lambda: torch.zeros(0), "transpose": lambda: t.t() if t.dim() == 2 else t,
               "extra-axis": lambda: t[None], "flat": lambda: t.flatten(),
               "half": lambda: t[: max(1, t.shape[0] // 2)], "not-a-tensor": lambda: [1, 2],
               "float16": lambda: t.half(), "wide": lambda: torch.cat([t, t], dim=-1)}
    if how == "drop":
        del sd[key]
    elif how == "extra":
        sd[EXTRA_KEYS[len(key) % len(EXTRA_KEYS)]] = torch.zeros(3)
    elif how == "int-key":
        sd[7] = sd.pop(key)
    elif how in replace:
        sd[key] = replace[how]()
    return sd


@st.composite
def checkpoint_recipe(draw) -> tuple:
    """How to make a checkpoint file: garbage, empty, a zip header, a torch file of something
    else, a damaged state_dict (whole or truncated).  A recipe, not the bytes, so that a
    failing example prints readably; :func:`checkpoint_bytes` makes the file."""
    kind = draw(st.sampled_from(["garbage", "empty", "zip-head", "other", "dict", "dict", "dict",
                                 "dict", "truncated"]))
    if kind in ("garbage", "zip-head"):
        return kind, draw(st.binary(min_size=1, max_size=48))
    if kind == "other":
        return kind, draw(st.sampled_from(["tensor", "list", "int", "str", "{}", "{a: 1}"]))
    pe = draw(st.sampled_from(["nope", "relative"]))
    key = draw(st.sampled_from(sorted(paper_shapes(pe))))
    recipe = (kind, pe, key, draw(st.sampled_from(DAMAGE)))
    return recipe + ((draw(st.floats(0, 0.999)),) if kind == "truncated" else ())


def checkpoint_bytes(recipe: tuple) -> bytes:
    import torch
    kind = recipe[0]
    if kind == "garbage":
        return recipe[1]
    if kind == "empty":
        return b""
    if kind == "zip-head":
        return b"PK\x03\x04" + recipe[1]
    buf = io.BytesIO()
    if kind == "other":
        torch.save({"tensor": torch.zeros(3), "list": [1, 2], "int": 5, "str": "x", "{}": {},
                    "{a: 1}": {"a": 1}}[recipe[1]], buf)
        return buf.getvalue()
    torch.save(damaged(*recipe[1:4]), buf)
    data = buf.getvalue()
    return data[: int(recipe[4] * len(data))] if kind == "truncated" else data


def harmless(recipe: tuple) -> bool:
    """Damage that leaves a valid state_dict: none, float16 (cast back), a 1-D tensor flattened
    or transposed, a square weight transposed (no check can tell)."""
    if recipe[0] != "dict":
        return False
    how, shape = recipe[3], paper_shapes(recipe[1])[recipe[2]]
    return how in ("none", "float16") or how in ("transpose", "flat") and (
        len(shape) == 1 or how == "transpose" and shape[0] == shape[1])


@settings(FUZZ, max_examples=200)
@given(recipe=checkpoint_recipe(),
       pe=st.sampled_from(["same"] * 12 + ["nope", "relative", "alibi", "rope", "mla",
                                           "partialrope:2", "partialrope:0", "random", "bogus", ""]),
       heads=st.sampled_from(["4"] * 10 + ["0", "-1", "3", "7", "1e9", "x", "100000"]),
       seq_len=st.sampled_from([None] * 10 + ["16", "0", "-1", "1000000000", "x"]),
       task=st.sampled_from(["distance", "count"]))
@example(recipe=("dict", "relative", "layers.0.relative_bias_table", "scalar"), pe="same",
         heads="4", seq_len=None, task="distance")   # an IndexError traceback
@example(recipe=("dict", "nope", "layers.0.k_linear.bias", "scalar"), pe="same", heads="4",
         seq_len=None, task="distance")              # torch.cat's RuntimeError
@example(recipe=("dict", "nope", "layers.1.ffn.2.weight", "int"), pe="same", heads="4",
         seq_len=None, task="count")                 # integer weights were imported, cast
def test_fuzz_import_checkpoint(tmp_path_factory, recipe, pe, heads, seq_len, task):
    """Every broken file is one line, exit 2, and no folder; "same" is the PE the state_dict
    was made for."""
    if pe == "same":
        pe = recipe[1] if recipe[0] in ("dict", "truncated") else "nope"
    folder = tmp_path_factory.mktemp("import")
    (folder / "model.pth").write_bytes(checkpoint_bytes(recipe))
    argv = ["import-checkpoint", str(folder / "model.pth"), "--paper-code", "--pe", pe, "--task",
            task, "--out", str(folder / "run"), "--heads", heads, "--preset", "smoke",
            "--trigger-ids", "1,2" if task == "distance" else "1,2,3,4"]
    code = check_answer(argv + (["--seq-len", seq_len] if seq_len else []))
    assert code in (0, 2)
    if code == 2:  # nothing written, not even the hidden temporary folder
        assert sorted(p.name for p in folder.iterdir()) == ["model.pth"], argv
    else:  # a damaged checkpoint is never imported
        assert harmless(recipe), (recipe, argv)


def test_the_made_up_paper_checkpoint_imports(tmp_path):
    """The undamaged state_dicts of the fuzz test are valid ones (so that the damage is what
    the fuzz test's refusals are about)."""
    import torch
    for pe in ("nope", "relative"):
        torch.save(paper_state_dict(pe), tmp_path / f"{pe}.pth")
        assert check_answer(["import-checkpoint", str(tmp_path / f"{pe}.pth"), "--paper-code",
                             "--pe", pe, "--task", "distance", "--out", str(tmp_path / pe),
                             "--heads", "4", "--preset", "smoke", "--trigger-ids", "1,2"]) == 0


# -- the Python API's keyword arguments ---------------------------------------------------------

class Reached(Exception):
    """Raised by the stub that stands for training: the arguments were all accepted."""


API_VALUES = [0, -1, 1, 2, 3, 2**31, 2**70, 10**30, -(2**70), 2.5, 2.0, float("nan"),
              float("inf"), True, False, None, "", "x", "2", "none", "1e9", [1], [], {"a": 1},
              b"x", object()]


def _api_values() -> list:
    import numpy as np
    return API_VALUES + [np.int64(2), np.int64(-1), np.int32(2**31 - 1), np.float64(2.0),
                         np.float64("nan"), np.bool_(True), np.array([2])]


@dataclasses.dataclass
class ApiCase:
    """One API function: its call with valid base arguments, the keywords drawn, and for those
    that have one, the CLI option with its argparse type (int or str), after a base argv."""
    call: object
    keywords: list
    argv: list = dataclasses.field(default_factory=list)
    options: dict = dataclasses.field(default_factory=dict)


@pytest.fixture(scope="module")
def api_cases(tmp_path_factory):
    """Cases for derive, bound, train, ablate, reproduce and import_checkpoint.  train and
    reproduce run every check of their arguments and then stop (training is a stub that raises
    :class:`Reached`; the sweep is :func:`plan_only`); ablate works on one smoke run."""
    import posenc
    import torch
    root = tmp_path_factory.mktemp("api")
    run = str(root / "run")
    assert main(["train", "--preset", "smoke", "--samples", "80", "--epochs", "1", "--out", run,
                 "--threads", "1"]) == 0
    torch.save(paper_state_dict("nope"), root / "model.pth")
    fresh = iter(range(10**9))

    def new(name):
        return str(root / f"{name}{next(fresh)}")

    return {
        "derive": ApiCase(lambda **kw: posenc.derive("alibi", **{"head_dim": 2, "n_heads": 1, **kw}),
                          ["head_dim", "model_dim", "n_heads", "prove"],
                          ["derive", "alibi", "--head-dim", "2", "--heads", "1"],
                          {"head_dim": ("--head-dim", int), "model_dim": ("--model-dim", int),
                           "n_heads": ("--heads", int)}),
        "bound": ApiCase(lambda **kw: posenc.bound("alibi", **{"n": 8, "head_dim": 2, "n_heads": 1,
                                                               **kw}),
                         ["n", "head", "n_heads", "head_dim", "d_model", "values", "seed", "content",
                          "reference", "method", "progress"],
                         ["bound", "alibi", "--n", "8", "--head-dim", "2", "--heads", "1"],
                         {"head": ("--head", int), "n_heads": ("--heads", int),
                          "head_dim": ("--head-dim", int), "d_model": ("--d-model", int),
                          "seed": ("--seed", int), "content": ("--content", str),
                          "reference": ("--reference", str)}),
        "train": ApiCase(lambda **kw: posenc.train(**{"preset": "smoke", "out": new("t"), **kw}),
                         ["task", "pe", "preset", "seed", "out", "config", "epochs", "samples",
                          "threads", "device", "precision", "paper_code", "overrides", "resume",
                          "progress"],
                         ["train", "--preset", "smoke"],
                         {"task": ("--task", str), "pe": ("--pe", str), "preset": ("--preset", str),
                          "seed": ("--seed", int), "epochs": ("--epochs", int),
                          "samples": ("--samples", int), "threads": ("--threads", int)}),
        "ablate": ApiCase(lambda **kw: posenc.ablate(run, **{"examples": 20, **kw}),
                          ["mode", "examples", "device", "save", "batch_size", "seed", "batched",
                           "layers", "distances", "expand"],
                          ["ablate", run, "--examples", "20"],
                          {"mode": ("--mode", str), "examples": ("--examples", int)}),
        "reproduce": ApiCase(lambda **kw: posenc.reproduce(**{"preset": "smoke", "out": new("s"),
                                                              "log": lambda s: None, **kw}),
                             ["preset", "backend", "seeds", "count_seeds", "workers", "threads",
                              "device", "roles", "tasks", "overrides", "theory", "log", "wait",
                              "until_decided", "max_seeds", "seed_batch", "first_seed",
                              "paper_code", "replicate", "replicate_first_seed"],
                             ["reproduce", "--preset", "smoke"],
                             {"preset": ("--preset", str), "backend": ("--backend", str),
                              "seeds": ("--seeds", int), "count_seeds": ("--count-seeds", int),
                              "workers": ("--workers", int), "threads": ("--threads", int),
                              "roles": ("--roles", str), "tasks": ("--tasks", str),
                              "first_seed": ("--first-seed", int)}),
        "import_checkpoint": ApiCase(
            lambda **kw: posenc.import_checkpoint(**{"file": root / "model.pth", "pe": "nope",
                                                     "task": "distance", "out": new("i"),
                                                     "heads": 4, "preset": "smoke",
                                                     "trigger_ids": [1, 2], **kw}),
            ["pe", "task", "heads", "preset", "seq_len"],
            ["import-checkpoint", str(root / "model.pth"), "--paper-code", "--pe", "nope",
             "--task", "distance", "--heads", "4", "--preset", "smoke", "--trigger-ids", "1,2"],
            {"pe": ("--pe", str), "heads": ("--heads", int), "preset": ("--preset", str),
             "seq_len": ("--seq-len", int)}),
    }


@contextlib.contextmanager
def training_stubbed():
    """posenc.train with every check of its arguments, then :class:`Reached` instead of training."""
    import importlib
    training = importlib.import_module("posenc.empirical.training.train")  # the module, not train()

    def stub(*args, **kwargs):
        raise Reached
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training, "train", stub)
        yield


def api_outcome(call, **kw) -> str:
    """"ok", "reached" or the PosencError's line; any other exception fails the example."""
    import posenc
    try:
        call(**kw)
    except Reached:
        return "reached"
    except posenc.PosencError as exc:
        line = str(exc)
        assert line and "\n" not in line, (kw, line)
        return line
    return "ok"


def cli_outcome(argv: list[str]) -> str:
    """The same for ``main(argv)``: "ok" (exit 0 or 1), "reached" or the error line."""
    try:
        code, err = answer(argv)
    except Reached:
        return "reached"
    return "ok" if code != 2 else err.removeprefix("posenc: error: ").rstrip("\n")


@settings(FUZZ, max_examples=500)
@given(name=st.sampled_from(["derive", "bound", "train", "ablate", "reproduce",
                             "import_checkpoint"]), data=st.data())
def test_fuzz_api_keywords(api_cases, tmp_path_factory, name, data):
    """A bad keyword value is a PosencError with one line, never another exception; where the CLI
    has the option and can say the same value, it gives the same line (or also accepts it)."""
    kw = data.draw(st.sampled_from(api_cases[name].keywords), label="keyword")
    check_keyword(api_cases, tmp_path_factory, name, kw, data.draw(st.sampled_from(_api_values()),
                                                                   label="value"))


@pytest.mark.parametrize("name, kw, value", [
    ("ablate", "layers", "x"), ("ablate", "layers", 0), ("ablate", "layers", []),   # TypeError;
    ("ablate", "device", ""), ("ablate", "device", 0),                             # all layers
    ("derive", "head_dim", "np.array([2])"), ("bound", "n", "np.array([2])"),      # TypeError
    ("bound", "reference", "none"),          # the CLI's "none" was an unknown PE in the API
    ("train", "out", ""), ("reproduce", "out", "")])   # the current folder / the default store
def test_api_keywords_found_by_the_fuzz_test(api_cases, tmp_path_factory, name, kw, value):
    """The cases the fuzz test found (each failed before its fix), pinned."""
    import numpy as np
    value = np.array([2]) if value == "np.array([2])" else value
    with training_stubbed(), plan_only():
        got = api_outcome(api_cases[name].call, **{kw: value})
    assert got == "ok" if (name, kw) == ("bound", "reference") else got not in ("ok", "reached")
    check_keyword(api_cases, tmp_path_factory, name, kw, value)


def check_keyword(api_cases, tmp_path_factory, name: str, kw: str, value) -> None:
    """The API's outcome for ``kw=value`` (see :func:`api_outcome`) and, where the CLI can say
    the value, the same from the CLI."""
    case = api_cases[name]
    with training_stubbed(), plan_only():
        got = api_outcome(case.call, **{kw: value})
        if kw not in case.options or value is None:
            return
        option, kind = case.options[kw]
        if type(value) is not kind or "\n" in str(value):
            return  # the command line cannot say this value
        argv = list(case.argv)
        if option in argv:
            del argv[argv.index(option):argv.index(option) + 2]
        argv += [option, str(value)]
        if name in ("train", "import_checkpoint"):
            argv += ["--out", str(tmp_path_factory.mktemp("cli") / "r")]
        if name == "reproduce":
            argv += ["--out", str(tmp_path_factory.mktemp("cli") / "s"), "--no-theory"]
        cli = cli_outcome(argv)
    assert cli == got, (kw, value, argv)
