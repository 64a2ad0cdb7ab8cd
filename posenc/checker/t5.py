"""Conformance of a user's T5 bucket function ``b(n) -> (n, n)``: the relative-position bucket
of query i and key j (Raffel et al. 2020; transformers' ``T5Attention.compute_bias`` builds
``relative_position = memory_position − context_position`` = j − i and buckets it).

The reference is the catalogue's :func:`posenc.numerics.conventions.t5_bucket` (bidirectional,
``rel = j − i``); a decoder's unidirectional bucketing (``bidirectional=False``) with N buckets
is the bidirectional one with 2N buckets at min(rel, 0) -- equal to transformers' on every
rel in [−300, 300] for (32, 128), (16, 64) and (32, 64).  Checked on b(N) with N = 1024 (past
every max_distance tried):

* integer buckets ≥ 0, depending on j − i only (Toeplitz);
* T5 bucketing: the buckets equal the reference for some (bidirectional, num_buckets,
  max_distance) -- the ones ``--expect`` states, else found among the usual values; a
  mismatch names the usual slips: i and j swapped (rel = i − j), an off-by-one (j − i ± 1), a
  decoder with bidirectional buckets (``--expect bidirectional=false``).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import PosencError
from .expect import T5_KEYS
from .loading import Caller
from .report import FAIL, PASS, ConformanceReport, Property

N = 1024
NUM_BUCKETS = (8, 16, 32, 64, 128)
MAX_DISTANCE = (16, 32, 64, 128, 256, 512)


def reference(rel: np.ndarray, bidirectional: bool, num_buckets: int,
              max_distance: int) -> np.ndarray:
    """T5's bucket of ``rel = j − i``, bidirectional (an encoder) or not (a decoder)."""
    from ..numerics.conventions import t5_bucket
    if bidirectional:
        return t5_bucket(rel, num_buckets, max_distance)
    return t5_bucket(np.minimum(rel, 0), 2 * num_buckets, max_distance)


def _name(bidirectional: bool, nb: int, md: int) -> str:
    return f"bidirectional={bidirectional}, num_buckets={nb}, max_distance={md}"


def _candidates(expected: Optional[dict]) -> list[tuple[bool, int, int]]:
    e = expected or {}
    bi = [e["bidirectional"]] if "bidirectional" in e else [True, False]
    nbs = [int(e["num_buckets"])] if "num_buckets" in e else list(NUM_BUCKETS)
    mds = [int(e["max_distance"])] if "max_distance" in e else list(MAX_DISTANCE)
    return [(b, nb, md) for b in bi for nb in nbs for md in mds]


