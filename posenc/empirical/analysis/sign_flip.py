"""Sign-flip randomisation of the early-window coherence (Prop. 6.1 of Gu et al., arXiv 2505.13027).

The coherence of head k in record r is ``|sum_e x[r, k, e]| / sum_e |x[r, k, e]|`` over the
probe examples e (:func:`~.dynamics.signal_grids`); the run's statistic is its maximum over
heads of the mean over the early window's records (``coherence_max`` of
:mod:`.dynamics_summary`)::

    C(x) = max_k mean_r |sum_e x[r, k, e]| / sum_e |x[r, k, e]|

**The null: sign symmetry.**  No head has a consistent positional seed when every example's
signal is as likely to push one way as the other: the distribution of example e's signals over
all records and heads, ``x[:, :, e]``, equals that of ``-x[:, :, e]``, the examples independent
(the probe examples are drawn independently; nothing is assumed of the magnitudes, which may
differ by example, head and record).  Under it, given the observed |x|, each of the 2^n sign
patterns g in {-1, 1}^n -- example e's signals all multiplied by g_e, jointly over records and
heads (the same example at every record) -- is equally likely, so ``C(g x)`` over the patterns
is the exact null distribution of C conditional on the magnitudes.  The identity is one of the
patterns; with ``V`` the values over the patterns used (all 2^n when ``2^n <= draws + 1``,
else the identity and ``draws`` patterns of independent fair signs), the p-value
``#{v in V: v >= C(x)} / |V|`` satisfies P(p <= a) <= a under the null, and so does the test
``C(x) > q``, q the ``level`` quantile of V (the smallest value of V with at least a ``level``
share of V at or below it): P(C > q) <= 1 - level.  This replaces the equal-magnitude
random-sign null, which the data do not meet (magnitudes differ widely across examples).

**What the recorder keeps for it** (:func:`quantised`): per early record, layer, head and
example ``round(QMAX * x / max_e |x|)`` -- an odd function of x, so sign-symmetric signals stay
sign-symmetric and the test stays exact on the stored values; and the coherence is unchanged
by the per-(record, head) scale, so nothing else is needed.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

#: the quantised signals' range: integers in [-QMAX, QMAX] (4 significant digits)
QMAX = 9999
#: random sign patterns drawn when 2^n is too many to enumerate
DRAWS = 1999
#: the generator's seed for the drawn patterns (fixed: a summary is reproducible)
SEED = 20260


def quantised(P: Any) -> list[Optional[list[list[int]]]]:
    """A record's per-example signals P (L, N, H; NaN rows for layers without a positional
    part) as ``[layer][head][example]`` integers ``round(QMAX * x / max_e |x|)`` (None for a
    layer without a signal; a head whose every signal is 0 keeps zeros)."""
    arr = np.asarray(P, dtype=np.float64).transpose(0, 2, 1)  # (L, H, N)
    out: list[Optional[list[list[int]]]] = []
    for layer in arr:
        if np.isnan(layer).any():
            out.append(None)
            continue
        top = np.abs(layer).max(axis=1, keepdims=True)
        q = np.rint(QMAX * layer / np.where(top > 0, top, 1.0)).astype(int)
        out.append(q.tolist())
    return out


def window_signals(records: Sequence[dict[str, Any]]) -> Optional[np.ndarray]:
    """(R, K, N) signals of the window's records (K: the heads of layers with a signal), from
    their ``psi_q`` grids; None when a record lacks one."""
    if not records or any(r.get("psi_q") is None for r in records):
        return None
    stacks = [[head for layer in r["psi_q"] if layer is not None for head in layer]
              for r in records]
    if not stacks[0]:
        return None
    return np.asarray(stacks, dtype=np.float64)


def coherence_max(x: np.ndarray, signs: Optional[np.ndarray] = None) -> np.ndarray:
    """C of ``x`` (R, K, N) under each sign pattern of ``signs`` (B, N; default the identity):
    shape (B,).  A head whose signals are all 0 in a record has coherence 0 there."""
    if signs is None:
        signs = np.ones((1, x.shape[-1]))
    R, K, N = x.shape
    sums = np.abs(signs @ x.reshape(R * K, N).T).reshape(-1, R, K)  # (B, R, K)
    norms = np.abs(x).sum(axis=-1)                             # (R, K)
    coh = np.where(norms > 0, sums / np.where(norms > 0, norms, 1.0), 0.0)
    return coh.mean(axis=1).max(axis=1)


def sign_patterns(n: int, draws: int = DRAWS, seed: int = SEED) -> tuple[np.ndarray, bool]:
    """(patterns (B, n), exact): all 2^n sign patterns when ``2^n <= draws + 1``, else the
    identity and ``draws`` patterns of independent fair signs from a fixed generator."""
    if n < 1:
        raise ValueError("sign_patterns needs n >= 1 examples")
    if n <= math.log2(draws + 1):
        codes = np.arange(2 ** n)[:, None] >> np.arange(n)[None, :] & 1
        return 1.0 - 2.0 * codes, True  # row 0 is the identity
    rng = np.random.default_rng(seed)
    drawn = rng.choice([-1.0, 1.0], size=(draws, n))
    return np.vstack([np.ones((1, n)), drawn]), False


def quantile_of(values: np.ndarray, level: float) -> float:
    """The smallest v in ``values`` with at least a ``level`` share of them <= v."""
    v = np.sort(values)
    return float(v[max(math.ceil(level * len(v) - 1e-9), 1) - 1])


def sign_flip_test(x: np.ndarray, level: float = 0.95, draws: int = DRAWS,
                   seed: int = SEED) -> dict[str, Any]:
    """The sign-flip randomisation of C for signals ``x`` (R, K, N) (module doc): the observed
    C, the null's mean and ``level`` quantile, the p-value, the number of patterns and
    whether they are all 2^n (exact) or drawn."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3 or 0 in x.shape or not np.isfinite(x).all():
        raise ValueError("sign_flip_test needs finite signals of shape (records, heads, examples)")
    signs, exact = sign_patterns(x.shape[-1], draws, seed)
    values = coherence_max(x, signs)
    observed = float(values[0])
    return {"observed": observed, "mean": float(values.mean()),
            "quantile": quantile_of(values, level), "level": level,
            "p_value": float(np.mean(values >= observed - 1e-12 * max(observed, 1.0))),
            "patterns": int(len(values)), "exact": exact}
