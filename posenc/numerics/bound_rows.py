"""The typed rows of ``posenc bound``, and their JSON form (written in one place).

``BoundRow``     one spectral quantity of one matrix at one n, beside one bound on it; its
                 ``measure`` says what kind of quantity it is (see :data:`MEASURES`).
``GrowthRow``    norms and contraction/expansion ratios at one n, with the content's scale, the
                 additive ratio at other content scales, and RoPE's per-plane logit ratio.
``BoundReport``  the whole report (with ``scaling`` for a scaled RoPE: the unscaled RoPE beside
                 it, :mod:`.scaling_rows`): ``to_dict()`` is exactly what ``posenc bound --json`` prints
                 (through ``to_json()``); ``measure`` is typed data and not printed (the
                 ``quantity`` text already shows it).

The numeric layer (:mod:`.summary`) makes them; ``posenc.bound`` returns them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Optional

from ..errors import PosencError

#: What a row measures: the extreme eigenvalues, the spectral norm, the condition number and a
#: rank bound of a positional matrix (or the eigenvalues of a coupled logit L), and the ratio
#: ||L||_2 / ||A||_2 of a coupled logit to its content.
MEASURES = ("lam_max", "lam_min", "norm", "cond", "rank", "norm_ratio")


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
    measure: str                # one of MEASURES

    def __post_init__(self) -> None:
        if self.measure not in MEASURES:
            raise PosencError(f"a bound row's measure must be one of {', '.join(MEASURES)}; "
                              f"got {self.measure!r}")

    def to_dict(self) -> dict[str, Any]:
        """The row as ``posenc bound --json`` prints it."""
        out = asdict(self)
        del out["measure"]
        return out


@dataclass(frozen=True)
class GrowthRow:
    """Norms and contraction/expansion ratios at one n (the 'growth with n' table)."""

    n: int
    norm: Optional[float]
    symbol_sup: Optional[float] = None
    ratio_additive: Optional[float] = None
    ratio_multiplicative: Optional[float] = None
    ratio_hybrid: Optional[float] = None
    #: ||A_n||_2: the scale of the content the ratios above were measured at.
    content_norm: Optional[float] = None
    #: ||cA + B||_2 / ||cA||_2 for each content scale c (keys f"{c:g}"; "1" is ratio_additive).
    ratio_additive_scaled: Optional[dict[str, float]] = None
    #: ||B||_2 / ||A||_2: the content scale c at which ||cA|| = ||B|| ...
    balance_scale: Optional[float] = None
    #: ... and the additive ratio there (content and bias equal in norm).
    ratio_additive_balanced: Optional[float] = None
    #: RoPE's own logit, each rotary plane with its own content, against NoPE's from the same
    #: content: ||L_RoPE||_2 / ||L_NoPE||_2 over content seeds (mean, min, max, seeds, ratios;
    #: :mod:`.per_plane`).  ratio_multiplicative is the plane-averaged K on one shared A.
    ratio_per_plane: Optional[dict[str, Any]] = None

    def to_dict(self) -> dict[str, Any]:
        """The row as printed: the ratios a spec has no coupling for are left out."""
        return {k: v for k, v in asdict(self).items()
                if v is not None or k in ("n", "norm", "symbol_sup")}


@dataclass(frozen=True)
class BoundReport:
    spec: str
    kernel: dict[str, Any]      # the positional matrix: kind, coupling, toeplitz, source, notes
    content: str                # which content matrix A the couplings used
    rows: tuple[BoundRow, ...]
    growth: tuple[GrowthRow, ...]
    #: a scaled RoPE beside the unscaled one (:class:`.scaling_rows.ScalingReport`); None else
    scaling: Any = None
    content_scales: tuple[float, ...] = ()     # the c of GrowthRow.ratio_additive_scaled
    per_plane_content: Optional[str] = None    # the content of GrowthRow.ratio_per_plane

    def to_dict(self) -> dict[str, Any]:
        out = {"spec": self.spec, "kernel": self.kernel, "content": self.content,
               "rows": [r.to_dict() for r in self.rows],
               "growth": [g.to_dict() for g in self.growth]}
        if self.scaling is not None:          # only for a scaled RoPE: other reports unchanged
            out["scaling"] = self.scaling.to_dict()
        if self.content_scales:
            out["content_scales"] = list(self.content_scales)
        if self.per_plane_content is not None:
            out["per_plane_content"] = self.per_plane_content
        return out

    def to_json(self, indent: int | None = 1) -> str:
        """Strict JSON (non-finite numbers as "inf"/"-inf"/"nan"): what ``posenc bound --json``
        prints.  :meth:`to_dict` keeps them as floats."""
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

    def rows_of(self, measure: str) -> tuple[BoundRow, ...]:
        """The rows that measure ``measure`` (one of :data:`MEASURES`)."""
        if measure not in MEASURES:
            raise PosencError(f"measure must be one of {', '.join(MEASURES)}; got {measure!r}")
        return tuple(r for r in self.rows if r.measure == measure)