def _match(row: np.ndarray, rel: np.ndarray, cands,
           alike=np.array_equal) -> Optional[tuple[bool, int, int]]:
    """The first candidate whose buckets of ``rel`` are ``alike`` ``row`` (equal, by default)."""
    for c in cands:
        if alike(row, reference(rel, *c)):
            return c
    return None


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` and ``b`` group the same entries together (one is a relabelling of the other)."""
    pairs = np.unique(np.stack([a, b]), axis=1).shape[1]
    return pairs == len(np.unique(a)) == len(np.unique(b))


def match(row: np.ndarray, rel: np.ndarray, expected: Optional[dict] = None,
          alike=np.array_equal) -> Optional[tuple[bool, int, int]]:
    """T5's (bidirectional, num_buckets, max_distance) whose buckets of ``rel`` are ``alike``
    ``row``: the expected ones, else the usual values (see :data:`NUM_BUCKETS`)."""
    return _match(row, rel, _candidates(expected), alike)


def check_t5(caller: Caller, impl: str, expected: Optional[dict] = None) -> ConformanceReport:
    out = caller.call_plain(N)
    while out.ndim > 2 and out.shape[0] == 1:
        out = out[0]
    if out.shape != (N, N):
        raise PosencError(f"{impl} returned shape {out.shape} for n={N}; a T5 bucket function "
                          f"b(n) returns the (n, n) buckets of query i, key j")
    report = ConformanceReport(impl, "t5", "plain")
    props, summary = report.properties, report.summary
    props.append(Property("shape", PASS, f"b(n) -> (n, n), n = {N}"))
    bad = np.argwhere(~(np.isfinite(out) & (out == np.round(out)) & (out >= 0)))
    if bad.size:
        i, j = (int(v) for v in bad[0])
        props.append(Property("integer buckets", FAIL, "a bucket is not an integer ≥ 0",
                              f"b({N})[{i},{j}] = {out[i, j]}"))
        return report
    props.append(Property("integer buckets", PASS, f"buckets 0..{int(out.max())}"))
    bad = np.argwhere(out[1:, 1:] != out[:-1, :-1])
    if bad.size:
        i, j = (int(v) for v in min(map(tuple, bad), key=lambda t: (t[0] + t[1], t[0])))
        props.append(Property("Toeplitz", FAIL, "the bucket depends on absolute positions, not "
                              "on j − i only", f"b[{i},{j}] = {int(out[i, j])} but "
                              f"b[{i + 1},{j + 1}] = {int(out[i + 1, j + 1])}"))
        return report
    props.append(Property("Toeplitz", PASS, "the bucket depends on j − i only"))
    rel = np.arange(-(N - 1), N)                                            # j − i
    row = np.concatenate([out[:0:-1, 0], out[0]]).astype(np.int64)          # bucket at rel
    cands = _candidates(expected)
    found = _match(row, rel, cands)
    if found is not None:
        summary.update(bidirectional=found[0], num_buckets=found[1], max_distance=found[2])
        props.append(Property("T5 buckets", PASS, f"T5's relative_position_bucket of j − i "
                              f"with {_name(*found)}"))
        return report
    words, hit = "", None
    every = _candidates(None)
    if "bidirectional" in (expected or {}) and (hit := _match(row, rel, [
            (not expected["bidirectional"], nb, md) for _, nb, md in cands])) is not None:
        words = ((f"a decoder with bidirectional buckets: keys after the query get buckets of "
                  f"their own ({_name(*hit)}), so the past has half the buckets -- "
                  f"bidirectional=True where a decoder needs False")
                 if hit[0] else f"unidirectional (decoder) buckets where bidirectional ones "
                                f"were expected ({_name(*hit)})")
    elif (hit := _match(row[::-1], rel, cands) or _match(row[::-1], rel, every)) is not None:
        words = (f"i and j are swapped: the bucket is T5's of i − j, not j − i ({_name(*hit)}) "
                 f"-- relative_position = context − memory instead of memory − context")
    elif expected and (hit := _match(row, rel, every)) is not None:
        words = f"T5's bucketing with {_name(*hit)}, not the expected " + ", ".join(
            f"{k}={expected[k]}" for k in T5_KEYS if k in expected)
        hit = None                  # the counterexample compares with the expected parameters
    else:
        for shift in (1, -1):
            hit = _match(row, rel + shift, cands) or _match(row, rel + shift, every)
            if hit is not None:
                words = (f"off by one: the bucket is T5's of j − i {'+' if shift > 0 else '−'} 1 "
                         f"({_name(*hit)})")
                break
    # the counterexample: against the parameters the slip was found with, else the candidate
    # that agrees longest around rel = 0
    best, best_n = hit or cands[0], -1 if hit is None else N + 1
    for c in cands if hit is None else ():
        ref = reference(rel, *c)
        ok = row == ref
        first = int(np.min(np.abs(rel[~ok]))) if (~ok).any() else N
        if first > best_n:
            best, best_n = c, first
    if hit is not None and hit[0] != (expected or {}).get("bidirectional", hit[0]):
        best = (expected["bidirectional"], hit[1], hit[2])   # decoder vs encoder: the expected one
    ref = reference(rel, *best)
    k = np.flatnonzero(row != ref)
    k = int(k[np.argmin(np.abs(rel[k]))])
    r = int(rel[k])
    i, j = (0, r) if r >= 0 else (-r, 0)
    props.append(Property("T5 buckets", FAIL, (words or "matches T5's relative_position_bucket "
                                               "for no (bidirectional, num_buckets, "
                                               "max_distance) tried")
                          + ("" if words or expected else
                             f" (num_buckets in {list(NUM_BUCKETS)}, max_distance in "
                             f"{list(MAX_DISTANCE)})"),
                          f"query {i}, key {j} (j − i = {r}): bucket {int(row[k])}, T5 with "
                          f"{_name(*best)} gives {int(ref[k])}"))
    return report
