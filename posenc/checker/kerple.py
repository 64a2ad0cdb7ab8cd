"""KERPLE-log (Chi et al. 2022) in a user's bias ``g(n_heads, n)``: B[h,i,j] = −r1_h·log(1 + r2_h·|i − j|).

Read on the row-normalised bias T = B − diag(B) (softmax ignores a per-row constant), as the
ALiBi checks are:

* KERPLE-log form: r2_h is recovered from the ratio T[h, N−1, 0] / T[h, 1, 0] =
  log(1 + (N−1) r2) / log(1 + r2), which falls strictly from N−1 to 1 as r2 grows (bisection
  in log r2), and r1_h = −T[h, 1, 0] / log(1 + r2_h); the whole matrix is then compared with
  −r1_h·log(1 + r2_h·|i − j|) (symmetric) or on j ≤ i with the upper triangle one constant
  (causal, as for ALiBi).  A bias that is KERPLE-log below the diagonal and something else
  above it (|i − j| forgotten: log of a negative number, or a bias growing with distance) fails;
  one that is not of this form below the diagonal is reported, not failed.
* expected (``--expect r1=R1,r2=R2``, each one number for every head or ``V1:V2:...`` per head,
  with ``direction=``): compared entry by entry with posenc's own reference, the numeric layer's
  KERPLE-log kernel (:func:`posenc.numerics.kernels.kernel` of ``kerple_log:r1=..,r2=..``).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .entries import one_sided, same
from .report import FAIL, INFO, PASS, Property, fmt
from ..encodings import KerpleLog

KEYS = ("r1", "r2")
# Entries are O(r1 log(1 + 15 r2)); the two entries r2 is read from carry float32 rounding of
# ~1e-7 relative, which moves the recovered r1, r2 by ~1e-6 relative -- inside the ATOL/RTOL of
# 1e-5 that entries.same compares entries with.  A dropped or doubled r2 changes entries by O(1).
_LOG_R2 = (-30.0, 30.0)


def _ratio(r2: float, far: int) -> float:
    return math.log1p(far * r2) / math.log1p(r2)


def recover(T: np.ndarray) -> tuple[Optional[np.ndarray], Optional[np.ndarray], str]:
    """(r1, r2) per head from T[h, k, 0], k = 1 and N − 1; (None, None, why) if T is not
    −r1·log(1 + r2·k) at those two offsets for some r1, r2 > 0."""
    H, n = T.shape[0], T.shape[1]
    if n < 3:
        return None, None, f"n = {n} is too short to read r1 and r2"
    far = n - 1
    r1, r2 = np.empty(H), np.empty(H)
    for h in range(H):
        a, b = float(T[h, 1, 0]), float(T[h, far, 0])
        if not (np.isfinite(a) and np.isfinite(b) and a < 0 and b < 0):
            return None, None, (f"head {h}: B[1,0] − B[0,0] = {fmt(a)}, B[{far},0] − B[{far},"
                                f"{far}] = {fmt(b)}: not a negative, growing penalty")
        rho = b / a
        if not (1.0 < rho < far):
            return None, None, (f"head {h}: B[{far},0] / B[1,0] = {fmt(rho)} (relative to the "
                                f"diagonal) is outside (1, {far}): no r2 > 0 gives it")
        lo, hi = _LOG_R2
        for _ in range(200):                    # _ratio falls as r2 grows
            mid = (lo + hi) / 2
            if _ratio(math.exp(mid), far) > rho:
                lo = mid
            else:
                hi = mid
        r2[h] = math.exp((lo + hi) / 2)
        r1[h] = -a / math.log1p(r2[h])
    return r1, r2, ""


def reference(r1: np.ndarray, r2: np.ndarray, n: int) -> np.ndarray:
    """−r1_h·log(1 + r2_h·|i − j|), (H, n, n), from the numeric layer's kernel of the spec."""
    from ..numerics.kernels import kernel

    return np.stack([kernel(KerpleLog(r1=float(a), r2=float(b)), n, n_heads=1).dense()
                     for a, b in zip(r1, r2)])


def _mismatch(B: np.ndarray, ref: np.ndarray, kind: str) -> Optional[tuple]:
    n = B.shape[1]
    k = np.arange(n)[:, None] - np.arange(n)[None, :]
    check = np.ones(B.shape, dtype=bool) if kind != "causal" else np.broadcast_to(k >= 0, B.shape)
    bad = np.argwhere(check & ~same(B, ref))
    if not bad.size:
        return None
    return min(map(tuple, bad), key=lambda t: (abs(t[1] - t[2]), t[1], t[0]))


