"""``posenc.bound``: spectra of a PE's positional matrix beside their bounds, as typed rows.

Wraps :func:`posenc.numerics.bound_table.bound_table`, which makes the typed rows
(:mod:`posenc.numerics.bound_rows`: ``BoundReport``, ``BoundRow``, ``GrowthRow``, named here
too, imported on first use so that importing this module loads no numpy);
:meth:`BoundReport.to_dict` gives back exactly what ``posenc bound --json`` prints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ..errors import PosencError
from ..limits import check_int, check_lengths
from .. import arguments as arg

if TYPE_CHECKING:  # the names of _TYPES as type checkers see them ("X as X": re-exported)
    from ..numerics.bound_rows import BoundReport as BoundReport, BoundRow as BoundRow
    from ..numerics.bound_rows import GrowthRow as GrowthRow, strict_json as strict_json

_TYPES = ("BoundReport", "BoundRow", "GrowthRow", "strict_json")


if not TYPE_CHECKING:  # hidden from type checkers, which would take every name for Any
    def __getattr__(name: str) -> Any:
        if name in _TYPES:
            return getattr(importlib.import_module("posenc.numerics.bound_rows"), name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_values(values: Any, what: str = "values") -> Any:
    """Learned values as a finite float array (None: a seeded draw); ``what`` names them in
    the error (the CLI says which file)."""
    if values is None:
        return None
    import numpy as np
    try:
        v = np.asarray(values, dtype=np.float64)
    except (ValueError, TypeError):
        raise PosencError(f"{what} must be real numbers; got {type(values).__name__}") from None
    if not np.all(np.isfinite(v)):
        raise PosencError(f"{what} must be finite numbers (no NaN or infinity)")
    return v


def bound(spec: Any, n: int | Sequence[int], *, head: int = 0, n_heads: int = 8,
          head_dim: int = 64, d_model: Optional[int] = None, values: Any = None, seed: int = 0,
          content: Any = None, reference: Optional[str] = "auto",
          method: str = "auto", progress: Optional[Callable[[str], None]] = None,
          scales: Any = None, plane_seeds: int = 5) -> BoundReport:
    """Spectra of ``spec``'s positional matrix at each sequence length ``n``, with bounds.

    ``spec``: a spec string (``"alibi"``, ``"rope:base=500000"``) or a :class:`~posenc.PESpec`.
    ``content``: None (a seeded rank-8 Gram), a :class:`~posenc.numerics.content.SeededContent`
    or :class:`~posenc.numerics.content.MatrixContent`, ``("seeded", rank, seed)``,
    ``"rank=R,seed=S"`` / ``"FILE.npy"`` (as on the command line) or a square array A.
    ``values``: learned values (T5/table bias, learned absolute table), default a seeded draw.
    ``reference``: the PE supplying the other coupling ("auto", a spec string, or None or
    "none" for no reference, as on the command line).
    ``method``: "auto" (dense LAPACK up to n = 512, Lanczos above), "dense" or "lanczos".
    ``progress``: a callable that receives one line per stage of each length n >= 100,000
    (minutes of work at n = 10^6; ``posenc bound`` prints them on stderr), or None.
    ``scales``: content scales c at which the additive ratio ||cA + B|| / ||cA|| is also shown
    (default 1, 100, 10000; the multiplicative ratio is the same at every c).
    ``plane_seeds``: content seeds of the per-plane comparison ||L_RoPE|| / ||L_NoPE|| (RoPE's
    own logit, each rotary plane with its own content; 0 leaves it out).
    """
    from ..numerics.content import as_content
    from ..numerics.bound_table import bound_table

    arg.spec(spec)
    ns = check_lengths(n, method)  # the one check of the lengths; bound_table takes them typed
    head = check_int("head", head, 1 << 20, minimum=0)
    values = check_values(values)
    if method not in ("auto", "dense", "lanczos"):
        raise PosencError(f"method must be auto, dense or lanczos; got {method!r}")
    content = as_content(content)
    if progress is not None and not callable(progress):
        raise PosencError(f"progress must be a callable taking one string, or None; got {progress!r}")
    if isinstance(reference, str) and reference == "none":
        reference = None
    return bound_table(
        spec, ns, head=head, n_heads=n_heads, head_dim=head_dim, d_model=d_model, values=values,
        seed=seed, content=content, reference=reference, method=method, progress=progress,
        scales=scales, plane_seeds=plane_seeds)
