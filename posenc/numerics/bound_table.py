"""The rows of ``posenc bound``: exact spectral values beside the bounds that explain them.

``bound_report(spec, ns, *, head=0, n_heads=8, head_dim=64, d_model=None, values=None,
seed=0, content=None, reference="auto", method="auto") -> dict``

``content``: what :func:`.content.as_content` takes -- None (a seeded rank-8 Gram, seed 0),
a ``SeededContent`` / ``MatrixContent``, ``("seeded", rank, seed)``, ``"rank=R,seed=S"`` or
an (N, N) array whose leading n x n sections are used.  ``reference``: the PE
that supplies the coupling a spec lacks, so that multiplicative and additive
coupling are always shown side by side ("auto": ``rope`` for additive specs,
``alibi`` for multiplicative ones; ``None`` for none).  Returns
``{"kernel": metadata, "rows": [...], "growth": [...]}``; a row is
``{n, matrix, quantity, exact, bound, bound_name, method, seconds}``.

``bound_table(...)`` (same arguments) -> :class:`~.bound_rows.BoundReport`: the same report
as typed rows (each :class:`~.bound_rows.BoundRow` says what it measures);
``bound_report`` is its ``to_dict()``.  For a scaled RoPE the report also holds the scaled and
the unscaled kernel's spectrum and long-range decay at each n (:mod:`.scaling_rows`).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

import numpy as np

from ..encodings import PESpec, as_spec, parse_spec, ALiBi, Custom, Hybrid
from ..errors import PosencError
from ..limits import Lengths, check_int, check_lengths, check_memory
from . import bounds as bd
from .bound_rows import BoundReport, BoundRow, GrowthRow
from .content import SeededContent, as_content
from .contraction import couple, scaled_ratios
from .kernels import Kernel, _kernel, check_sizes
from .operators import ToeplitzOperator
from .scaling_rows import scaling_table
from .per_plane import PLANE_SEEDS, per_plane_ratios
from .spectra import AUTO_DENSE, spectrum


#: Content scales c at which the additive ratio ||cA + B|| / ||cA|| is shown (c = 1: the content
#: as stated).  The multiplicative ratio is the same at every c, so it is shown once.
CONTENT_SCALES = (1.0, 100.0, 10_000.0)
#: At most this many content scales, and per-plane content seeds, per report.
MAX_SCALES, MAX_PLANE_SEEDS = 12, 1000


def check_scales(scales: Any) -> tuple[float, ...]:
    """Content scales as a tuple of distinct positive finite floats, in order; one PosencError
    line otherwise (``None``: the default :data:`CONTENT_SCALES`)."""
    if scales is None:
        return CONTENT_SCALES
    if isinstance(scales, (str, bytes)) or not hasattr(scales, "__iter__"):
        scales = [scales]
    out = []
    for x in scales:
        try:
            v = float(x)
        except (TypeError, ValueError):
            raise PosencError(f"content scales must be positive numbers; got {x!r}"[:200]) from None
        if isinstance(x, bool) or not np.isfinite(v) or v <= 0:
            raise PosencError(f"content scales must be positive finite numbers; got {x!r}"[:200])
        out.append(v)
    if not out or len(out) > MAX_SCALES:
        raise PosencError(f"give 1 to {MAX_SCALES} content scales; got {len(out)}")
    return tuple(sorted(set(out)))


#: Relative slack when checking exact <= bound: Lanczos / LAPACK values carry rounding of
#: order n * eps * ||M|| (< 1e-10 relative for n <= 1e5 in float64); 1e-8 leaves margin.
HOLDS_RTOL = 1e-8


#: Lengths from which :func:`bound_table` reports its stages to ``progress``: half a minute of
#: work per length and more (``bound rope``: 28 s at n = 100,000, 48 s at 200,000, ~10 min at
#: 10^6 on a loaded 2-core machine; docs/reliability.md).
PROGRESS_N = 100_000


class _Stages:
    """``progress`` lines for one length n >= :data:`PROGRESS_N`: the stage that starts and the
    seconds since the length began (nothing below it, or without ``progress``)."""

    def __init__(self, progress: Optional[Callable[[str], None]], n: int) -> None:
        self.say = progress if progress is not None and n >= PROGRESS_N else None
        self.n, self.t0 = n, time.perf_counter()

    def __call__(self, what: str) -> None:
        if self.say is not None:
            self.say(f"bound n={self.n:,} [{time.perf_counter() - self.t0:.0f} s]: {what}")


#: How each measure is written in a row's ``quantity`` (X: the matrix's symbol).
_QUANTITY = {"lam_max": "lam_max({})", "lam_min": "lam_min({})", "norm": "||{}||_2",
             "cond": "cond({})", "rank": "rank({})", "norm_ratio": "||{}||_2 / ||A||_2"}


def _row(n: int, matrix: str, measure: str, of: str, exact: Any, bound: Any, bound_name: str,
         method: str, seconds: float) -> BoundRow:
    """``measure`` (see ``bound_rows.MEASURES``) of the matrix written ``of``."""
    def f(v: Any) -> float | None:
        return None if v is None else float(v)
    side = "lower" if "(lower)" in bound_name else ("upper" if bound is not None else None)
    holds = None
    if exact is not None and bound is not None and np.isfinite(exact):
        slack = HOLDS_RTOL * max(abs(exact), abs(bound), 1.0)
        holds = bool(exact <= bound + slack) if side == "upper" else bool(exact >= bound - slack)
    return BoundRow(n=n, matrix=matrix, quantity=_QUANTITY[measure].format(of), exact=f(exact),
                    bound=f(bound), side=side, bound_name=bound_name, holds=holds, method=method,
                    seconds=seconds, measure=measure)


def _matrix_rows(n: int, label: str, kern: Kernel, method: str) -> tuple[list[BoundRow], dict]:
    """Spectrum of one positional matrix with Szego, Gershgorin (and plane) bounds."""
    sym = {"bias": "B", "position-gram": "G", "rotary": "K", "decayed-rotary": "K",
           "none": "B"}[kern.kind]
    sp = spectrum(kern.operator, method=method, psd=kern.psd, rank_bound=kern.rank_bound)
    m, s = sp.method, sp.seconds
    rows: list[BoundRow] = []
    sz = bd.szego(kern.operator) if isinstance(kern.operator, ToeplitzOperator) else None
    gg = bd.gershgorin(kern.operator) if kern.toeplitz or n <= 2048 else None
    if sp.hermitian:
        rows.append(_row(n, label, "lam_max", sym, sp.lambda_max, sz and sz["upper"],
                         "Szego: max f_n", m, s))
        rows.append(_row(n, label, "lam_max", sym, sp.lambda_max, gg and gg["upper"],
                         "Gershgorin", m, s))
        if kern.kind == "rotary":
            rn = bd.rotary_nonzero(kern)
            rows.append(_row(n, label, "lam_max", sym, sp.lambda_max, rn["lambda_max_lower"],
                             "planes: max_m w_m lam(C_m) (lower)", m, s))
            rows.append(_row(n, label, "lam_max", sym, sp.lambda_max,
                             rn["lambda_max_lower_frobenius"], "||K||_F^2 / tr K (lower)", m, s))
            rows.append(_row(n, label, "lam_max", sym, sp.lambda_max, rn["lambda_max_upper"],
                             "planes: sum_m w_m lam(C_m)", m, s))
            rows.append(_row(n, label, "rank", sym, None, rn["rank_bound"],
                             "<= 2 rotating planes + 1", "structure", 0.0))
        rows.append(_row(n, label, "lam_min", sym, sp.lambda_min, sz and sz["lower"],
                         "Szego: min f_n (lower)", m, s))
        rows.append(_row(n, label, "lam_min", sym, sp.lambda_min, gg and gg["lower"],
                         "Gershgorin (lower)", m, s))
    rows.append(_row(n, label, "norm", sym, sp.sigma_max, sz and sz["norm_upper"],
                     "Szego: max |f_n|", m, s))
    rows.append(_row(n, label, "norm", sym, sp.sigma_max, gg and gg["norm_upper"],
                     "Gershgorin", m, s))
    rows.append(_row(n, label, "cond", sym, sp.cond, None, "", m, s))
    growth = {"norm": sp.sigma_max, "symbol_sup": sz and sz["norm_upper"] - sz["correction"]}
    return [r for r in rows if r.bound is not None or r.bound_name == ""], growth


def _coupled_rows(n: int, label: str, c: Any) -> list[BoundRow]:
    op = "A o K" if c.coupling == "multiplicative" else ("A o K + B" if c.coupling == "hybrid"
                                                         else "A + B")
    rows = [_row(n, label, "norm_ratio", op, c.ratio, c.bound_norm / c.norm_a,
                 c.norm_bound_name, c.method, c.seconds)]
    if c.lam_l is not None and c.bound_interval is not None:
        rows.append(_row(n, label, "lam_min", op, c.lam_l[0], c.bound_interval[0],
                         f"{c.bound_name} (lower)", c.method, c.seconds))
        rows.append(_row(n, label, "lam_max", op, c.lam_l[1], c.bound_interval[1],
                         c.bound_name, c.method, c.seconds))
    return rows


def bound_report(spec: PESpec | str, ns: list[int], **kwargs: Any) -> dict[str, Any]:
    """:func:`bound_table` as the plain dict that ``posenc bound --json`` prints."""
    return bound_table(spec, ns, **kwargs).to_dict()


def bound_table(spec: PESpec | str, ns: Lengths | list[int], *, head: int = 0, n_heads: int = 8,
                head_dim: int = 64, d_model: int | None = None, values: Any = None,
                seed: int = 0, content: Any = None, reference: str | None = "auto",
                method: str = "auto",
                progress: Optional[Callable[[str], None]] = None,
                scales: Any = CONTENT_SCALES, plane_seeds: int = PLANE_SEEDS) -> BoundReport:
    """The report of ``posenc bound`` (see the module doc); ``progress`` receives a line per
    stage of each length n >= :data:`PROGRESS_N` (the command prints them on stderr).  ``ns``:
    :class:`~posenc.limits.Lengths` (checked by ``posenc.bound``), or lengths to check here
    (:func:`~posenc.limits.check_lengths`)."""
    spec = as_spec(spec)
    ns = ns if isinstance(ns, Lengths) else check_lengths(ns, method)
    check_sizes(n_heads, head_dim, d_model)
    seed = check_int("seed", seed, 2**63 - 1, minimum=0)
    scales = check_scales(scales)
    plane_seeds = check_int("plane seeds", plane_seeds, MAX_PLANE_SEEDS, minimum=0)
    plane_content: str | None = None
    kw = dict(head=head, n_heads=n_heads, head_dim=head_dim, d_model=d_model, seed=seed)
    n_max = max(ns)
    content = as_content(content)
    rank = content.rank if isinstance(content, SeededContent) else 0
    check_memory(memory_estimate(spec, n_max, rank=rank, width=d_model or head_dim * n_heads,
                                 method=method), f"bound {spec.name} at n={n_max}")
    section = content.sections(n_max)
    rows: list[BoundRow] = []
    growth: list[GrowthRow] = []
    meta: dict[str, Any] = {}
    references: dict[str, PESpec] = {}  # the reference spec, parsed once for every length
    for n in ns:
        stage = _Stages(progress, n)
        stage("the kernel")
        kern = _kernel(spec, n, values=values, **kw)
        meta = kern.metadata()
        parts = kern.parts if kern.kind == "hybrid" else {kern.coupling: kern}
        g: dict[str, Any] = {"n": n}
        for label, part in parts.items():
            name = f"{spec.name} {label}" if kern.kind == "hybrid" else spec.name
            stage(f"spectrum and bounds of {name}")
            r, gr = _matrix_rows(n, name, part, method)
            rows += r
            g.setdefault("norm", gr["norm"])
            g.setdefault("symbol_sup", gr["symbol_sup"])
        a = section(n)
        couplings = _couplings(spec, kern, n, reference, kw, references)
        for label, part, mode in couplings:
            stage(f"{label} coupled with the content ({mode})")
            c = couple(a, part, mode, method)
            rows += _coupled_rows(n, label, c)
            key = {"multiplicative": "ratio_multiplicative", "additive": "ratio_additive",
                   "none": "ratio_additive", "hybrid": "ratio_hybrid"}[mode]
            g[key] = c.ratio
            g["content_norm"] = c.norm_a
            if mode in ("additive", "none"):
                stage(f"{label}: the additive ratio at content scales {_scales_text(scales)}")
                g.update(_scale_dependence(a, part, c, scales, method))
            elif part.kind == "rotary" and plane_seeds:
                stage(f"{label}: its own per-plane logit, {plane_seeds} content seeds")
                pp = per_plane_ratios(part, plane_seeds)
                g["ratio_per_plane"] = {k: v for k, v in pp.to_dict().items() if k != "content"}
                plane_content = pp.content()
        growth.append(GrowthRow(**g))
        stage("done")
    scaling = scaling_table(spec, list(ns), method, kw)   # a scaled RoPE beside the unscaled one
    return BoundReport(spec.to_string(), meta, content.label(), tuple(rows), tuple(growth), scaling,
                       content_scales=tuple(float(c) for c in scales), per_plane_content=plane_content)


def _scales_text(scales: tuple[float, ...]) -> str:
    return ", ".join(f"{c:g}" for c in scales)


def _scale_dependence(a: Any, bias: Kernel, c: Any, scales: tuple[float, ...], method: str
                      ) -> dict[str, Any]:
    """The additive ratio ||cA + B|| / ||cA|| at each content scale c (keys ``f"{c:g}"``), the
    scale ||B|| / ||A|| at which the content matches the bias in norm, and the ratio there."""
    others = [x for x in scales if x != 1.0]
    at = dict(zip(others, scaled_ratios(a, bias, others, "additive", method)))
    out: dict[str, Any] = {"ratio_additive_scaled": {f"{x:g}": (c.ratio if x == 1.0 else at[x])
                                                     for x in scales}}
    if c.norm_b is not None and c.norm_b > 0 and c.norm_a > 0:
        balance = c.norm_b / c.norm_a
        out["balance_scale"] = balance
        out["ratio_additive_balanced"] = scaled_ratios(a, bias, [balance], "additive", method)[0]
    return out


#: Peak bytes per position of a matrix-free ``bound`` run, measured with /usr/bin/time -v at
#: n = 10^6 (docs/reliability-inputs.md): arrays kept throughout (content factor, kernel
#: columns) ...
PERSISTENT_BYTES = 100
#: ... plus the larger of two phases that never overlap: Lanczos (32 vectors) on a Hadamard
#: operator A o K, whose matvec FFTs one (2n, rank) block (~ 300 + 64 rank bytes), and the
#: Szego grid (:func:`~.bounds.szego_grid`: the power of two at or above 16 n real points for a
#: Hermitian kernel, 64 n complex ones otherwise).  SZEGO_BYTES is per position at n = 10^6
#: (measured 3.36 GB for relative_bias (t5)); the grid's size is a power of two, so per position
#: it grows by up to 2x between powers (at n = 3 x 10^6 the grid is 1.34x larger per position:
#: 12.47 GiB measured, where a per-position estimate said 9.97) -- the estimate scales with
#: the grid actually used.
LANCZOS_BYTES, RANK_BYTES = 300, 64
SZEGO_BYTES = {True: 256, False: 3400}
#: Process baseline (interpreter, numpy, scipy) in bytes.
BASE_BYTES = 200 * 2**20


def _hermitian_kernel(spec: PESpec) -> bool:
    """Whether the spec's Toeplitz matrices are Hermitian by construction (else assume not)."""
    if isinstance(spec, Hybrid):
        return _hermitian_kernel(spec.additive)
    if isinstance(spec, ALiBi):
        return spec.direction == "symmetric"
    if isinstance(spec, Custom):
        return spec.frequencies is not None
    return spec.name not in ("relative_bias",)


