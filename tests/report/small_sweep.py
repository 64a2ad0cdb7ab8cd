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
