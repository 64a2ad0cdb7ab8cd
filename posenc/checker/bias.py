"""Conformance of a user's attention-bias function ``g(n_heads, n) -> (heads, n, n)``.

Checks, on g(H, 16) for H in :data:`HEADS` (powers of two and not, since ALiBi's press schedule
has a special rule for the latter):

* finite: every entry finite or −inf (a mask), and no query row entirely masked -- a +inf or an
  all-masked row makes softmax NaN;
* deterministic: two calls g(8, 16) agree (an unseeded random bias is not a PE);
* Toeplitz: B[h, i, j] depends on i − j only (B[i,j] = B[i+1,j+1]) -- or is *softmax-equivalent*
  to such a bias: B = T + c_i with T Toeplitz and a per-row constant c_i over the unmasked
  entries, which softmax over each row cannot see (Bloom's ``build_alibi_tensor`` puts slope·j
  in every row).  The remaining checks then read T = B − diag(B) (each row minus its diagonal);
* length independent: g(8, n) is the leading n×n block of g(8, 16), n = 1..15;
* direction: symmetric (B = Bᵀ) or causal (everything above the diagonal one constant, 0 or −inf);
  a bias that is neither -- e.g. T5 buckets, which differ by sign -- is reported, not failed;
* ALiBi form: B[h, i, j] = −s_h·|i − j| (symmetric) or −s_h·(i − j) for j ≤ i (causal), checked
  on the whole matrix; a bias that is ALiBi below the diagonal and grows with distance above it
  (−s·(i − j) everywhere: a forgotten ``abs``) fails;
* slope schedule: the recovered slopes s_h equal press 2^(−8h/H) (Press et al. 2022, with the
  non-power-of-two rule) or exp e^(−h/H), h = 1..H, for every H (the paper's code starts at
  h = 0 -- ``alibi:slopes=exp0`` -- which is reported as exp's off-by-one), with hints for the
  usual slips (head index off by one, slopes computed for H ± 1 heads).  Reference slopes come
  from :func:`posenc.numerics.conventions.alibi_slopes`;
* KERPLE-log form, for a bias that is not linear in the distance: see :mod:`.kerple`;
* expected (``--expect slopes=...,direction=...``; ``r1=..,r2=..`` for KERPLE-log): see
  :mod:`.expect` and :mod:`.kerple`.

Each failure names the smallest offending H, head and (i, j).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..errors import PosencError
from .entries import one_sided, roundoff, same, slope_rtol, stored_as
from .expect import check_bias_expectation
from .kerple import check_expectation, check_form
from .loading import Caller
from .report import FAIL, INFO, NA, PASS, ConformanceReport, Property, fmt
from .half import FORMATS, rounded
from .t5 import N as T5_N
from .t5_learned import check_t5_learned

HEADS = (1, 2, 3, 4, 5, 6, 8, 12, 16)
N = 16


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



def row_normalised(B: np.ndarray) -> Optional[np.ndarray]:
    """B − B[h, i, i] row by row (softmax ignores a per-row constant); None if a diagonal entry
    is not finite (then there is no unmasked reference entry in that row to subtract)."""
    d = np.diagonal(B, axis1=1, axis2=2)                                    # (H, n)
    if not np.all(np.isfinite(d)):
        return None
    with np.errstate(invalid="ignore"):
        return B - d[:, :, None]


def check_finite(biases: dict[int, np.ndarray]) -> Property:
    for H, B in biases.items():
        pos = np.argwhere(np.isposinf(B))
        if pos.size:
            h, i, j = (int(v) for v in pos[0])
            return Property("finite", FAIL, "+inf in the bias: softmax of a row with +inf is NaN "
                            "(a mask must be −inf)", f"n_heads={H}, head {h}: B[{i},{j}] = +inf")
        dead = np.argwhere(np.all(np.isneginf(B), axis=2))
        if dead.size:
            h, i = (int(v) for v in dead[0])
            return Property("finite", FAIL, "a query row is entirely −inf: it attends to nothing "
                            "and softmax gives NaN", f"n_heads={H}, head {h}: row {i} is all −inf")
    return Property("finite", PASS, "entries are finite or −inf (masked); every query attends "
                    "to at least one key")


def check_deterministic(caller: Caller, first: np.ndarray) -> Property:
    H = first.shape[0]
    again = _call(caller, H, N)
    bad = np.argwhere(~(same(again, first) & same(first, again)))
    if bad.size:
        h, i, j = (int(v) for v in bad[0])
        return Property("deterministic", FAIL, f"two calls g({H}, {N}) returned different "
                        f"values: unseeded randomness? (a PE must be a function of (H, n))",
                        f"head {h}: B[{i},{j}] = {fmt(first[h, i, j])}, then "
                        f"{fmt(again[h, i, j])}")
    return Property("deterministic", PASS, f"two calls g({H}, {N}) agree")


def _toeplitz_failure(biases: dict[int, np.ndarray]) -> Optional[str]:
    for H, B in biases.items():
        bad = np.argwhere(~same(B[:, 1:, 1:], B[:, :-1, :-1]))
        if bad.size:
            h, i, j = min(map(tuple, bad), key=lambda t: (t[1] + t[2], t[1], t[0]))
            return (f"n_heads={H}, head {h}: B[{i},{j}] = {fmt(B[h, i, j])} but "
                    f"B[{i + 1},{j + 1}] = {fmt(B[h, i + 1, j + 1])}")
    return None


def check_toeplitz(biases: dict[int, np.ndarray]) -> tuple[Property, bool]:
    """(property, softmax-equivalent only): Toeplitz, or Toeplitz after row normalisation."""
    why = _toeplitz_failure(biases)
    if why is None:
        return Property("Toeplitz", PASS, f"B[h,i,j] depends on i−j only (n_heads in "
                        f"{list(biases)}, n = {N})"), False
    normed = {H: row_normalised(B) for H, B in biases.items()}
    if all(v is not None for v in normed.values()) and _toeplitz_failure(normed) is None:
        return Property("Toeplitz", PASS, "softmax-equivalent to a Toeplitz bias: B[h,i,j] = "
                        "T[h,i−j] + c[h,i], a per-row constant softmax ignores (as in Bloom's "
                        "build_alibi_tensor); the checks below read B − diag(B) row by row",
                        None), True
    return Property("Toeplitz", FAIL, "the bias depends on absolute positions, and not only "
                    "through a per-row constant" + _dtype_hint(biases), why), False


def _dtype_hint(biases: dict[int, np.ndarray]) -> str:
    """Words suggesting ``--expect dtype=..`` when, with no dtype stated, every entry is a
    bfloat16 (float16) number and the bias is Toeplitz at that precision (Falcon's ALiBi is
    bf16(slope)·j in bfloat16 on purpose); else ""."""
    if roundoff() is not None:
        return ""
    for dtype in FORMATS:
        finite = [B[np.isfinite(B)] for B in biases.values()]
        if not all(np.array_equal(rounded(v, dtype), v) for v in finite):
            continue
        with stored_as(dtype):
            ok = _toeplitz_failure(biases) is None or _toeplitz_failure(
                {H: row_normalised(B) for H, B in biases.items()}) is None
        if ok:
            return (f"; but every entry is a {dtype} number and the bias is Toeplitz at {dtype} "
                    f"precision: pass --expect dtype={dtype} if it is computed in {dtype} on "
                    f"purpose (as Falcon's ALiBi is)")
    return ""


def check_length(caller: Caller, full: np.ndarray,
                 prepare: Callable[[np.ndarray], np.ndarray]) -> Property:
    H = full.shape[0]
    for n in range(1, N):
        B = prepare(_call(caller, H, n))
        bad = np.argwhere(~same(B, full[:, :n, :n]))
        if bad.size:
            h, i, j = map(int, bad[0])
            return Property("length independent", FAIL, "g(H, n) is not a block of g(H, n+k)",
                            f"n_heads={H}, head {h}: g(H, {n})[{i},{j}] = {fmt(B[h, i, j])} but "
                            f"g(H, {N})[{i},{j}] = {fmt(full[h, i, j])}")
    return Property("length independent", PASS, f"g(H, n) = g(H, {N})[:n, :n] for n < {N}")


def direction(B: np.ndarray) -> tuple[str, str]:
    """('symmetric'|'causal'|'wrong side'|'neither', detail) of a (H, n, n) bias."""
    if np.all(same(B, np.swapaxes(B, 1, 2))):
        return "symmetric", "B = Bᵀ"
    iu = np.triu_indices(B.shape[1], 1)
    upper = B[:, iu[0], iu[1]]
    if upper.size and (np.all(upper == 0) or np.all(np.isneginf(upper))):
        return "causal", f"entries above the diagonal are {'0' if np.all(upper == 0) else '−inf'}"
    lower = B[:, iu[1], iu[0]]
    if lower.size and np.all(np.isneginf(lower)):
        return "wrong side", ("the causal mask is on the wrong side: every key before the query "
                              "(j < i) is −inf and the keys after it are kept -- the mask is "
                              "tril where it should be triu (or i and j are swapped)")
    bad = np.argwhere(~same(B, np.swapaxes(B, 1, 2)))
    h, i, j = min(map(tuple, bad), key=lambda t: (t[1] + t[2], t[0]))
    return "neither", (f"head {h}: B[{i},{j}] = {fmt(B[h, i, j])}, B[{j},{i}] = "
                       f"{fmt(B[h, j, i])}, and the upper triangle is not masked")


def slopes_of(B: np.ndarray) -> tuple[np.ndarray | None, str]:
    """Per-head slopes s_h if B[h, k, 0] = −s_h·k for every k (ALiBi below the diagonal)."""
    n = B.shape[1]
    k = np.arange(n)
    col = B[:, :, 0]                                # B[h, k, 0]: offset i − j = k ≥ 0
    s = -(col[:, 1] - col[:, 0]) if n > 1 else np.zeros(B.shape[0])
    if roundoff() is not None and n > 1 and np.all(np.isfinite(col)):
        # reduced precision: every entry is off by up to 4u·max, so read the slope by least
        # squares over the column rather than at distance 1 alone
        s = -((col - col[:, :1]) @ k) / float(k @ k)
    pred = -s[:, None] * k[None, :]
    bad = np.argwhere(~same(col, pred))
    if bad.size:
        h, kk = map(int, bad[0])
        return None, (f"head {h}: B[{kk},0] = {fmt(col[h, kk])}, but −slope·{kk} = "
                      f"{fmt(pred[h, kk])} with the slope {fmt(s[h])} read at distance 1")
    return s, ""


def alibi_form(B: np.ndarray, s: np.ndarray, kind: str) -> Optional[str]:
    """None if the whole of B is ALiBi with slopes s for ``kind``; else the first difference."""
    n = B.shape[1]
    k = np.arange(n)[:, None] - np.arange(n)[None, :]                       # i − j
    pred = -s[:, None, None] * np.abs(k)[None]
    check = np.ones(B.shape, dtype=bool) if kind != "causal" else np.broadcast_to(k >= 0, B.shape)
    bad = np.argwhere(check & ~same(B, pred))
    if not bad.size:
        return None
    h, i, j = min(map(tuple, bad), key=lambda t: (abs(t[1] - t[2]), t[1], t[0]))
    return (f"head {h}: B[{i},{j}] = {fmt(B[h, i, j])}, but −s·|i−j| = {fmt(pred[h, i, j])} "
            f"(s = {fmt(s[h])})")


def _schedule_match(s: np.ndarray, H: int) -> dict[str, bool]:
    from ..numerics.conventions import alibi_slopes
    return {name: bool(np.allclose(s, alibi_slopes(H, name), rtol=slope_rtol(), atol=1e-9))
            for name in ("press", "exp")}


def _slip_hint(recovered: dict[int, np.ndarray]) -> str:
    """Name the usual slope slip -- head index off by one, slopes of H − 1 or H + 1 heads -- if
    one explains the slopes of every n_heads tested (where it is defined)."""
    from ..numerics.conventions import alibi_slopes

    formulas = {"press": lambda idx, heads: 2.0 ** (-8.0 * idx / heads),
                "exp": lambda idx, heads: np.exp(-idx / heads)}
    def pow2_below(H: int) -> int:
        return 1 << (H.bit_length() - 1)

    for name, f in formulas.items():
        slips = {} if name != "press" else {
            # Press et al.'s rule for H not a power of two: the slopes of p = 2^⌊log2 H⌋ heads,
            # then every other slope of 2p heads.  The two ways it is got wrong:
            "2^(−8h/H) with H itself, for H not a power of two (the non-power-of-two rule -- "
            "slopes of the closest power of two p below H, then every other slope of 2p -- was "
            "not applied)":
                lambda H, f=f: [f(np.arange(1, H + 1), H)] if H != pow2_below(H) else [],
            "for H not a power of two, with the extra heads' slopes taken from 2p heads in a "
            "row, not every other one ([0::2] forgotten)":
                lambda H, f=f: [np.concatenate([f(np.arange(1, pow2_below(H) + 1), pow2_below(H)),
                                                f(np.arange(1, H - pow2_below(H) + 1),
                                                  2 * pow2_below(H))])]
                if H != pow2_below(H) else [],
        }
        slips.update({
            "in reverse head order (the steepest slope on the last head: slopes[::-1])":
                lambda H, f=f, name=name: [alibi_slopes(H, name)[::-1]] if H > 1 else [],
            "with head index h−1 (an off-by-one: h = 0..H−1)":
                lambda H, f=f: [f(np.arange(H), H)],
            "with head index h+1 (an off-by-one: h = 2..H+1)":
                lambda H, f=f: [f(np.arange(2, H + 2), H)],
            "of H+1 heads (an off-by-one in n_heads)":
                lambda H, f=f, name=name: [f(np.arange(1, H + 1), H + 1),
                                           alibi_slopes(H + 1, name)[:H]],
            "of H−1 heads (an off-by-one in n_heads)":
                lambda H, f=f: [f(np.arange(1, H + 1), H - 1)] if H > 1 else [],
        })
        for what, guesses in slips.items():
            explained = 0
            for H, s in recovered.items():
                if any(np.allclose(s, g, rtol=slope_rtol(), atol=1e-9) for g in guesses(H)):
                    explained += 1
                elif guesses(H) and not _schedule_match(s, H)[name]:
                    break
            else:
                if explained:
                    return f"; the slopes are {name}'s {what}"
    return ""


def check_slopes(biases: dict[int, np.ndarray], kind: str, summary: dict) -> list[Property]:
    recovered: dict[int, np.ndarray] = {}
    for H, B in biases.items():
        s, why = slopes_of(B)
        if s is None:
            return [Property("ALiBi form", INFO, "not linear in the distance, so not ALiBi; slope "
                             "schedule not applicable", f"n_heads={H}, {why}"),
                    Property("slope schedule", NA, "not an ALiBi-style bias"),
                    check_form(biases, kind, summary)]
        recovered[H] = s
    summary["slopes"] = {str(H): [float(v) for v in s] for H, s in recovered.items()}
    for H, s in recovered.items():
        if np.any(s < 0):
            h = int(np.argmax(s < 0))
            B = biases[H]
            anti = bool(np.all(same(B, -np.swapaxes(B, 1, 2))))
            return [Property("ALiBi form", FAIL, "below the diagonal the bias grows with distance "
                             "(a negative slope): the distance has the wrong sign -- −s·(j−i) is "
                             "+s·(i−j)" + (", and without abs it is s·(i−j) on both sides: "
                                           "ALiBi is −s·|i−j|" if anti else ""),
                             f"n_heads={H}, head {h}: B[1,0] = {fmt(B[h, 1, 0])} > B[0,0] = "
                             f"{fmt(B[h, 0, 0])}"),
                    Property("slope schedule", NA, "the bias is not ALiBi")]
    if kind == "neither":
        for H, B in biases.items():
            wrong = one_sided(B)
            if wrong:
                return [Property("ALiBi form", FAIL, "ALiBi below the diagonal, but " + wrong,
                                 f"n_heads={H}: " + wrong.split("(", 1)[1].split(")")[0]),
                        Property("slope schedule", NA, "the bias is not ALiBi")]
        return [Property("ALiBi form", INFO, "−s·(i−j) below the diagonal, something else above "
                         "it (neither symmetric nor causal): not ALiBi"),
                Property("slope schedule", NA, "not an ALiBi bias")]
    for H, B in biases.items():
        why = alibi_form(B, recovered[H], kind)
        if why:
            return [Property("ALiBi form", FAIL, "linear below the diagonal but not −s·|i−j| "
                             "over the whole matrix", f"n_heads={H}, {why}"),
                    Property("slope schedule", NA, "the bias is not ALiBi")]
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
        shown = ", ".join(fmt(v) for v in recovered[8])
        return [form, Property("slope schedule", PASS, f"{name} for every n_heads tested "
                               f"(n_heads=8: {shown})")]
    summary["schedule"] = "other"
    H, s = first_bad
    from ..numerics.conventions import alibi_slopes
    press, exp = alibi_slopes(H, "press"), alibi_slopes(H, "exp")
    h = next((i for i in range(H) if not (np.isclose(s[i], press[i], rtol=slope_rtol())
                                          or np.isclose(s[i], exp[i], rtol=slope_rtol()))), 0)
    return [form, Property("slope schedule", FAIL, "other: matches neither press nor exp"
                           + _slip_hint(recovered),
                           f"n_heads={H}, head {h} (h = {h + 1} of 1..{H}): slope {fmt(s[h])}; "
                           f"press gives {fmt(press[h])}, exp gives {fmt(exp[h])}")]


def check_bias(caller: Caller, impl: str, expected: Optional[dict] = None) -> ConformanceReport:
    """The checks above; entries compared at the precision ``--expect dtype=`` states."""
    dtype = (expected or {}).get("dtype")
    with stored_as(dtype):
        report = _check_bias(caller, impl, expected)
    if dtype:
        report.summary["dtype"] = dtype
    return report


def _check_bias(caller: Caller, impl: str, expected: Optional[dict]) -> ConformanceReport:
    heads = list(HEADS)
    for key in ("slopes", "r1", "r2"):             # a per-head list: check that many heads too
        if expected and isinstance(expected.get(key), list) and len(expected[key]) not in heads:
            heads.append(len(expected[key]))
    raw = {H: _call(caller, H, N) for H in heads}                   # H -> (H, N, N)
    report = ConformanceReport(impl, "bias", "plain")
    props = report.properties
    props.append(Property("shape", PASS, f"g(H, n) -> (H, n, n) for H in {heads}"))
    props.append(check_finite(raw))
    if props[-1].status == FAIL:
        return report
    props.append(check_deterministic(caller, raw[8]))
    if props[-1].status == FAIL:
        return report
    toeplitz, by_row = check_toeplitz(raw)
    props.append(toeplitz)
    report.summary["softmax_equivalent"] = by_row

    def prepare(B: np.ndarray) -> np.ndarray:
        if not by_row:
            return B
        out = row_normalised(B)
        return B if out is None else out

    biases = {H: prepare(B) for H, B in raw.items()}
    props.append(check_length(caller, biases[8], prepare))
    # The ALiBi form, the slopes and --expect read each row relative to its diagonal entry: a
    # constant added to the whole bias (or to a row) changes no softmax.
    relative = {H: (row_normalised(B) if row_normalised(B) is not None else B)
                for H, B in biases.items()}
    kinds = {H: direction(B) for H, B in biases.items()}
    kind, why = kinds[8]
    if any(k != kind for k, _ in kinds.values()):
        kind, why = "neither", "the direction differs between head counts"
    report.summary["direction"] = kind
    if kind == "wrong side":
        props.append(Property("symmetric or causal", FAIL, why,
                              f"n_heads=8, head 0: B[1,0] = {fmt(biases[8][0, 1, 0])}, "
                              f"B[0,1] = {fmt(biases[8][0, 0, 1])}"))
        props.append(Property("slope schedule", NA, "the mask is on the wrong side"))
        return report
    props.append(Property("symmetric or causal", PASS if kind != "neither" else INFO,
                          f"{kind}: {why}" if kind != "neither" else
                          "neither (fine for a learned relative bias such as T5's)",
                          None if kind != "neither" else why))
    if toeplitz.status == FAIL:
        props.append(Property("slope schedule", NA, "the bias is not Toeplitz"))
    else:
        props.extend(check_slopes(relative, kind, report.summary))
        if "slopes" not in report.summary and not by_row and not any(
                p.name == "KERPLE-log form" and p.status == PASS for p in props):
            props.append(check_t5_learned(_call(caller, 1, T5_N)[0]))  # head 0, (T5_N, T5_N)
        if props[-2].name == "ALiBi form" and props[-2].status == PASS and not by_row and \
                any(np.any(relative[H] != B) for H, B in biases.items()):
            props[-2].detail += " (plus a constant on the diagonal, which softmax ignores)"
    stated = {k for k in (expected or {}) if k not in ("kind", "dtype")}
    if not stated:
        pass                        # nothing but the storage precision was stated
    elif "r1" in stated or "r2" in stated:
        props.append(check_expectation(relative, expected, report.summary))
    else:
        props.append(check_bias_expectation(relative, expected, report.summary))
    return report
