"""Conformance of a user's attention-bias function ``g(n_heads, n) -> (heads, n, n)``.

Checks, on g(H, 16) for H in :data:`HEADS` (powers of two and not, since ALiBi's press schedule
has a special rule for the latter):

* Toeplitz: B[h, i, j] depends on i − j only (B[i,j] = B[i+1,j+1]);
* length independent: g(8, n) is the leading n×n block of g(8, 16), n = 1..15;
* direction: symmetric (B = Bᵀ) or causal (everything above the diagonal one constant, 0 or −inf);
  a bias that is neither -- e.g. T5 buckets, which differ by sign -- is reported, not failed;
* ALiBi form: B[h, i, j] = −s_h·|i − j| (symmetric) or −s_h·(i − j) for j ≤ i (causal);
* slope schedule: the recovered slopes s_h equal press 2^(−8h/H) (Press et al. 2022, with the
  non-power-of-two rule) or exp e^(−h/H) (the paper's code) for every H.  Reference slopes come
  from :func:`posenc.numerics.conventions.alibi_slopes`.

Each failure names the smallest offending H, head and (i, j).
"""

from __future__ import annotations

import numpy as np

from ...errors import PosencError
from .loading import Caller
from .report import FAIL, INFO, NA, PASS, CheckReport, Property

