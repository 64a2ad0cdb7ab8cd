"""Extreme eigenvalues: the fast path (Lanczos on the FFT matvec) vs dense LAPACK, side by side.

For the RoPE average kernel and the ALiBi bias at n = 1024, 4096 (and 8192 when
the dense solve is predicted under a minute): both methods on the same matrix,
one run each, printing both times, their ratio and the largest relative
difference of the extreme eigenvalues.  Then the fast path alone at n = 100,000
for RoPE, ALiBi and T5, and the matvec backends (precomputed circulant
embedding vs scipy.linalg.matmul_toeplitz) side by side.

Relative difference: |fast - dense| / |dense| for lambda_max (and lambda_min of
ALiBi); for RoPE's lambda_min, which is exactly 0 (rank <= d < n; the fast path
reports it from structure, LAPACK returns rounding noise), |fast - dense| / ||K||.

Run: ``python benchmarks/spectra.py [--big 100000] [--no-8192]``.  Timings on a
shared machine are noisy; the ratios are measured side by side in one process.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.linalg as sla

from posenc.numerics.kernels import kernel
from posenc.numerics.spectra import spectrum

SPECS = {"rope": "rope", "alibi": "alibi"}


def compare(name: str, n: int) -> dict:
    kern = kernel(SPECS[name], n)
    t0 = time.perf_counter()
    fast = spectrum(kern.operator, method="lanczos", psd=kern.psd, rank_bound=kern.rank_bound)
    t_fast = time.perf_counter() - t0
    dense_matrix = kern.dense()                                   # formed outside the timing
    t0 = time.perf_counter()
    ev = np.linalg.eigvalsh(dense_matrix)
    t_dense = time.perf_counter() - t0
    norm = np.abs(ev).max()
    d_max = abs(fast.lambda_max - ev[-1]) / abs(ev[-1])
    structural = kern.kind == "rotary" and kern.rank_bound < n
    d_min = abs(fast.lambda_min - ev[0]) / (norm if structural else abs(ev[0]))
    return {"kernel": name, "n": n, "fast_s": t_fast, "dense_s": t_dense,
            "ratio": t_dense / t_fast, "lam_min": (fast.lambda_min, ev[0]),
            "lam_max": (fast.lambda_max, ev[-1]), "rel_diff": max(d_max, d_min),
            "method": fast.method}


def big(n: int) -> list[dict]:
    out = []
    for name, spec in (("rope", "rope"), ("alibi", "alibi"), ("t5", "relative_bias")):
        t0 = time.perf_counter()
        kern = kernel(spec, n)
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        s = spectrum(kern.operator, method="lanczos", psd=kern.psd, rank_bound=kern.rank_bound)
        out.append({"kernel": name, "n": n, "build_s": t_build, "fast_s": time.perf_counter() - t0,
                    "lam_min": s.lambda_min, "lam_max": s.lambda_max, "norm": s.sigma_max,
                    "method": s.method, "notes": s.notes})
    return out


def matvec_backends(n: int, repeats: int = 20) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    c, r, v = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)
    from posenc.numerics.operators import ToeplitzOperator
    op = ToeplitzOperator(c, r)
    op.matvec(v)                                                  # embedding FFT computed once
    t0 = time.perf_counter()
    for _ in range(repeats):
        op.matvec(v)
    t_emb = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        sla.matmul_toeplitz((c, r), v, check_finite=False)
    return t_emb, (time.perf_counter() - t0) / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", type=int, default=100_000)
    ap.add_argument("--no-8192", action="store_true")
    args = ap.parse_args()
    print("fast path (Lanczos on FFT matvec) vs dense numpy.linalg.eigvalsh, same matrix, one run")
    print(f"{'kernel':<6} {'n':>5} {'fast s':>8} {'dense s':>8} {'ratio':>7} "
          f"{'lam_min fast':>14} {'lam_min dense':>14} {'lam_max fast':>14} {'lam_max dense':>14} "
          f"{'max rel diff':>12}")
    dense_4096 = 0.0
    for n in (1024, 4096, 8192):
        if n == 8192 and (args.no_8192 or dense_4096 * 8 > 60):
            print(f"(n=8192 skipped: dense predicted {dense_4096 * 8:.0f} s > 60 s)")
            continue
        for name in SPECS:
            r = compare(name, n)
            if n == 4096:
                dense_4096 = max(dense_4096, r["dense_s"])
            print(f"{name:<6} {n:>5} {r['fast_s']:>8.4f} {r['dense_s']:>8.3f} {r['ratio']:>7.0f} "
                  f"{r['lam_min'][0]:>14.8g} {r['lam_min'][1]:>14.8g} {r['lam_max'][0]:>14.10g} "
                  f"{r['lam_max'][1]:>14.10g} {r['rel_diff']:>12.2e}")
    print(f"\nfast path alone at n = {args.big}")
    for r in big(args.big):
        print(f"{r['kernel']:<6} build {r['build_s']:.3f} s  spectrum {r['fast_s']:.3f} s  "
              f"lam_min {r['lam_min']}  lam_max {r['lam_max']}  ||.||_2 {r['norm']:.10g}  "
              f"({r['method']}{'; ' + '; '.join(r['notes']) if r['notes'] else ''})")
    print("\nToeplitz matvec: precomputed circulant embedding vs scipy.linalg.matmul_toeplitz")
    for n in (4096, args.big):
        emb, sp = matvec_backends(n)
        print(f"n={n:>6}  embedded {emb * 1e3:.3f} ms  matmul_toeplitz {sp * 1e3:.3f} ms  "
              f"ratio {sp / emb:.1f}")


if __name__ == "__main__":
    main()
