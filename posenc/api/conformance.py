"""``posenc.check``: conformance of a RoPE or attention-bias implementation to the conventions."""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..checker.report import ConformanceReport
from ..errors import PosencError
from ..checker import check_callable, check_target
from ..checker.isolation import DEFAULT_TIMEOUT, check_timeout


def check(fn: Callable[..., Any] | str, kind: Optional[str] = None, *, head_dim: Optional[int] = None,
          expect: str | dict | None = None, name: Optional[str] = None,
          timeout: Optional[float] = None,
          max_positions: Optional[int] = None, dim: Optional[int] = None) -> ConformanceReport:
    """Check ``fn`` as a rotary function ``f(x, positions)`` or a bias ``g(n_heads, n)``.

    ``fn``: a Python callable (checked in this process), or an ``IMPL`` string
    (``module:function``, ``module.function`` or ``path/to/file.py:function``) as ``posenc
    check`` takes, loaded and checked in a child process that may run ``timeout`` seconds
    (default 60; processes the code starts end with the check).  A callable runs in this
    process, where nothing can stop it: ``timeout`` with a callable is refused (pass its
    ``module:function`` to have it time-limited).
    ``kind``: "rope", "bias", "xpos" (``f(q, k, positions) -> (q, k)``) or None (detect rope
    or bias).  ``head_dim``: the head dimension given to a rotary function (default 64; ``dim``:
    its former name, still taken; not both).  ``expect``: the conventions meant, e.g.
    ``"base=500000,pairing=half"`` or ``{"slopes": "press", "direction": "causal"}``, checked
    against posenc's reference.
    ``max_positions``: probe a rotary function only below this position (its table size;
    detected when not given).
    The report's ``ok`` is False when a property fails; bad input (not callable, raising on the
    probe inputs, the wrong output shape, exiting, crashing, past the time limit) raises
    PosencError.
    """
    if dim is not None and head_dim is not None:
        raise PosencError(f"posenc.check: head_dim={head_dim} and dim={dim} name the same size "
                          f"(dim is head_dim's former name): give head_dim alone")
    head_dim = head_dim if head_dim is not None else dim if dim is not None else 64
    if timeout is not None:
        check_timeout(timeout)
    if isinstance(fn, str):
        return check_target(fn, kind, dim=head_dim, expect=expect,
                            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
                            max_positions=max_positions)
    if timeout is not None:  # it was ignored: a sleeping callable never returned
        raise PosencError("timeout applies to code checked in a child process (an IMPL string "
                          "such as 'module:function'); a callable runs in this process, where "
                          "it cannot be stopped")
    return check_callable(fn, kind, dim=head_dim, expect=expect, name=name,
                          max_positions=max_positions)


__all__ = ["check", "ConformanceReport"]
