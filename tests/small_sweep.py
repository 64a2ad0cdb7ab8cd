"""What the end-to-end report tests share: ``posenc`` in a child process, and ``SMALL``, the plan
of the one small standard store (``small_store`` in conftest.py) -- a test that reruns the plan
into a copy of that store (a SIGKILL resume, a replication) must name the very same plan, so
there is one list."""

import subprocess
import sys

#: the smoke preset, RoPE and NoPE on distance, seeds 0-1, no theory table
SMALL = ["--preset", "smoke", "--roles", "rope,nope", "--tasks", "distance", "--seeds", "2",
         "--no-theory"]


def posenc(*args, **kw) -> subprocess.CompletedProcess:
    """``python -m posenc ARGS`` in a child process, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "posenc", *map(str, args)], capture_output=True,
                          text=True, **kw)


def replica_store(src, dest, change=None):
    """A second seed set made from the store ``src`` without training: each finished experiment
    run copied into the store ``dest`` with its seed moved by 2000, and ``change(config,
    summary)`` applied to its config and result summary (return False to leave the run out) --
    a replica of the same plan when ``change`` is None, of another plan otherwise.  The run
    folders are named by their new configs' hashes; the store has no index (readers rebuild it
    from the folders)."""
    import json
    import shutil
    from pathlib import Path

    from posenc.empirical.pipeline.store import run_id
    src, dest = Path(src), Path(dest)
    (dest / "runs").mkdir(parents=True)
    shutil.copy(src / "posenc-store.json", dest)
    for folder in sorted((src / "runs").iterdir()):
        if not (folder / "result.json").is_file():
            continue
        config = json.loads((folder / "config.json").read_text())
        result = json.loads((folder / "result.json").read_text())
        config["train"]["seed"] += 2000
        result["summary"]["seed"] = config["train"]["seed"]
        if change is not None and change(config, result["summary"]) is False:
            continue
        new = dest / "runs" / run_id(config)
        shutil.copytree(folder, new)
        (new / "config.json").write_text(json.dumps(config))
        (new / "result.json").write_text(json.dumps(result))
    return dest