def check_form(biases: dict[int, np.ndarray], kind: str, summary: dict) -> Property:
    """The "KERPLE-log form" property of row-normalised biases H -> (H, n, n)."""
    found: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for H, B in biases.items():
        r1, r2, why = recover(B)
        if r1 is None:
            return Property("KERPLE-log form", INFO, "not −r1·log(1 + r2·|i−j|) either",
                            f"n_heads={H}, {why}")
        found[H] = (r1, r2)
    summary["kerple_log"] = {str(H): {"r1": [float(v) for v in r1], "r2": [float(v) for v in r2]}
                             for H, (r1, r2) in found.items()}
    for H, B in biases.items():
        ref = reference(*found[H], B.shape[1])
        # neither symmetric nor causal: read below the diagonal only, as for ALiBi
        bad = _mismatch(B, ref, "causal" if kind == "neither" else kind)
        if bad is not None:
            h, i, j = (int(v) for v in bad)
            return Property("KERPLE-log form", FAIL, f"−r1·log(1 + r2·(i−j)) at distances 1 and "
                            f"{B.shape[1] - 1} below the diagonal, but not over the whole matrix",
                            f"n_heads={H}, head {h}: B[{i},{j}] = {fmt(B[h, i, j])}, but "
                            f"−r1·log(1 + r2·|i−j|) = {fmt(ref[h, i, j])} (r1 = "
                            f"{fmt(found[H][0][h])}, r2 = {fmt(found[H][1][h])})")
    if kind == "neither":
        for H, B in biases.items():
            wrong = one_sided(B)
            if wrong:
                return Property("KERPLE-log form", FAIL, "KERPLE-log below the diagonal, but "
                                + wrong, f"n_heads={H}")
        return Property("KERPLE-log form", INFO, "−r1·log(1 + r2·(i−j)) below the diagonal, "
                        "something else above it (neither symmetric nor causal): not KERPLE-log")
    shown = 8 if 8 in found else max(found)
    r1, r2 = found[shown]
    return Property("KERPLE-log form", PASS, "B[h,i,j] = −r1_h·log(1 + r2_h·" +
                    ("|i−j|)" if kind != "causal" else "(i−j)) for j ≤ i") +
                    f" (n_heads={shown}: r1 = {', '.join(fmt(v, 4) for v in r1)}; "
                    f"r2 = {', '.join(fmt(v, 4) for v in r2)})")


def _text(value) -> str:
    return ":".join(fmt(v, 4) for v in value) if isinstance(value, list) else fmt(value)


def _per_head(value, H: int) -> Optional[np.ndarray]:
    if isinstance(value, list):
        return np.array(value, dtype=float) if len(value) == H else None
    return np.full(H, float(value))


def check_expectation(biases: dict[int, np.ndarray], expected: dict, summary: dict) -> Property:
    """``--expect r1=..,r2=..[,direction=..]`` against the numeric layer's KERPLE-log kernel."""
    want_dir, got_dir = expected.get("direction"), summary.get("direction")
    if want_dir and got_dir != want_dir:
        return Property("expected", FAIL, f"direction is {got_dir}, expected {want_dir}")
    direction = want_dir or (got_dir if got_dir in ("causal", "symmetric") else "symmetric")
    r1_want, r2_want = expected.get("r1", 1.0), expected.get("r2", 1.0)
    label = f"r1={_text(r1_want)}, r2={_text(r2_want)}"
    tested = []
    for H, B in biases.items():
        r1, r2 = _per_head(r1_want, H), _per_head(r2_want, H)
        if r1 is None or r2 is None:
            continue
        tested.append(H)
        ref = reference(r1, r2, B.shape[1])
        bad = _mismatch(B, ref, direction)
        if bad is not None:
            h, i, j = (int(v) for v in bad)
            got = summary.get("kerple_log", {}).get(str(H))
            read = (f"; the bias reads r1 = {fmt(got['r1'][h])}, r2 = {fmt(got['r2'][h])} for "
                    f"head {h}" if got else "; the bias is not KERPLE-log")
            return Property("expected", FAIL, f"not KERPLE-log with {label}, {direction}{read}",
                            f"n_heads={H}, head {h}: B[{i},{j}] = {fmt(B[h, i, j])}, the "
                            f"reference gives {fmt(ref[h, i, j])}")
    if not tested:
        return Property("expected", FAIL, "--expect lists r1/r2 per head, but no bias with that "
                        "many heads was checked")
    return Property("expected", PASS, f"KERPLE-log with {label}, {direction}, for n_heads in "
                    f"{sorted(tested)}")
