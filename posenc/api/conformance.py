"""``posenc.check``: conformance of a RoPE or attention-bias implementation to the conventions."""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..proofs.conformance.report import CheckReport as ConformanceReport


def check(fn: Callable[..., Any] | str, kind: Optional[str] = None, *, dim: int = 64,
          name: Optional[str] = None) -> ConformanceReport:
    """Check ``fn`` as a rotary function ``f(x, positions)`` or a bias ``g(n_heads, n)``.

    ``fn``: a Python callable, or an ``IMPL`` string (``module:function``,
    ``module.function`` or ``path/to/file.py:function``) as ``posenc check`` takes.
    ``kind``: "rope", "bias" or None (detect).  ``dim``: the head dimension given to a
    rotary function.  The report's ``ok`` is False when a property fails; bad input (not
    callable, raising on the probe inputs, the wrong output shape) raises PosencError.
    """
    from ..proofs.conformance import check_callable, check_impl

    if isinstance(fn, str):
        return check_impl(fn, kind=kind, dim=dim)
    return check_callable(fn, kind, dim=dim, name=name)


__all__ = ["check", "ConformanceReport"]
