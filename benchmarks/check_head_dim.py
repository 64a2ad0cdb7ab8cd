"""Side by side: ``posenc check`` of a rotary function at a real head size (Gemma's 256), this
tree against an older revision of the checker (default: 8d86089, before the block-wise logit check).

Each side runs in its own Python process pinned to one core (``sched_setaffinity``, one BLAS /
torch thread), imports posenc from its own tree, and times ``check_callable`` on two Gemma-style
RoPEs (rotate_half, base 10000): numpy float64 and torch with float32 tables (what transformers
does).  Prints seconds per side and the ratio old / new.  Target: new < 10 s on one
idle core.  Run from the repository root:

    python benchmarks/check_head_dim.py [--dim 256] [--old-rev 8d86089] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def gemma_numpy(x, positions):
    import numpy as np
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    ang = np.asarray(positions, dtype=np.float64)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + np.concatenate([-x2, x1], -1) * sin


def gemma_torch(x, positions):
    import torch
    d = x.shape[-1]
    inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    freqs = positions[:, None].float() * inv[None]
    emb = torch.cat((freqs, freqs), dim=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * emb.cos().to(x.dtype) + torch.cat((-x2, x1), -1) * emb.sin().to(x.dtype)


def child(tree: str, dim: int, repeat: int) -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    sys.path.insert(0, tree)
    import torch
    torch.set_num_threads(1)
    from posenc.checker import check_callable
    out = {}
    for fn in (gemma_numpy, gemma_torch):
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            report = check_callable(fn, "rope", dim=dim)
            best = min(best, time.perf_counter() - t0)
        out[fn.__name__] = {"seconds": best, "ok": report.ok}
    print(json.dumps(out))


def run_side(tree: str, dim: int, repeat: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=tree)
    res = subprocess.run([sys.executable, __file__, "--child", tree, "--dim", str(dim),
                          "--repeat", str(repeat)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--old-rev", default="8d86089")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.dim, a.repeat)
        return
    with tempfile.TemporaryDirectory() as old:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.old_rev, "posenc"],
                                 capture_output=True, check=True).stdout
        tar_path = Path(old) / "old.tar"
        tar_path.write_bytes(archive)
        with tarfile.open(tar_path) as tf:
            tf.extractall(old, filter="data")
        new_t = run_side(str(ROOT), a.dim, a.repeat)
        old_t = run_side(old, a.dim, a.repeat)
    print(f"posenc check, rotary function at head dim {a.dim}, one core")
    for name in new_t:
        n, o = new_t[name]["seconds"], old_t[name]["seconds"]
        print(f"  {name:<12}  new {n:6.2f} s (conforms: {new_t[name]['ok']})   "
              f"old ({a.old_rev}) {o:6.2f} s (conforms: {old_t[name]['ok']})   old/new {o / n:5.2f}")


if __name__ == "__main__":
    main()
