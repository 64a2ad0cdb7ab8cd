"""Symbols of the symbolic layer and how each one binds to a numeric array.

Every sympy symbol a derivation creates is registered in a :class:`SymbolTable`
together with a :class:`Binding` that says where its numeric value lives, so
that a :class:`~posenc.theory.form.LogitForm` can later be evaluated with a
model's weights (see :mod:`posenc.theory.lambdify`):

* positions ``i`` (query) and ``j`` (key) are integer symbols; ``t`` is the
  shift used by the Toeplitz proofs;
* content symbols ``c_i_a`` / ``c_j_a`` are the ``a``-th input coordinate at
  the query / key position (array ``x``, shape ``(n, D)``);
* weight symbols such as ``W_q_h_r_c`` are entries of per-head matrices
  (array ``W_q``, shape ``(H, d, D)``) or of shared ones;
* parameters (RoPE angles ``theta_m``, sinusoidal frequencies ``omega_m``,
  ALiBi slopes ``m_h``) are real symbols whose exact values come from the
  catalogue spec; proofs keep them symbolic, evaluation substitutes them;
* tables (learned absolute rows ``P_a(i)``, relative-bias values ``b_h(.)``)
  are undefined real sympy functions of an integer argument, so that a shift
  ``i -> i + t`` visibly changes them; the T5 bucket ``beta(.)`` is a function
  with an exact integer implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import sympy as sp

#: Query position, key position and the Toeplitz shift.
I_POS = sp.Symbol("i", integer=True)
J_POS = sp.Symbol("j", integer=True)
SHIFT = sp.Symbol("t", integer=True)

#: Placeholder for the function argument inside :attr:`TableFunction.index`.
ARG = None

Dim = Union[int, str]  # a fixed length, or "n" (sequence length) / "n+" (at least n rows)


@dataclass(frozen=True)
class Binding:
    """Where a symbol's numeric value lives.

    ``array`` is a key of the values mapping; ``index`` indexes that array after
    the position axis; ``axis`` is ``"query"`` (one value per query position,
    the array's first axis is the position), ``"key"`` (same, for the key
    position) or ``None`` (a single number, ``array[index]``).
    """

    array: str
    index: tuple[int, ...]
    axis: Optional[str] = None


@dataclass(frozen=True)
class TableFunction:
    """An undefined sympy function of one integer argument, with its numeric meaning.

    Either a table lookup ``values[array][index with ARG -> argument + offset]``
    or, when ``exact`` is given, a fixed integer-valued function (T5 bucket).
    """

    name: str
    array: Optional[str]
    index: tuple[Optional[int], ...] = ()
    offset: int = 0
    exact: Optional[Callable[[int], int]] = None


@dataclass(frozen=True)
class Projection:
    """A vector of symbols standing for ``maps[0] @ maps[1] @ ... @ u``.

    ``u`` is the content (``source="c"``) or input-PE (``"p"``) vector at the
    query (``axis="query"``) or key position; the maps are matrices of weight
    symbols.  Terms are first written in these symbols (small expressions,
    fast to compile at any size) and expanded by substitution when needed.
    """

    symbols: tuple[sp.Symbol, ...]
    maps: tuple[sp.Matrix, ...]
    source: str
    axis: str


@dataclass
class SymbolTable:
    """Creates symbols for one derivation and records their bindings."""

    bindings: dict[sp.Symbol, Binding] = field(default_factory=dict)
    functions: dict[str, TableFunction] = field(default_factory=dict)
    parameters: dict[sp.Symbol, sp.Expr] = field(default_factory=dict)
    arrays: dict[str, tuple[Dim, ...]] = field(default_factory=dict)
    per_head: dict[sp.Symbol, sp.Symbol] = field(default_factory=dict)  # symbol -> head-0 twin
    projections: dict[str, Projection] = field(default_factory=dict)
    sources: dict[tuple[str, str], sp.Matrix] = field(default_factory=dict)  # (c|p, axis) -> vector
    _explicit: Optional[dict[sp.Symbol, sp.Expr]] = field(default=None, repr=False)

    def declare(self, array: str, shape: tuple[Dim, ...]) -> None:
        old = self.arrays.get(array)
        if old is not None and old != shape:
            raise AssertionError(f"array {array} declared as {old} and {shape}")
        self.arrays[array] = shape

    def symbol(self, name: str, binding: Binding) -> sp.Symbol:
        s = sp.Symbol(name, real=True)
        old = self.bindings.get(s)
        if old is not None and old != binding:
            raise AssertionError(f"symbol {name} bound twice")
        self.bindings[s] = binding
        return s

    def content(self, width: int, axis: str) -> sp.Matrix:
        """The input vector at the query (``axis="query"``) or key position, ``(D, 1)``."""
        self.declare("x", ("n", width))
        tag = "i" if axis == "query" else "j"
        return sp.Matrix([self.symbol(f"c_{tag}_{a}", Binding("x", (a,), axis))
                          for a in range(width)])

    def matrix(self, array: str, rows: int, cols: int, head: Optional[int] = None,
               n_heads: Optional[int] = None) -> sp.Matrix:
        """A symbolic weight matrix; per head (array shape ``(H, rows, cols)``) or shared."""
        if head is None:
            self.declare(array, (rows, cols))
            return sp.Matrix(rows, cols, lambda r, c: self.symbol(
                f"{array}_{r}_{c}", Binding(array, (r, c))))
        assert n_heads is not None
        self.declare(array, (n_heads, rows, cols))

        def entry(r: int, c: int) -> sp.Symbol:
            s = self.symbol(f"{array}_{head}_{r}_{c}", Binding(array, (head, r, c)))
            self.per_head[s] = sp.Symbol(f"{array}_0_{r}_{c}", real=True)
            return s
        return sp.Matrix(rows, cols, entry)

    def parameter(self, name: str, value: sp.Expr, positive: bool = False) -> sp.Symbol:
        """A real (or positive) parameter kept symbolic in proofs; ``value`` is its exact value."""
        s = sp.Symbol(name, positive=True) if positive else sp.Symbol(name, real=True)
        self.parameters[s] = sp.sympify(value)
        return s

    def table(self, name: str, array: Optional[str], index: tuple[Optional[int], ...] = (),
              offset: int = 0, shape: Optional[tuple[Dim, ...]] = None,
              exact: Optional[Callable[[int], int]] = None) -> type:
        """An undefined real function ``name(arg)`` bound to a table (or exact rule)."""
        if array is not None and shape is not None:
            self.declare(array, shape)
        self.functions[name] = TableFunction(name, array, index, offset, exact)
        return sp.Function(name, real=True)

    def projection(self, key: str, maps: tuple[sp.Matrix, ...], source: str, axis: str,
                   head: Optional[int] = None) -> sp.Matrix:
        """Symbols for the projection ``maps @ u_source`` at ``axis`` (created once per key)."""
        if key not in self.projections:
            width = maps[0].shape[0]
            syms = tuple(sp.Symbol(f"{key}_{a}", real=True) for a in range(width))
            self.projections[key] = Projection(syms, maps, source, axis)
            if head is not None:
                twin = key.replace(f"h{head}_", "h0_", 1)
                self.per_head.update({s: sp.Symbol(f"{twin}_{a}", real=True)
                                      for a, s in enumerate(syms)})
            self._explicit = None
        return sp.Matrix(self.projections[key].symbols)

    def explicit(self) -> dict[sp.Symbol, sp.Expr]:
        """Projection symbol -> its explicit expression in weights and content / PE."""
        if self._explicit is None:
            out: dict[sp.Symbol, sp.Expr] = {}
            for proj in self.projections.values():
                vec = self.sources[(proj.source, proj.axis)]
                for m in reversed(proj.maps):
                    vec = m * vec
                out.update(zip(proj.symbols, vec))
            self._explicit = out
        return self._explicit

    def expand_projections(self, expr: sp.Expr) -> sp.Expr:
        return expr.xreplace(self.explicit())

    def canonical(self, expr: sp.Expr) -> sp.Expr:
        """``expr`` with every per-head weight renamed to its head-0 twin.

        Two heads whose expressions have the same canonical form differ only by
        a renaming of independent symbols, so a proof about one is a proof about
        the other.
        """
        return expr.xreplace(self.per_head)

    def content_symbols(self, axis: str) -> tuple[sp.Symbol, ...]:
        """Content symbols at the query or key position, in coordinate order."""
        out = [(b.index, s) for s, b in self.bindings.items() if b.array == "x" and b.axis == axis]
        return tuple(s for _, s in sorted(out, key=lambda p: p[0]))
