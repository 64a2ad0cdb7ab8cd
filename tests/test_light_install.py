"""The light install (``pip install posenc``, without the ``train`` extra): derive, bound, verify
and check run with torch, matplotlib and tqdm absent, and a command that needs them stops with one
line naming the extra (.ci/wheel_check does the same from a wheel in a venv without torch).

The modules are made absent by a meta-path finder in a ``sitecustomize`` on PYTHONPATH, so that
every interpreter of the run has it: posenc's and the checker's child that calls the user's
function."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BLOCKER = '''
import importlib.abc, sys

class _TrainExtraAbsent(importlib.abc.MetaPathFinder):
    """torch, matplotlib and tqdm as on an install without them: ModuleNotFoundError."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "matplotlib", "tqdm"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _TrainExtraAbsent())
'''

#: Each command runs in the same interpreter, one after another; its exit status and stderr
#: are printed as one JSON line.
RUNNER = '''
import contextlib, io, json, sys
from posenc.cli import main
for argv in json.loads(sys.argv[1]):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = main(argv)
        except BaseException as exc:  # a traceback would have reached the user
            rc = f"raised {type(exc).__name__}: {exc}"
    print(json.dumps({"argv": argv, "rc": rc, "stderr": err.getvalue(), "stdout": out.getvalue()}))
leaked = sorted(m for m in ("torch", "matplotlib", "tqdm") if m in sys.modules)
print(json.dumps({"leaked": leaked}))
'''

COMMANDS = [
    ["derive", "rope"],
    ["bound", "alibi", "--n", "16,32"],
    ["verify", "rope-relative-identity", "--examples", "5"],
    ["check", str(ROOT / "docs" / "examples" / "rope_interleaved.py") + ":rope"],
    ["train", "--task", "distance", "--pe", "rope", "--preset", "smoke", "--out", "RUN"],
    ["bound", "rope", "--n", "16", "--plot", "PLOT.png"],
]


def _run_without_train_extra(tmp_path: Path, commands: list[list[str]]) -> list[dict]:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), str(ROOT)]))
    commands = [[str(tmp_path / a) if a in ("RUN", "PLOT.png") else a for a in argv] for argv in commands]
    proc = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(commands)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_theory_commands_run_and_train_commands_name_the_extra(tmp_path):
    *results, leaked = _run_without_train_extra(tmp_path, COMMANDS)
    assert leaked == {"leaked": []}
    assert len(results) == len(COMMANDS)
    for r in results[:4]:
        assert r["rc"] == 0, (r["argv"], r["stderr"], r["stdout"][-2000:])
    derive, _, verify, check, train, plot = results
    assert "Toeplitz: proved" in derive["stdout"]
    assert "torch is not installed: the empirical layer's RoPE is not checked" in verify["stdout"]
    assert check["stdout"].rstrip().endswith("conforms")
    for r, module in ((train, "torch"), (plot, "matplotlib")):
        assert r["rc"] == 2, r
        lines = r["stderr"].splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"posenc: error: posenc {r['argv'][0]} needs "
                                                       f"{module}, "), r["stderr"]
        assert 'pip install "posenc[train]"' in lines[0]
    assert not (tmp_path / "PLOT.png").exists() and not (tmp_path / "RUN").exists()


#: The front door on the light install: each expression is evaluated in one interpreter; what it
#: raised is printed as one JSON line.
API_RUNNER = '''
import json, sys
import posenc
for expr in json.loads(sys.argv[1]):
    try:
        eval(expr)
        out = {"expr": expr, "raised": None}
    except BaseException as exc:
        out = {"expr": expr, "raised": type(exc).__name__, "message": str(exc),
               "posenc_error": isinstance(exc, posenc.PosencError),
               "module_not_found": isinstance(exc, ModuleNotFoundError),
               "name": getattr(exc, "name", None), "cause_hidden": exc.__suppress_context__}
    print(json.dumps(out))
'''


def test_the_api_names_the_extra_in_one_posenc_error(tmp_path):
    """posenc.train / ablate / load_run / Run on the light install: one PosencError line naming the
    extra (and still a ModuleNotFoundError), as the CLI says it; the theory half runs."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), str(ROOT)]))
    exprs = ["posenc.derive('rope')", "posenc.train(task='distance', pe='rope', preset='smoke', "
             "out='RUN')", "posenc.load_run('RUN')", "posenc.Run", "posenc.AblationResult"]
    proc = subprocess.run([sys.executable, "-c", API_RUNNER, json.dumps(exprs)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    derive, *extra = [json.loads(line) for line in proc.stdout.splitlines()]
    assert derive["raised"] is None, derive
    for r in extra:
        what = r["expr"].split("(")[0]
        assert r["raised"] == "MissingExtraError" and r["posenc_error"] and r["module_not_found"], r
        assert r["message"].startswith(f"{what} needs torch, ") and "\n" not in r["message"], r
        assert 'pip install "posenc[train]"' in r["message"] and r["name"] == "torch", r
        assert r["cause_hidden"], r
    assert not (tmp_path / "RUN").exists()
