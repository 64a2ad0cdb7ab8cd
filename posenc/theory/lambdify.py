"""Numeric evaluation of a :class:`~posenc.theory.form.LogitForm` (sympy ``lambdify`` to numpy).

This is how the rest of posenc holds the symbolic form against numbers: the
*same* sympy expressions that were proved are compiled, never re-implemented.

    form = derive("rope", head_dim=16, model_dim=64, n_heads=4, prove=False)
    f = form.to_numpy_function()
    scores = f(values, scale=1 / 16 ** 0.5)          # (H, n, n)

``values`` maps array names to arrays (anything ``numpy.asarray`` accepts, e.g.
``tensor.detach().numpy()``); :meth:`LogitForm.inputs` lists the names and
shapes a form needs ("n" = sequence length, "n+" = at least n rows):

=========  ==========================  =====================================================
name       shape                       meaning
=========  ==========================  =====================================================
x          (n, D)                      content: the layer input *without* the form's input PE
x_key      (n, D), optional            content at the key positions when keys and values
                                       come from another input (the paper's code); default x
W_q, W_k   (H, d, D)                   q = W_q[h] @ x_i, k = W_k[h] @ x_j (no bias vectors)
P          (n+, D)                     learned absolute table; p_i = P[i]
bias       (H, num_buckets)            t5 relative bias per head and bucket
bias       (H, 2 M + 1)                per-offset table, index (i - j) + M, M = max_distance
W_dq       (q_latent, D)               MLA: query latent c^Q = W_dq x
W_dkv      (kv_latent, D)              MLA: key/value latent c^KV = W_dkv x
W_uq       (H, d, q_latent)            MLA content path: q^C = W_uq[h] c^Q
W_uk       (H, d, kv_latent)           MLA content path: k^C = W_uk[h] c^KV
W_qr       (H, r, q_latent)            MLA rotary path: q^R = R_i W_qr[h] c^Q
W_kr       (r, D) or (H, r, D)         MLA rotary path: k^R = R_j W_kr x (shared unless per head)
=========  ==========================  =====================================================

Sinusoidal vectors, RoPE angles and ALiBi slopes come from the spec (exact
values, evaluated in float64).  The result is ``scale * (non-bias terms) +
bias terms`` of shape ``(H, n, n)``, entry ``[h, i, j]`` for query i and key j;
no mask is applied (a causal model masks j > i itself).  With
``input_pe=False`` only content-content and bias terms are compiled: use it
for a layer whose input already contains the PE (e.g. after a LayerNorm), and
pass that input as ``x``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import sympy as sp
from sympy.core.function import AppliedUndef

from ..errors import PosencError
from .symbols import ARG, I_POS, J_POS

if TYPE_CHECKING:  # pragma: no cover
    from .form import LogitForm


def _fold(ufunc_name: str):
    def fold(*args):
        import numpy as np
        return functools.reduce(getattr(np, ufunc_name), args)
    return fold


#: Max and Min compiled as numpy.maximum / numpy.minimum folded over their arguments, which
#: broadcast (a bound against an (n, n) array of offsets).  sympy 1.12's printer writes
#: ``numpy.amax((a, b), axis=0)``, which fails on arguments of different shapes (1.13 and later
#: fold numpy.maximum themselves); the two functions below make the compiled code the same on both.
_MAX, _MIN = sp.Function("posenc_elementwise_max"), sp.Function("posenc_elementwise_min")
ELEMENTWISE_NAMESPACE = {_MAX.__name__: _fold("maximum"), _MIN.__name__: _fold("minimum")}


def elementwise_max_min(exprs) -> list:
    """``exprs`` (an iterable of sympy expressions) with Max and Min replaced by the functions
    of :data:`ELEMENTWISE_NAMESPACE`, for ``lambdify``."""
    return [sp.sympify(e).replace(sp.Max, _MAX).replace(sp.Min, _MIN) for e in exprs]


class LogitFunction:
    """A compiled evaluator of (selected terms of) a LogitForm; see the module docstring.

    ``method="staged"`` (default) compiles the terms written in projection
    symbols and computes each projection ``maps @ u`` with numpy matrix
    products (fast at any size); ``method="expanded"`` compiles the fully
    expanded expressions in weights and content (small dims only; the two
    agree, which the tests check).  One call at a time per instance (table
    lookups read the arrays of the current call).
    """

    def __init__(self, form: "LogitForm", terms: Sequence[str] | None = None,
                 input_pe: bool = True, method: str = "staged") -> None:
        if method not in ("staged", "expanded"):
            raise PosencError(f"method must be staged or expanded; got {method!r}")
        names = [t.name for t in form.terms]
        if terms is not None:
            unknown = [t for t in terms if t not in names]
            if unknown:
                raise PosencError(f"unknown term(s) {unknown}; the form has {names}")
            names = list(terms)
        if not input_pe:
            names = [n for n in names if form.term(n).kind in ("content-content", "bias")]
        self.form, self.terms, self.method = form, tuple(names), method
        table, params = form.table, form.parameters
        selected = [form.term(n) for n in names]

        def head_sum(h: int, bias: bool) -> sp.Expr:
            parts = [(t.staged if method == "staged" else t.exprs)[h]
                     for t in selected if (t.kind == "bias") == bias]
            return sp.Add(*parts).xreplace(params)

        exprs = [head_sum(h, False) for h in range(form.n_heads)] + \
                [head_sum(h, True) for h in range(form.n_heads)]
        free = set().union(*(e.free_symbols for e in exprs)) - {I_POS, J_POS}
        self._symbols = sorted(free, key=lambda s: s.name)
        self._proj = {s: (key, a) for key, p in table.projections.items()
                      for a, s in enumerate(p.symbols) if s in free}
        used = {self._proj[s][0] for s in self._symbols if s in self._proj}
        self._projections = {key: table.projections[key] for key in sorted(used)}
        weights = set().union(*(m.free_symbols for p in self._projections.values() for m in p.maps))
        bound = [s for s in self._symbols if s not in self._proj] + sorted(weights, key=str)
        pe_sources = {(p.source, p.axis) for p in self._projections.values() if p.source == "p"}
        fn_names = {f.func.__name__ for e in exprs for f in e.atoms(AppliedUndef)}
        for src in pe_sources:
            fn_names |= {f.func.__name__ for f in table.sources[src].atoms(AppliedUndef)}
        self.arrays = sorted({table.bindings[s].array for s in bound}
                             | {"x" for p in self._projections.values() if p.source == "c"}
                             | {table.functions[f].array for f in fn_names
                                if table.functions[f].array is not None})
        self._tables: dict[str, Any] = {}
        namespace = {name: self._lookup(name) for name in table.functions} | ELEMENTWISE_NAMESPACE
        modules = [namespace, "numpy"]
        self._fn = sp.lambdify([I_POS, J_POS, *self._symbols], elementwise_max_min(exprs),
                               modules=modules)
        self._pe_fns = {src: sp.lambdify([I_POS if src[1] == "query" else J_POS],
                                         elementwise_max_min(table.sources[src].xreplace(params)),
                                         modules=modules)
                        for src in pe_sources}

    def _lookup(self, name: str):
        import numpy as np
        spec = self.form.table.functions[name]

        def fn(arg):
            idx = np.rint(np.asarray(arg, dtype=float)).astype(int)
            if spec.exact is not None:
                return np.vectorize(spec.exact, otypes=[int])(idx)
            table = self._tables[spec.array]
            index = tuple(idx + spec.offset if k is ARG else k for k in spec.index)
            return table[index]
        return fn

    def _check(self, name: str, arr: Any, n: int) -> None:
        shape = self.form.table.arrays["x" if name == "x_key" else name]
        ok = arr.ndim == len(shape)
        for got, want in zip(arr.shape, shape):
            ok = ok and (got >= n if want in ("n", "n+") else got == want)
        if not ok:
            raise PosencError(f"values[{name!r}] has shape {tuple(arr.shape)}; the form needs "
                              f"{shape} with n = {n}")

    def _projection_values(self, arrays: dict[str, Any], n: int) -> dict[str, Any]:
        """Each used projection ``maps @ u`` evaluated at positions 0..n-1: (n, width)."""
        import numpy as np
        bindings, pos = self.form.table.bindings, np.arange(n)
        sources = {}
        if "x" in arrays:
            sources = {("c", "query"): arrays["x"][:n], ("c", "key"): arrays["x_key"][:n]}
        for src, fn in self._pe_fns.items():
            cols = [np.broadcast_to(np.asarray(v, dtype=float), (n,)) for v in fn(pos)]
            sources[src] = np.stack(cols, axis=1)                      # (n, D)
        numeric: dict[int, Any] = {}
        out = {}
        for key, proj in self._projections.items():
            vec = sources[(proj.source, proj.axis)]
            for m in reversed(proj.maps):
                if id(m) not in numeric:
                    numeric[id(m)] = np.array([[arrays[bindings[s].array][bindings[s].index]
                                                for s in row] for row in m.tolist()], dtype=float)
                vec = vec @ numeric[id(m)].T
            out[key] = vec                                            # (n, width)
        return out

    def __call__(self, values: Mapping[str, Any], n: int | None = None, *,
                 scale: float = 1.0) -> Any:
        """Logits ``(H, n, n)``: ``scale * (non-bias terms) + bias``; n defaults to len(x)."""
        import numpy as np
        missing = [a for a in self.arrays if a not in values]
        if missing:
            need = {a: self.form.table.arrays[a] for a in missing}
            raise PosencError(f"missing input(s) {need}")
        if n is None:
            if "x" not in values:
                raise PosencError("give n when the form has no content input x")
            n = int(np.asarray(values["x"]).shape[0])
        arrays = {a: np.asarray(values[a], dtype=float) for a in self.arrays}
        if "x" in arrays:
            arrays["x_key"] = np.asarray(values.get("x_key", arrays["x"]), dtype=float)
        for a, arr in arrays.items():
            self._check(a, arr, n)
        self._tables = arrays
        proj = self._projection_values(arrays, n)
        args = []
        for s in self._symbols:
            if s in self._proj:
                key, a = self._proj[s]
                col, axis = proj[key][:, a], self._projections[key].axis
            else:
                b = self.form.table.bindings[s]
                arr = arrays["x_key" if b.array == "x" and b.axis == "key" else b.array]
                if b.axis is None:
                    args.append(float(arr[b.index]))
                    continue
                col, axis = arr[(slice(0, n), *b.index)], b.axis            # (n,)
            args.append(col[:, None] if axis == "query" else col[None, :])
        pos = np.arange(n)
        outs = self._fn(pos[:, None], pos[None, :], *args)
        H = self.form.n_heads
        full = [np.broadcast_to(np.asarray(o, dtype=float), (n, n)) for o in outs]
        return np.stack([scale * full[h] + full[H + h] for h in range(H)])  # (H, n, n)
