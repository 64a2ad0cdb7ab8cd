"""``posenc.bound``: spectra of a PE's positional matrix beside their bounds, as typed rows.

Wraps :func:`posenc.numerics.summary.bound_report`; :meth:`BoundReport.to_dict` gives back
exactly what ``posenc bound --json`` prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Optional, Sequence

from ..errors import PosencError


def strict_json(obj: Any) -> Any:
    """For strict JSON: a non-finite float (cond of a singular matrix) becomes "inf"/"-inf"/"nan"."""
    if isinstance(obj, float) and obj != obj:
        return "nan"
    if isinstance(obj, float) and obj in (float("inf"), float("-inf")):
        return "inf" if obj > 0 else "-inf"
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    return obj


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


@dataclass(frozen=True)
class BoundRow:
    """One spectral quantity of one matrix at one n, beside one bound on it."""

    n: int
    matrix: str                 # the PE (and part) the row is about
    quantity: str               # e.g. "lam_max(B)", "||A o K||_2 / ||A||_2"
    exact: Optional[float]      # the computed value (None for structural rows such as a rank bound)
    bound: Optional[float]
    side: Optional[str]         # "upper" | "lower" | None (no bound)
    bound_name: str
    holds: Optional[bool]       # exact within the bound (relative slack 1e-8); None if not comparable
    method: str                 # dense | lanczos | structure | ...
    seconds: float


@dataclass(frozen=True)
class GrowthRow:
    """Norms and contraction/expansion ratios at one n (the 'growth with n' table)."""

    n: int
    norm: Optional[float]
    symbol_sup: Optional[float] = None
    ratio_additive: Optional[float] = None
    ratio_multiplicative: Optional[float] = None
    ratio_hybrid: Optional[float] = None


@dataclass(frozen=True)
class BoundReport:
    spec: str
    kernel: dict[str, Any]      # the positional matrix: kind, coupling, toeplitz, source, notes
    content: str                # which content matrix A the couplings used
    rows: tuple[BoundRow, ...]
    growth: tuple[GrowthRow, ...]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BoundReport":
        names = {f.name for f in fields(GrowthRow)}
        return cls(data["spec"], dict(data["kernel"]), data["content"],
                   tuple(BoundRow(**r) for r in data["rows"]),
                   tuple(GrowthRow(**{k: v for k, v in g.items() if k in names})
                         for g in data["growth"]))

    def to_dict(self) -> dict[str, Any]:
        growth = [{k: v for k, v in asdict(g).items()
                   if v is not None or k in ("n", "norm", "symbol_sup")} for g in self.growth]
        return {"spec": self.spec, "kernel": self.kernel, "content": self.content,
                "rows": [asdict(r) for r in self.rows], "growth": growth}

    def to_json(self, indent: int | None = 1) -> str:
        """Strict JSON (non-finite numbers as "inf"/"-inf"/"nan"): what ``posenc bound --json``
        prints.  :meth:`to_dict` keeps them as floats."""
        import json
        return json.dumps(strict_json(self.to_dict()), indent=indent, allow_nan=False)

    def to_frame(self, table: str = "rows"):
        """The ``rows`` (or ``growth``) table as a pandas DataFrame; pandas is optional."""
        if table not in ("rows", "growth"):
            raise PosencError(f"table must be 'rows' or 'growth'; got {table!r}")
        try:
            import pandas as pd
        except ImportError:
            raise PosencError("BoundReport.to_frame needs pandas (pip install pandas); "
                              "to_dict() needs nothing") from None
        return pd.DataFrame([asdict(r) for r in getattr(self, table)])

    @property
    def violations(self) -> tuple[BoundRow, ...]:
        """Rows whose exact value breaks its bound (empty when every bound holds)."""
        return tuple(r for r in self.rows if r.holds is False)


def bound(spec: Any, n: int | Sequence[int], *, head: int = 0, n_heads: int = 8,
          head_dim: int = 64, d_model: Optional[int] = None, values: Any = None, seed: int = 0,
          content: Any = None, reference: Optional[str] = "auto",
          method: str = "auto") -> BoundReport:
    """Spectra of ``spec``'s positional matrix at each sequence length ``n``, with bounds.

    ``spec``: a spec string (``"alibi"``, ``"rope:base=500000"``) or a :class:`~posenc.PESpec`.
    ``content``: None (a seeded rank-8 Gram), ``("seeded", rank, seed)`` or a square array A.
    ``values``: learned values (T5/table bias, learned absolute table), default a seeded draw.
    ``reference``: the PE supplying the other coupling ("auto", a spec string, or None).
    ``method``: "auto" (dense LAPACK up to n = 512, Lanczos above), "dense" or "lanczos".
    """
    from ..limits import check_int
    from ..numerics.summary import bound_report
    from . import arguments as arg

    arg.spec(spec)
    if isinstance(n, (str, bytes)) or not isinstance(n, Sequence) and not hasattr(n, "__index__"):
        raise PosencError(f"n must be a positive integer or a list of them; got {n!r}")
    ns = list(n) if isinstance(n, Sequence) else [n]
    for v in ns:
        if isinstance(v, bool) or not hasattr(v, "__index__") or int(v) < 1:
            raise PosencError(f"n must be positive integers (n >= 1); got {v!r}")
    ns = [int(v) for v in ns]
    head = check_int("head", head, 1 << 20, minimum=0)
    values = check_values(values)
    if method not in ("auto", "dense", "lanczos"):
        raise PosencError(f"method must be auto, dense or lanczos; got {method!r}")
    if method == "dense":
        from ..numerics.operators import DENSE_LIMIT
        if max(ns, default=0) > DENSE_LIMIT:
            raise PosencError(f"n={max(ns)} is too large for --method dense: an n x n float64 "
                              f"array needs {max(ns) ** 2 * 8 / 2 ** 30:.0f} GiB "
                              f"(limit n <= {DENSE_LIMIT})")
    return BoundReport.from_dict(bound_report(
        spec, ns, head=head, n_heads=n_heads, head_dim=head_dim, d_model=d_model, values=values,
        seed=seed, content=content, reference=reference, method=method))
