"""The positional matrix each catalogue PE puts into the attention logits.

``kernel(spec, n, *, head=0, n_heads=8, head_dim=64, d_model=None, values=None, seed=0)``
returns a :class:`Kernel`.  Which matrix that is depends on how the PE couples
(Gu et al., arXiv 2505.13027): for additive PEs the logit is L = A + B, for
multiplicative ones L = A o K (element-wise), A the content Gram.

================  ==================  =====================================================
kind              coupling            matrix
================  ==================  =====================================================
``none``          none                B = 0 (NoPE)
``bias``          additive            B_ij = t_{i-j}: ALiBi, T5 buckets, per-offset table,
                                      custom g(k) -- Toeplitz
``position-gram`` additive            P P^T, P the absolute PE table (the position-position
                                      logit term with W_q^T W_k = I): Toeplitz for
                                      sinusoidal, a low-rank non-Toeplitz Gram for learned
``rotary``        multiplicative      K(k) = w_0 + sum_m w_m cos(theta_m k): RoPE (w_m = 2/d,
                                      w_0 = (d - r)/d), MLA's decoupled RoPE path, custom
                                      frequencies (w_m = 1/F); per plane E_m = [e^{i theta_m
                                      (i-j)}] via ``.plane(m)``
``hybrid``        hybrid              ``.parts['additive']`` and ``.parts['multiplicative']``
================  ==================  =====================================================

Learned values (T5 / table biases, learned absolute tables) are taken from
``values`` (this head's, or all heads' with a leading head axis) and reported
``source='given'``, or drawn N(0, 1) from ``numpy.random.default_rng([seed,
head])`` and reported ``source='seeded draw'``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy.sparse.linalg import LinearOperator

from ..encodings import (ALiBi, Custom, KerpleLog, LearnedAbsolute, MLA, PESpec, RelativeBias,
                         RoPE, Sinusoidal, XPos, as_spec)
from ..errors import PosencError
from ..encodings.parts import Part, not_toeplitz, structure, unknown_part
from ..limits import MAX_HEADS, MAX_SEQ_LEN, MAX_WIDTH, check_int, check_length
from . import conventions as cv
from .operators import LowRankOperator, ToeplitzOperator

#: Numpy implementations of the kernel-expression functions (posenc.encodings.expression.FUNCTIONS).
def _float64(fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *args: fn(*[np.asarray(a, dtype=np.float64) for a in args])


#: The kernel functions on float64 arrays (an integer argument never stays a fixed-width int).
NUMPY_FUNCTIONS = {name: _float64(fn) for name, fn in {
    "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh, "sign": np.sign, "min": np.minimum, "max": np.maximum}.items()}


def evaluate_kernel(expr: Any, k: Any) -> np.ndarray:
    """g(k) of a kernel expression in float64 arithmetic (literals as floats)."""
    return np.asarray(expr.evaluate(k, NUMPY_FUNCTIONS, number=float), dtype=np.float64)

#: Largest n a kernel is built for (memory is O(n); this keeps a typo from exhausting it).
MAX_N = MAX_SEQ_LEN


@dataclass(eq=False)
class Kernel:
    """A PE's positional matrix for one head and length n, with its provenance."""

    spec: PESpec
    n: int
    kind: str
    operator: LinearOperator | None
    description: str
    source: str = "formula"
    seed: int | None = None
    head: int = 0
    n_heads: int = 1
    notes: tuple[str, ...] = ()
    frequencies: np.ndarray | None = None       # rotary: theta_m, (planes,)
    plane_weights: np.ndarray | None = None     # rotary: w_m, (planes,)
    constant_weight: float = 0.0                # rotary: w_0 (position-free dims)
    factor_fn: Any = None                       # position-gram: () -> P, (n, D)
    decays: np.ndarray | None = None            # decayed-rotary (xPos): lambda_m, (planes,)
    parts: dict[str, "Kernel"] = field(default_factory=dict)

    @property
    def coupling(self) -> str:
        return {"none": "none", "bias": "additive", "position-gram": "additive",
                "rotary": "multiplicative", "decayed-rotary": "multiplicative",
                "hybrid": "hybrid"}[self.kind]

    @property
    def toeplitz(self) -> bool:
        return isinstance(self.operator, ToeplitzOperator)

    @property
    def hermitian(self) -> bool:
        return self.operator is not None and bool(self.operator.hermitian)

    @property
    def psd(self) -> bool | None:
        """True when PSD by construction (Grams, cosine kernels, zero); None when unknown."""
        return True if self.kind in ("none", "position-gram", "rotary") else None

    @property
    def rank_bound(self) -> int | None:
        if self.kind == "none":
            return 0
        if self.kind == "rotary":
            nz = int(np.count_nonzero(self.frequencies))
            return min(self.n, 2 * nz + int(self.constant_weight > 0 or nz < self.frequencies.size))
        if self.kind == "position-gram":
            return min(self.n, self.width)
        return None

    @property
    def width(self) -> int:
        return int(self.factor().shape[1]) if self.kind == "position-gram" else 0

    def _need(self) -> LinearOperator:
        if self.operator is None:
            raise PosencError(f"{self.spec.name} is a hybrid: use .parts['additive'] and "
                              f".parts['multiplicative']")
        return self.operator

    def _need_toeplitz(self) -> ToeplitzOperator:
        op = self._need()
        if not isinstance(op, ToeplitzOperator):
            raise PosencError(f"{self.description} is not Toeplitz")
        return op

    @property
    def column(self) -> np.ndarray:
        return self._need_toeplitz().column

    @property
    def row(self) -> np.ndarray:
        return self._need_toeplitz().row

    def dense(self) -> np.ndarray:
        return self._need().dense()

    def matvec(self, v: np.ndarray) -> np.ndarray:
        return self._need().matvec(v)

    def symbol(self, grid: int | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        return self._need_toeplitz().symbol(grid)

    def plane(self, m: int) -> ToeplitzOperator:
        """E_m = [e^{i theta_m (i-j)}]: Hermitian Toeplitz, rank one, PSD, unit diagonal."""
        if self.kind != "rotary":
            raise PosencError(f"{self.spec.name}: per-plane kernels exist only for rotary PEs")
        theta = float(self.frequencies[m])
        return ToeplitzOperator(np.exp(1j * theta * np.arange(self.n)))

    def factor(self) -> np.ndarray:
        """Real F with the matrix = F F^T (rotary and position-gram kinds), shape (n, rank)."""
        if self.kind == "position-gram":
            return self.factor_fn()
        if self.kind != "rotary":
            raise PosencError(f"{self.spec.name}: no Gram factor for a {self.kind} matrix")
        i = np.arange(self.n)[:, None]
        nz = self.frequencies != 0
        w, th = self.plane_weights[nz], self.frequencies[nz]
        cols = [np.sqrt(w) * np.cos(i * th), np.sqrt(w) * np.sin(i * th)]
        const = self.constant_weight + float(np.sum(self.plane_weights[~nz]))
        if const > 0:
            cols.append(np.full((self.n, 1), np.sqrt(const)))
        return np.concatenate(cols, axis=1)

    def factor_row_bound(self) -> float:
        """max_i ||x_i|| max_j ||y_j|| for the matrix = X Y^T (Schur's bound on the multiplier
        norm, valid for any K with such a factorisation; rotary and decayed-rotary kinds)."""
        if self.kind == "rotary":
            return float(np.sum(self.plane_weights) + self.constant_weight)
        if self.kind != "decayed-rotary":
            raise PosencError(f"{self.spec.name}: no X Y^T factor bound for a {self.kind} matrix")
        w, lam, last = self.plane_weights, self.decays, self.n - 1
        x = max(np.sum(w), np.sum(w * lam ** (2.0 * last)))
        y = max(np.sum(w), np.sum(w * lam ** (-2.0 * last)))
        return float(np.sqrt(x * y))

    def metadata(self) -> dict[str, Any]:
        out = {"spec": self.spec.to_string(), "n": self.n, "kind": self.kind,
               "coupling": self.coupling, "toeplitz": self.toeplitz, "hermitian": self.hermitian,
               "source": self.source, "seed": self.seed, "head": self.head,
               "n_heads": self.n_heads, "description": self.description, "notes": list(self.notes)}
        if self.kind == "hybrid":
            out["parts"] = {k: v.metadata() for k, v in self.parts.items()}
        return out


def check_sizes(n_heads: Any, head_dim: Any, d_model: Any = None) -> None:
    """Heads, head dimension and model width within :mod:`posenc.limits` (before allocating)."""
    check_int("number of heads", n_heads, MAX_HEADS)
    check_int("head dimension", head_dim, MAX_WIDTH)
    if d_model is not None:
        check_int("model width d_model", d_model, MAX_WIDTH)


def _values(values: Any, size: int, head: int, n_heads: int, seed: int, what: str
            ) -> tuple[np.ndarray, str, int | None]:
    """This head's learned values: given (shape (size,) or (heads, size)) or a seeded draw."""
    if values is None:
        rng = np.random.default_rng([seed, head])
        return rng.standard_normal(size), "seeded draw", seed
    v = np.asarray(values, dtype=float)
    if v.ndim == 2 and v.shape[0] == n_heads:
        v = v[head]
    if v.shape != (size,):
        raise PosencError(f"{what}: expected {size} values (or {n_heads} x {size}); got shape "
                          f"{np.asarray(values).shape}")
    if not np.all(np.isfinite(v)):
        raise PosencError(f"{what}: the given values contain NaN or infinity")
    return v, "given", None


def absolute_table(spec: PESpec, n: int, width: int, values: Any = None, seed: int = 0
                   ) -> tuple[np.ndarray, str, int | None]:
    """The absolute PE table P, shape (n, width): sinusoidal, or learned (given / seeded draw)."""
    if isinstance(spec, Sinusoidal):
        return cv.sinusoidal_table(n, width, spec.base, spec.layout), "formula", None
    if not isinstance(spec, LearnedAbsolute):
        raise PosencError(f"{spec.name} has no absolute position table")
    if n > spec.max_len:
        raise PosencError(f"learned_absolute has max_len={spec.max_len} positions; n={n}")
    if values is None:
        table = np.random.default_rng([seed, 0]).standard_normal((n, width)) / np.sqrt(width)
        return table, "seeded draw", seed
    table = np.asarray(values, dtype=float)
    if table.ndim != 2 or table.shape[0] < n:
        raise PosencError(f"learned_absolute: values must be a (positions >= {n}, width) "
                          f"table; got shape {table.shape}")
    if not np.all(np.isfinite(table)):
        raise PosencError("learned_absolute: the given values contain NaN or infinity")
    return table[:n], "given", None


def _cos_sum(n: int, theta: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_m w_m cos(theta_m k) for k = 0 .. n-1, in row blocks (memory O(n), not O(n x planes))."""
    out = np.empty(n)
    step = max(1, 2**22 // max(theta.size, 1))
    for start in range(0, n, step):
        k = np.arange(start, min(n, start + step), dtype=float)
        out[start:start + k.size] = np.cos(np.outer(k, theta)) @ weights
    return out


def _rotary(spec: PESpec, n: int, theta: np.ndarray, weights: np.ndarray, const: float,
            description: str, head: int, n_heads: int, notes: tuple[str, ...] = ()) -> Kernel:
    column = const + _cos_sum(n, theta, weights) if theta.size else np.full(n, const)
    return Kernel(spec, n, "rotary", ToeplitzOperator(column), description, head=head,
                  n_heads=n_heads, notes=notes, frequencies=theta, plane_weights=weights,
                  constant_weight=const)


def _alibi(spec: ALiBi, n: int, ctx: "_Context") -> Kernel:
    k, head, n_heads = np.arange(n), ctx.head, ctx.n_heads
    s = float(cv.alibi_slopes(n_heads, spec.slopes)[head])
    if spec.direction == "symmetric":
        op = ToeplitzOperator(-s * k)
        desc = f"ALiBi bias B_ij = -{s:.6g}|i-j| (head {head} of {n_heads}, {spec.slopes} slopes)"
    else:
        op = ToeplitzOperator(-s * k.astype(float), np.zeros(n))
        desc = (f"ALiBi causal bias B_ij = -{s:.6g}(i-j) for j <= i, 0 above (head {head} of "
                f"{n_heads}, {spec.slopes} slopes)")
    return Kernel(spec, n, "bias", op, desc, **ctx.common)


def _learned_bias(spec: RelativeBias, n: int, ctx: "_Context", col: np.ndarray, row: np.ndarray,
                  desc: str, source: str, sd: int | None) -> Kernel:
    note = ("values: seeded draw N(0,1), rng([seed, head])" if sd is not None
            else "values: given")
    return Kernel(spec, n, "bias", ToeplitzOperator(col, row), desc + f", head {ctx.head}",
                  source=source, seed=sd, notes=(note,), **ctx.common)


def _t5(spec: RelativeBias, n: int, ctx: "_Context") -> Kernel:
    k = np.arange(n)
    table, source, sd = _values(ctx.values, spec.num_buckets, ctx.head, ctx.n_heads, ctx.seed,
                                "t5 bias")
    col = table[cv.t5_bucket(-k, spec.num_buckets, spec.max_distance)]
    row = table[cv.t5_bucket(k, spec.num_buckets, spec.max_distance)]
    desc = f"T5 bucket bias ({spec.num_buckets} buckets, max distance {spec.max_distance})"
    return _learned_bias(spec, n, ctx, col, row, desc, source, sd)


def _table(spec: RelativeBias, n: int, ctx: "_Context") -> Kernel:
    k, md = np.arange(n), spec.max_distance
    table, source, sd = _values(ctx.values, 2 * md + 1, ctx.head, ctx.n_heads, ctx.seed,
                                "relative table")
    col, row = table[np.minimum(k, md) + md], table[md - np.minimum(k, md)]
    desc = f"per-offset bias table, offsets clipped to [-{md}, {md}]"
    return _learned_bias(spec, n, ctx, col, row, desc, source, sd)


def _custom_kernel(spec: Custom, n: int, ctx: "_Context") -> Kernel:
    k = np.arange(n)
    with np.errstate(all="ignore"):
        col = np.broadcast_to(evaluate_kernel(spec.kernel, k.astype(float)), (n,))
        row = np.broadcast_to(evaluate_kernel(spec.kernel, -k.astype(float)), (n,))
    bad = np.flatnonzero(~np.isfinite(np.concatenate([col, row])))
    if bad.size:
        at = int(bad[0]) if bad[0] < n else -int(bad[0] - n)
        raise PosencError(f"custom kernel {spec.kernel.text!r} is not finite at k={at}")
    return Kernel(spec, n, "bias", ToeplitzOperator(np.array(col, dtype=float),
                                                      np.array(row, dtype=float)),
                  f"custom bias B_ij = g(i-j), g(k) = {spec.kernel.text}", **ctx.common)


def _frequencies(spec: Custom, n: int, ctx: "_Context") -> Kernel:
    theta = np.asarray(spec.frequencies, dtype=float)
    w = np.full(theta.size, 1.0 / theta.size)
    return _rotary(spec, n, theta, w, 0.0, f"custom rotary kernel, frequencies "
                   f"{', '.join(f'{t:g}' for t in theta)} (equal weights)", **ctx.common)


def _sinusoidal(spec: Sinusoidal, n: int, ctx: "_Context") -> Kernel:
    width = ctx.width
    omega = cv.sinusoidal_frequencies(width, spec.base)
    col = _cos_sum(n, omega, np.ones(omega.size))
    return Kernel(spec, n, "position-gram", ToeplitzOperator(col),
                  f"sinusoidal position Gram P P^T, width {width}: sum_m cos(omega_m (i-j))",
                  factor_fn=lambda: cv.sinusoidal_table(n, width, spec.base, spec.layout),
                  notes=("the position-position logit term with W_q^T W_k = I; a generic "
                         "W_q^T W_k breaks the Toeplitz structure",), **ctx.common)


def _learned(spec: LearnedAbsolute | None, n: int, ctx: "_Context") -> Kernel:
    spec = LearnedAbsolute(max_len=n) if spec is None else spec   # None: as long as the sequence
    table, source, sd = absolute_table(spec, n, ctx.width, ctx.values, ctx.seed)
    return Kernel(spec, n, "position-gram", LowRankOperator(table),
                  f"learned absolute position Gram P P^T (width {table.shape[1]}; not Toeplitz)",
                  source=source, seed=sd, factor_fn=lambda: table,
                  notes=("values: " + ("seeded draw N(0, 1/width), rng([seed, 0])"
                                       if sd is not None else "given"),), **ctx.common)


def _rope(spec: RoPE, n: int, ctx: "_Context") -> Kernel:
    head, n_heads, head_dim = ctx.head, ctx.n_heads, ctx.head_dim
    theta = cv.rope_frequencies(spec, head_dim)
    r = cv.rotary_dims(spec, head_dim)
    s2 = cv.rope_attention_factor(spec) ** 2
    if not (spec.heads is None or head < min(spec.heads, n_heads)):
        theta, s2 = np.zeros_like(theta), 1.0
        note = (f"partial RoPE: head {head} >= heads={spec.heads} does not rotate; K = all ones",)
    else:
        note = ()
    if spec.scaling != "none" and s2 == 1.0:
        note += (f"{spec.scaling} scaling: frequencies theta'_m (rescaled Toeplitz kernel)",)
    elif spec.scaling != "none":
        note += (f"{spec.scaling} scaling: frequencies theta'_m and attention factor s = "
                 f"{np.sqrt(s2):.6g} on q and k, so each rotary plane's weight is s^2 = "
                 f"{s2:.6g} times 2/d (an attention temperature, as in YaRN)",)
    w = np.full(theta.size, 2.0 * s2 / head_dim)
    scaled = f", {spec.scaling} scaling" if spec.scaling != "none" else ""
    return _rotary(spec, n, theta, w, (head_dim - r) / head_dim,
                   f"RoPE average kernel (1/d) sum cos(theta_m (i-j)), d={head_dim}, "
                   f"{r} rotary dims, {int(np.count_nonzero(theta))} rotating planes{scaled}",
                   notes=note, **ctx.common)


def _mla(spec: MLA, n: int, ctx: "_Context") -> Kernel:
    theta = cv.mla_frequencies(spec, ctx.head_dim)
    return _rotary(spec, n, theta, np.full(theta.size, 1.0 / theta.size), 0.0,
                   f"MLA decoupled RoPE path kernel, rope_dim={2 * theta.size}",
                   notes=("MLA logit = content path (no position) + RoPE path; this is the "
                          "RoPE path's kernel",), **ctx.common)


def _not_toeplitz(spec: MLA, n: int, ctx: "_Context") -> Kernel:
    """mla:rope=paper_code: not a rotation, so no Toeplitz kernel (one line, posenc.encodings.parts)."""
    raise not_toeplitz(spec)


def _kerple_log(spec: KerpleLog, n: int, ctx: "_Context") -> Kernel:
    col = -spec.r1 * np.log1p(spec.r2 * np.arange(n, dtype=float))      # symmetric in i - j
    return Kernel(spec, n, "bias", ToeplitzOperator(col),
                  f"KERPLE-log bias B_ij = -{spec.r1:g} log(1 + {spec.r2:g}|i-j|) (initial values; "
                  f"learned per head in a model)", **ctx.common)


def xpos_decays(spec: XPos, head_dim: int) -> np.ndarray:
    """lambda_m = zeta_m^(1/scale_base), zeta_m = (2m/d + gamma)/(1 + gamma), m < d/2."""
    if head_dim % 2:
        raise PosencError(f"xpos needs an even head dimension; got {head_dim}")
    zeta = (2.0 * np.arange(head_dim // 2) / head_dim + spec.gamma) / (1.0 + spec.gamma)
    return zeta ** (1.0 / spec.scale_base)


def _xpos(spec: XPos, n: int, ctx: "_Context") -> Kernel:
    d = ctx.head_dim
    lam = xpos_decays(spec, d)
    theta = spec.base ** (-2.0 * np.arange(d // 2) / d)
    k = np.arange(n, dtype=float)[:, None]
    with np.errstate(over="ignore"):
        col = (lam[None, :] ** k * np.cos(theta[None, :] * k)) @ np.full(d // 2, 2.0 / d)
        row = (lam[None, :] ** -k * np.cos(theta[None, :] * k)) @ np.full(d // 2, 2.0 / d)
    if not np.all(np.isfinite(row)):
        raise PosencError(f"xpos: the decay's inverse lambda^-(n-1) overflows at n={n}; use a "
                          f"shorter n or a larger scale_base")
    return Kernel(spec, n, "decayed-rotary", ToeplitzOperator(col, row),
                  f"xPos average kernel (1/d) sum_m 2 lambda_m^(i-j) cos(theta_m (i-j)), d={d}: "
                  f"Toeplitz, not symmetric (lambda < 1 decays below the diagonal, grows above)",
                  frequencies=theta, plane_weights=np.full(d // 2, 2.0 / d), decays=lam,
                  **ctx.common)


@dataclass(frozen=True)
class _Context:
    head: int
    n_heads: int
    head_dim: int
    width: int
    values: Any
    seed: int

    @property
    def common(self) -> dict[str, int]:
        return {"head": self.head, "n_heads": self.n_heads}


#: part kind -> the positional matrix of that part (posenc.encodings.registry.kinds()).
PART_FORMULAS: dict[str, Callable[..., Kernel]] = {
    "sinusoidal": _sinusoidal, "learned": _learned,
    "alibi": _alibi, "t5": _t5, "table": _table, "kernel": _custom_kernel,
    "rope": _rope, "frequencies": _frequencies, "mla": _mla, "mla_paper_code": _not_toeplitz,
    "kerple_log": _kerple_log, "xpos": _xpos,
}


def part_context(head: int, n_heads: int, head_dim: int, d_model: int | None, values: Any,
                 seed: int) -> _Context:
    """The validated sizes, head and learned values a part's kernel is built with."""
    check_sizes(n_heads, head_dim, d_model)
    if not isinstance(head, int) or not 0 <= head < n_heads:
        raise PosencError(f"head must be in 0..{n_heads - 1} for {n_heads} heads; got {head!r}")
    return _Context(head, n_heads, head_dim, head_dim * n_heads if d_model is None else d_model,
                    values, seed)


def part_kernel(part: Part, spec: PESpec, n: int, ctx: _Context) -> Kernel:
    fn = PART_FORMULAS.get(part.kind)
    if fn is None:
        raise unknown_part("numerics", part, spec)
    return fn(part.spec, n, ctx)


def kernel(spec: PESpec | str, n: int, *, head: int = 0, n_heads: int = 8, head_dim: int = 64,
           d_model: int | None = None, values: Any = None, seed: int = 0) -> Kernel:
    """The positional matrix of ``spec`` for head ``head`` of ``n_heads`` and length ``n``."""
    spec = as_spec(spec)
    return _kernel(spec, check_length(n), head=head, n_heads=n_heads, head_dim=head_dim,
                   d_model=d_model, values=values, seed=seed)


def _kernel(spec: PESpec, n: int, *, head: int = 0, n_heads: int = 8, head_dim: int = 64,
            d_model: int | None = None, values: Any = None, seed: int = 0) -> Kernel:
    """:func:`kernel` of a parsed spec and a checked length (one of a
    :class:`~posenc.limits.Lengths`): ``bound_table`` calls it for each of its lengths."""
    ctx = part_context(head, n_heads, head_dim, d_model, values, seed)
    parts = structure(spec)
    if not parts.parts:
        return Kernel(spec, n, "none", ToeplitzOperator(np.zeros(n)), "NoPE: no positional term",
                      **ctx.common)
    if len(parts.parts) == 1:
        return part_kernel(parts.parts[0], spec, n, ctx)
    # hybrids: an additive part and a multiplicative part
    (add_part,), (mul_part,) = parts.additive, parts.multiplicative
    out = {"additive": part_kernel(add_part, spec, n, ctx),
           "multiplicative": part_kernel(mul_part, spec, n, ctx)}
    return Kernel(spec, n, "hybrid", None,
                  f"hybrid: {out['additive'].description} + {out['multiplicative'].description}",
                  source=out["additive"].source, seed=out["additive"].seed, parts=out,
                  notes=("logit modelled as A o K + B: the additive part's position term added "
                         "after the rotation (exact for a bias, an idealisation for an input "
                         "embedding)",), **ctx.common)