HEADS = (1, 2, 3, 4, 5, 6, 8, 12, 16)
N = 16
# Bias entries are O(slope · n) ≤ 16; float32 storage rounds them to ~1e-6 absolute; a wrong
# slope or offset changes them by ≥ 1e-3.
ATOL, RTOL = 1e-5, 1e-5


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise equality allowing ±inf (masks) and float32 rounding."""
    both_inf = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    with np.errstate(invalid="ignore"):
        close = np.abs(a - b) <= ATOL + RTOL * np.abs(b)
    return both_inf | (np.isfinite(a) & np.isfinite(b) & close)


def _call(caller: Caller, H: int, n: int) -> np.ndarray:
    B = caller.call_plain(H, n)
    while B.ndim > 3 and B.shape[0] == 1:
        B = B[0]                                   # accept a leading batch dim of 1
    if B.shape != (H, n, n):
        raise PosencError(f"{caller.impl} returned shape {B.shape} for n_heads={H}, n={n}; "
                          f"expected ({H}, {n}, {n})")
    if np.isnan(B).any():
        raise PosencError(f"{caller.impl} returned NaN for n_heads={H}, n={n}")
    return B


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def check_toeplitz(biases: dict[int, np.ndarray]) -> Property:
    for H, B in biases.items():
        bad = np.argwhere(~_same(B[:, 1:, 1:], B[:, :-1, :-1]))
        if bad.size:
            h, i, j = min(map(tuple, bad), key=lambda t: (t[1] + t[2], t[1], t[0]))
            return Property("Toeplitz", FAIL, "the bias depends on absolute positions",
                            f"n_heads={H}, head {h}: B[{i},{j}] = {_fmt(B[h, i, j])} but "
                            f"B[{i + 1},{j + 1}] = {_fmt(B[h, i + 1, j + 1])}")
    return Property("Toeplitz", PASS, f"B[h,i,j] depends on i−j only (n_heads in {list(HEADS)}, "
                    f"n = {N})")


def check_length(caller: Caller, full: np.ndarray) -> Property:
    H = full.shape[0]
    for n in range(1, N):
        B = _call(caller, H, n)
        bad = np.argwhere(~_same(B, full[:, :n, :n]))
        if bad.size:
            h, i, j = map(int, bad[0])
            return Property("length independent", FAIL, "g(H, n) is not a block of g(H, n+k)",
                            f"n_heads={H}, head {h}: g(H, {n})[{i},{j}] = {_fmt(B[h, i, j])} but "
                            f"g(H, {N})[{i},{j}] = {_fmt(full[h, i, j])}")
    return Property("length independent", PASS, f"g(H, n) = g(H, {N})[:n, :n] for n < {N}")


def direction(B: np.ndarray) -> tuple[str, str]:
    """('symmetric'|'causal'|'neither', detail) of a (H, n, n) bias."""
    if np.all(_same(B, np.swapaxes(B, 1, 2))):
        return "symmetric", "B = Bᵀ"
    iu = np.triu_indices(B.shape[1], 1)
    upper = B[:, iu[0], iu[1]]
    if upper.size and (np.all(upper == 0) or np.all(np.isneginf(upper))):
        return "causal", f"entries above the diagonal are {'0' if np.all(upper == 0) else '−inf'}"
    bad = np.argwhere(~_same(B, np.swapaxes(B, 1, 2)))
    h, i, j = min(map(tuple, bad), key=lambda t: (t[1] + t[2], t[0]))
    return "neither", (f"head {h}: B[{i},{j}] = {_fmt(B[h, i, j])}, B[{j},{i}] = "
                       f"{_fmt(B[h, j, i])}, and the upper triangle is not masked")


def slopes_of(B: np.ndarray, kind: str) -> tuple[np.ndarray | None, str]:
    """Per-head slopes s_h if B = −s_h·distance exactly (ALiBi form), else (None, why)."""
    n = B.shape[1]
    k = np.arange(n)
    col = B[:, :, 0]                                # B[h, k, 0]: offset i − j = k ≥ 0
    s = -(col[:, 1] - col[:, 0]) if n > 1 else np.zeros(B.shape[0])
    pred = -s[:, None] * k[None, :]
    bad = np.argwhere(~_same(col, pred))
    if bad.size:
        h, kk = map(int, bad[0])
        return None, (f"head {h}: B[{kk},0] = {_fmt(col[h, kk])}, but −slope·{kk} = "
                      f"{_fmt(pred[h, kk])} with the slope {_fmt(s[h])} read at distance 1")
    return s, ""


def _schedule_match(s: np.ndarray, H: int) -> dict[str, bool]:
    from ...numerics.conventions import alibi_slopes
    return {name: bool(np.allclose(s, alibi_slopes(H, name), rtol=RTOL, atol=1e-9))
            for name in ("press", "exp")}


def _off_by_one_hint(s: np.ndarray, H: int) -> str:
    h0 = np.arange(H)                               # head index 0..H-1 instead of 1..H
    for name, guess in (("press", 2.0 ** (-8.0 * h0 / H)), ("exp", np.exp(-h0 / H))):
        if np.allclose(s, guess, rtol=RTOL, atol=1e-9):
            return f"; the slopes are {name}'s with head index h−1 (an off-by-one: h = 0..H−1)"
    return ""


def check_slopes(biases: dict[int, np.ndarray], kind: str, summary: dict) -> list[Property]:
    recovered: dict[int, np.ndarray] = {}
    for H, B in biases.items():
        s, why = slopes_of(B, kind)
        if s is None:
            return [Property("ALiBi form", INFO, "not linear in the distance, so not ALiBi; slope "
                             "schedule not applicable", f"n_heads={H}, {why}"),
                    Property("slope schedule", NA, "not an ALiBi-style bias")]
        recovered[H] = s
    summary["slopes"] = {str(H): [float(v) for v in s] for H, s in recovered.items()}
    form = Property("ALiBi form", PASS, "B[h,i,j] = −s_h·" +
                    ("|i−j|" if kind == "symmetric" else "(i−j) for j ≤ i"))
    names = {"press", "exp"}
    first_bad = None
    for H, s in recovered.items():
        match = _schedule_match(s, H)
        names &= {k for k, v in match.items() if v}
        if not names and first_bad is None:
            first_bad = (H, s)
            break
    if names:
        name = sorted(names)[0] if len(names) == 1 else "press"
        summary["schedule"] = name
        shown = ", ".join(_fmt(v) for v in recovered[8])
        return [form, Property("slope schedule", PASS, f"{name} for every n_heads tested "
                               f"(n_heads=8: {shown})")]
    summary["schedule"] = "other"
    H, s = first_bad
    from ...numerics.conventions import alibi_slopes
    press, exp = alibi_slopes(H, "press"), alibi_slopes(H, "exp")
    h = next((i for i in range(H) if not (np.isclose(s[i], press[i], rtol=RTOL)
                                          or np.isclose(s[i], exp[i], rtol=RTOL))), 0)
    return [form, Property("slope schedule", FAIL, "other: matches neither press nor exp"
                           + _off_by_one_hint(s, H),
                           f"n_heads={H}, head {h} (h = {h + 1} of 1..{H}): slope {_fmt(s[h])}; "
                           f"press gives {_fmt(press[h])}, exp gives {_fmt(exp[h])}")]


def check_bias(caller: Caller, impl: str) -> CheckReport:
    biases = {H: _call(caller, H, N) for H in HEADS}                # H -> (H, N, N)
    report = CheckReport(impl, "bias", "plain")
    props = report.properties
    props.append(Property("shape", PASS, f"g(H, n) -> (H, n, n) for H in {list(HEADS)}"))
    props.append(check_toeplitz(biases))
    props.append(check_length(caller, biases[8]))
    kinds = {H: direction(B) for H, B in biases.items()}
    kind, why = kinds[8]
    if any(k != kind for k, _ in kinds.values()):
        kind, why = "neither", "the direction differs between head counts"
    report.summary["direction"] = kind
    props.append(Property("symmetric or causal", PASS if kind != "neither" else INFO,
                          f"{kind}: {why}" if kind != "neither" else
                          "neither (fine for a learned relative bias such as T5's)",
                          None if kind != "neither" else why))
    if props[1].status == FAIL:
        props.append(Property("slope schedule", NA, "the bias is not Toeplitz"))
    else:
        props.extend(check_slopes(biases, "causal" if kind == "causal" else "symmetric",
                                  report.summary))
    return report
