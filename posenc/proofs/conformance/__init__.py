"""``posenc check``: conformance of other people's PE code to the catalogue's conventions.

:func:`check_impl` loads ``IMPL`` (``module:function``, ``module.function`` or
``file.py:function``) and runs the properties of its kind:

* ``rope`` -- a rotary function ``f(x, positions) -> x_rotated``, x of shape (..., seq, dim)
  (numpy float64 first, torch tensors if numpy inputs raise), positions (seq,) int64:
  see :mod:`.rope` and :mod:`.rope_frequency`;
* ``bias`` -- ``g(n_heads, n) -> (heads, n, n)`` with Python ints: see :mod:`.bias`.

``kind=None`` detects the kind: the callable is first tried as a bias function with small ints
(g(2, 4) must return a (2, 4, 4) array), then as a rotary function.  Bad input -- an import path
that does not resolve, a non-callable, a callable that raises on the probe inputs or returns the
wrong shape -- is a one-line :class:`~posenc.errors.PosencError` (``posenc check`` exit 2).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...errors import PosencError
from .loading import Caller, load_callable
from .report import FAIL, PASS, CheckReport, Property

KINDS = ("rope", "bias")


def _looks_like_bias(caller: Caller) -> tuple[bool, str]:
    try:
        out = caller.call_plain(2, 4)
    except PosencError as exc:
        return False, str(exc)
    while out.ndim > 3 and out.shape[0] == 1:
        out = out[0]
    if out.shape == (2, 4, 4):
        return True, ""
    return False, f"g(2, 4) returned shape {out.shape}, not (2, 4, 4)"


def check_rope(caller: Caller, impl: str, dim: int) -> CheckReport:
    from .rope import GRID, RopeProbe, check_linear, check_norm, check_pairing, check_shift
    from .rope_frequency import check_drift, check_frequencies

    if dim < 2 or dim % 2:
        raise PosencError(f"--dim must be an even number >= 2; got {dim}")
    probe = RopeProbe(caller, dim)
    positions = np.arange(GRID)
    M = probe.matrices(positions)                                         # (GRID, dim, dim)
    report = CheckReport(impl, "rope", caller.mode or "numpy")
    props, summary = report.properties, report.summary
    props.append(Property("shape", PASS, f"x (..., seq, {dim}) -> same shape (x given with "
                          f"{probe.rank} axes)"))
    if not np.all(np.isfinite(M)):
        s = int(np.argwhere(~np.isfinite(M))[0][0])
        props.append(Property("finite", FAIL, "returned NaN or infinity",
                              f"basis vectors at position {positions[s]}"))
        return report
    props.append(check_linear(probe, M, positions))
    props.append(check_norm(M, positions))
    props.append(check_shift(M, positions))
    big = 1000
    try:
        Mbig = probe.matrices(np.array([big]))
    except PosencError:
        Mbig, big = M[-1:], GRID - 1
    props.append(check_pairing(M, positions, Mbig, summary))
    props.append(check_frequencies(M, Mbig, big, dim, summary))
    props.append(check_drift(probe, dim, summary))
    return report


def check_impl(impl: str, kind: Optional[str] = None, dim: int = 64) -> CheckReport:
    """Load ``impl`` and check it as a ``kind`` ("rope" | "bias" | None to detect)."""
    _check_kind(kind)
    return check_callable(load_callable(impl), kind, dim=dim, name=impl)


def _check_kind(kind: Optional[str]) -> None:
    if kind is not None and kind not in KINDS:
        raise PosencError(f"--kind must be one of {', '.join(KINDS)}; got {kind!r}")


def check_callable(fn, kind: Optional[str] = None, *, dim: int = 64,
                   name: Optional[str] = None) -> CheckReport:
    """Check a Python callable as a ``kind`` ("rope" | "bias" | None to detect).

    ``name`` labels the report and the error messages (default: the callable's qualified name).
    """
    from .bias import check_bias

    _check_kind(kind)
    if not callable(fn):
        raise PosencError(f"check needs a callable; got {type(fn).__name__}")
    impl = name or getattr(fn, "__qualname__", None) or repr(fn)
    caller = Caller(fn, impl)
    if kind == "bias":
        return check_bias(caller, impl)
    if kind == "rope":
        return check_rope(caller, impl, dim)
    is_bias, why_not_bias = _looks_like_bias(caller)
    if is_bias:
        return check_bias(caller, impl)
    try:
        return check_rope(caller, impl, dim)
    except PosencError as exc:
        raise PosencError(f"{exc} (called as a rotary function f(x, positions); as a bias "
                          f"function g(n_heads, n): {why_not_bias.removeprefix(impl + ' ')})"
                          ) from None


__all__ = ["check_impl", "check_callable", "CheckReport", "Property", "KINDS", "FAIL", "PASS"]
