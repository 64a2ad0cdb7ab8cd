"""Which large positions a user's rotary function can be probed at, and whether its rotation
at a position depends on the other positions in the same call.

Two things look like wrong large-position behaviour and are not:

* *a position table*: GPT-J's ``create_sinusoidal_positions(2048, d)``, transformer-lens'
  ``n_ctx``, torchtune's ``max_seq_len`` build cos/sin for a fixed number of positions and index
  it, so a position past the table raises.  Such a function is probed only below its table: the
  ``--max-positions`` the user gives, or else the size detected as the first position whose call
  raises (found by bisection, each call holding one position);
* *call-dependent frequencies*: dynamic NTK scaling (transformers' ``rope_type="dynamic"``)
  raises the base when the longest position in a call passes the trained length, so
  f(x, p) for small p changes when a large position is in the same call.  This is named as its
  own property, and every large position is probed in a call of its own (it was one call
  before, so one huge position rescaled all the others and read as float32 drift).

:func:`probe_reach` returns the positions the drift and frequency probes may use and the
property that says what was found.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..errors import PosencError
from .report import FAIL, INFO, PASS, Property
from .rope import GRID, LARGE, TOL, RopeProbe


def _raises(probe: RopeProbe, p: int) -> Optional[str]:
    """The error of one call at position p alone (x of one row), or None if it works."""
    x = np.zeros((1, 1, probe.dim))
    x[0, 0, 0] = 1.0
    try:
        probe.apply(x, np.array([p]))
    except PosencError as exc:
        return str(exc)
    return None


def _first_true(lo: int, hi: int, pred: Callable[[int], bool]) -> int:
    """The smallest p in (lo, hi] with pred(p), given not pred(lo) and pred(hi) (monotone)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _moves_small(probe: RopeProbe, M: np.ndarray, p: int) -> bool:
    """Does adding position p to a call change f at positions 0..GRID-1 (read off M)?

    A call of positions 0..GRID-1 alone comes first: transformers' dynamic NTK keeps the
    frequencies of its longest call until a call shorter than the trained length resets them,
    so without it a probe at p would read the frequencies an earlier, longer probe left."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((2, GRID + 1, probe.dim))
    try:
        probe.apply(X[:, :GRID], np.arange(GRID))
        Y = probe.apply(X, np.concatenate([np.arange(GRID), [p]]))
    except PosencError:
        return False                  # a call of more than one row at p raising: not this property
    pred = np.einsum("sdb,nsb->nsd", M, X[:, :GRID])
    return bool(np.abs(Y[:, :GRID] - pred).max() > TOL)


def _keeps_state(probe: RopeProbe, M: np.ndarray, p: int) -> bool:
    """After a call at position p, does f at positions 0..GRID-1 (a call of their own) differ
    from M, read before any long call?"""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((2, GRID, probe.dim))
    try:
        probe.apply(X[:, :1], np.array([p]))
        Y = probe.apply(X, np.arange(GRID))
    except PosencError:
        return False
    return bool(np.abs(Y - np.einsum("sdb,nsb->nsd", M, X)).max() > TOL)


def probe_reach(probe: RopeProbe, M: np.ndarray, max_positions: Optional[int],
                summary: dict) -> tuple[list[int], Property, Optional[str]]:
    """(large positions to probe, each in a call of its own; the "large positions" property;
    the error of a call that raised below --max-positions, or None)."""
    notes = []
    if max_positions is not None:
        limit = max_positions
        wanted = [p for p in LARGE if p < limit] + ([limit - 1] if limit - 1 not in LARGE else [])
        for p in wanted:
            err = _raises(probe, p)
            if err is not None:
                return [], Property("large positions", INFO, f"probed below --max-positions "
                                    f"{limit}"), f"position {p} (< --max-positions {limit}): {err}"
        summary["max_positions"] = limit
        notes.append(f"probed below --max-positions {limit}")
    else:
        limit = None
        last_ok = GRID - 1
        for p in LARGE:
            if _raises(probe, p) is None:
                last_ok = p
                continue
            limit = _first_true(last_ok, p, lambda q: _raises(probe, q) is not None)
            break
        if limit is not None:
            summary["table_size"] = limit
            notes.append(f"a call at position {limit} raises, at {limit - 1} works: a table of "
                         f"{limit} positions, probed below it (give --max-positions to say so)")
        wanted = [p for p in LARGE if limit is None or p < limit]
        if limit is not None and limit - 1 > GRID - 1 and limit - 1 not in wanted:
            wanted.append(limit - 1)
    if wanted and _keeps_state(probe, M, max(wanted)):
        return [], Property("call-dependent frequencies", FAIL, f"f at positions 0..{GRID - 1} "
                            f"in a call of their own changed after a call at position "
                            f"{max(wanted)}: it keeps state from an earlier, longer call and "
                            f"does not reset (a dynamic NTK cache that never resets? "
                            f"transformers' resets when a call's max position + 1 is below the "
                            f"trained length)", f"positions 0..{GRID - 1} before and after a call "
                            f"at position {max(wanted)}"), None
    moving = [p for p in wanted if _moves_small(probe, M, p)]
    if moving:
        lo = max([GRID - 1] + [p for p in wanted if p < moving[0]])
        first = _first_true(lo, moving[0], lambda q: _moves_small(probe, M, q))
        summary["call_dependent_from"] = first
        wanted = [p for p in wanted if p < first]
        notes.insert(0, f"f(x, p) at p ≤ {GRID - 1} changes when "
                     f"position {first} (not {first - 1}) is in the same call -- dynamic "
                     f"NTK-style scaling from a trained length of {first}; the large-position "
                     f"probes stop below it")
        return sorted(wanted), Property("call-dependent frequencies", INFO, "; ".join(notes)), None
    summary["probe_positions"] = sorted(wanted)
    detail = "; ".join(notes) if notes else (f"calls at positions up to {max(wanted)} work, "
                                             f"and f at p ≤ {GRID - 1} does not change when "
                                             f"they are in the same call")
    return sorted(wanted), Property("large positions", INFO if notes else PASS, detail), None
