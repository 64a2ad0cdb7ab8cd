"""Hypothesis strategies shared by the claims, and compact text for the inputs they draw.

Matrices are drawn with small integer entries: Hypothesis shrinks integers towards 0 and sizes
towards the minimum, so a counterexample it returns is short enough to read (``[[1, 0], [0, 1]]``
rather than sixteen floats).  Builders (PSD from a factor, unit diagonal by normalising rows)
turn the integers into matrices meeting the assumptions inside the check, so that no strategy
needs a filter.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

ENTRY = 3       # integer entries in [-ENTRY, ENTRY]


def int_matrix(rows: int, cols: int, bound: int = ENTRY):
    """Strategy: a (rows, cols) tuple-of-tuples of integers in [-bound, bound]."""
    row = st.tuples(*[st.integers(-bound, bound)] * cols)
    return st.tuples(*[row] * rows)


def sized(builder, n_min: int = 1, n_max: int = 4):
    """Strategy drawing ``n`` in [n_min, n_max] then ``builder(n)`` -> a strategy of dicts."""
    return st.integers(n_min, n_max).flatmap(builder)


def as_array(rows: Any) -> np.ndarray:
    return np.asarray(rows, dtype=np.float64)


def psd_from_factor(factor: Any) -> np.ndarray:
    """A = L Lᵀ (PSD by construction)."""
    L = as_array(factor)
    return L @ L.T


def symmetric_from(rows: Any) -> np.ndarray:
    """(S + Sᵀ) / 2 of an integer matrix: any real symmetric matrix, PSD or not."""
    S = as_array(rows)
    return (S + S.T) / 2


def unit_diagonal_psd(factor: Any) -> np.ndarray:
    """A correlation matrix: Gram matrix of the factor's rows normalised to unit length.

    A zero row is replaced by e_0, so the result always has a unit diagonal.
    """
    V = as_array(factor)
    norms = np.linalg.norm(V, axis=1)
    V = V.copy()
    zero = norms == 0
    V[zero] = 0.0
    V[zero, 0] = 1.0
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    return V @ V.T


def fmt(value: Any) -> str:
    """One-line text of an input: arrays as nested lists, floats with 6 significant digits."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={fmt(v)}" for k, v in value.items()) + "}"
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return fmt(value.item())
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    if isinstance(value, (np.floating, np.integer, np.complexfloating)):
        return fmt(value.item())
    if isinstance(value, complex):
        return f"{value.real:.6g}{value.imag:+.6g}j"
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return fmt(np.asarray(value))
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    return repr(value)