def memory_estimate(spec: PESpec, n: int, *, rank: int = 8, width: int = 512,
                    method: str = "auto") -> float:
    """Estimated peak bytes of :func:`bound_report` at length ``n`` (checked before allocating):
    the per-position costs above, a learned absolute table (8 bytes per width column), and the
    n x n arrays of the dense method (~ 6 of them, complex for rotary planes)."""
    learned = spec.name == "learned_absolute" or getattr(spec, "absolute", "") == "learned" or \
        getattr(getattr(spec, "additive", None), "name", "") == "learned_absolute"
    herm = _hermitian_kernel(spec)
    # the Szego phase per position at n, from its calibration at 10^6 scaled by the grid's size
    szego = SZEGO_BYTES[herm] * (bd.szego_grid(n, herm) / n) / (bd.szego_grid(10**6, herm) / 10**6)
    per_n = PERSISTENT_BYTES + (8 * width if learned else 0) + \
        max(LANCZOS_BYTES + RANK_BYTES * rank, szego)
    dense = method == "dense" or (method == "auto" and n <= AUTO_DENSE)
    return BASE_BYTES + float(n) * per_n + (6 * 16 * float(n) ** 2 if dense else 0.0)


def _couplings(spec: PESpec, kern: Kernel, n: int, reference: str | None, kw: dict,
               references: dict[str, PESpec]) -> list[tuple[str, Kernel, str]]:
    """(label, kernel, coupling) triples: the spec's own coupling(s), plus a reference (its spec
    parsed into ``references`` on first use)."""
    own = f"{spec.name}"
    if kern.kind == "hybrid":
        return [(f"{own} multiplicative part", kern.parts["multiplicative"], "multiplicative"),
                (f"{own} additive part", kern.parts["additive"], "additive"),
                (own, kern, "hybrid")]
    out = [(own, kern, "additive" if kern.coupling == "none" else kern.coupling)]
    if reference is None:
        return out
    if reference == "auto":
        reference = "alibi" if kern.coupling == "multiplicative" else "rope"
    if reference not in references:
        references[reference] = parse_spec(reference)
    ref = _kernel(references[reference], n, **kw)
    if ref.kind == "hybrid" or ref.coupling == out[0][2] or \
            (ref.coupling == "none" and out[0][2] == "additive"):
        raise PosencError(f"reference {reference!r} must couple differently from {spec.name} "
                          f"({out[0][2]})")
    mode = "additive" if ref.coupling == "none" else ref.coupling
    out.append((f"{reference} (reference)", ref, mode))
    return out
