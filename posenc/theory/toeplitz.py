"""Toeplitz proofs: does a logit term depend on the positions only through i - j?

A term f(i, j) is *Toeplitz* when f(i + t, j + t) = f(i, j) for every shift t
(the property Gu et al., arXiv 2505.13027, use to separate relative from
absolute position terms).  :func:`prove_toeplitz` substitutes the shift and
reduces the difference with :func:`reduce_trig` (expand, expand the trig
functions of sums, replace sin^2 by 1 - cos^2, expand again).  Every step is
an identity, so a result of 0 is a proof valid for all symbol values (angles
and frequencies stay symbolic).  When the difference does not reduce to 0, a
*witness* is searched: exact rational values for the weights and content,
the catalogue's exact parameter values, integer positions and shift, at which
the exact difference is nonzero (checked to 30 significant digits).  Without
either outcome the verdict is ``undecided``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Optional

import sympy as sp
from sympy.core.function import AppliedUndef

from .symbols import I_POS, J_POS, SHIFT, SymbolTable

#: Positions (i, j, t) tried when searching a witness.
_POSITIONS = ((0, 0, 1), (1, 0, 1), (0, 1, 1), (2, 0, 3), (0, 2, 3), (3, 1, 2))
_CANDIDATES = 4


@dataclass(frozen=True)
class ToeplitzVerdict:
    """``status``: position-free | toeplitz | not-toeplitz | undecided."""

    status: str
    detail: str
    witness: Optional[dict[str, Any]] = None

    @property
    def is_toeplitz(self) -> bool:
        return self.status in ("position-free", "toeplitz")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "detail": self.detail}
        if self.witness is not None:
            out["witness"] = self.witness
        return out


def expand_trig_atoms(expr: sp.Expr) -> sp.Expr:
    """Rewrite every sin/cos of a sum (e.g. theta (i - j)) as products of sin/cos of its parts."""
    rep = {}
    for a in expr.atoms(sp.sin, sp.cos):
        arg = sp.expand(a.args[0])
        rep[a] = sp.expand_trig(a.func(arg)) if arg.is_Add else a.func(arg)
    return expr.xreplace(rep)


def reduce_trig(expr: sp.Expr) -> sp.Expr:
    """Canonicalise a trig polynomial: expand_trig of sums, expand, sin^2 -> 1 - cos^2, expand."""
    expr = sp.expand(expand_trig_atoms(expr))

    def is_sin_power(e: sp.Expr) -> bool:
        return (e.is_Pow and isinstance(e.base, sp.sin) and e.exp.is_Integer  # type: ignore[union-attr]
                and e.exp >= 2)

    def lower(e: sp.Pow) -> sp.Expr:
        arg = e.base.args[0]
        return (1 - sp.cos(arg) ** 2) * sp.sin(arg) ** (e.exp - 2)

    for _ in range(8):
        if not expr.has(sp.sin):
            break
        new = sp.expand(expr.replace(is_sin_power, lower))
        if new == expr:
            break
        expr = new
    return expr


def is_identically_zero(expr: sp.Expr) -> bool:
    """Proof that ``expr`` is 0 for all symbol values (expand, then the Pythagorean reduction)."""
    if sp.expand(expand_trig_atoms(expr)) == 0:
        return True
    return reduce_trig(expr) == 0


def has_position(expr: sp.Expr) -> bool:
    return bool(expr.free_symbols & {I_POS, J_POS})


def shift(expr: sp.Expr) -> sp.Expr:
    """f(i + t, j + t)."""
    return expr.subs({I_POS: I_POS + SHIFT, J_POS: J_POS + SHIFT}, simultaneous=True)


def shift_difference(expr: sp.Expr) -> sp.Expr:
    """f(i + t, j + t) - f(i, j), reduced by :func:`reduce_trig`."""
    diff = shift(expr) - expr
    if diff == 0:
        return sp.Integer(0)
    return reduce_trig(diff)


def prove_toeplitz(expr: sp.Expr, table: SymbolTable, seed: int = 0) -> ToeplitzVerdict:
    """Prove that ``expr`` is Toeplitz, or exhibit a witness that it is not.

    Order: no position at all; the shifted expression is structurally equal;
    an exact witness; the reduced shift difference is 0; else undecided.
    """
    if not has_position(expr):
        return ToeplitzVerdict("position-free", "no dependence on i or j")
    diff = shift(expr) - expr
    if diff == 0:
        return ToeplitzVerdict("toeplitz", "f(i+t, j+t) is identical to f(i, j)")
    witness = find_witness(diff, table, seed)
    if witness is not None:
        return ToeplitzVerdict(
            "not-toeplitz",
            f"f(i+t, j+t) - f(i, j) = {witness['value']:.6g} != 0 at i={witness['i']}, "
            f"j={witness['j']}, t={witness['t']} ({witness['assignment']})", witness)
    if reduce_trig(diff) == 0:
        return ToeplitzVerdict("toeplitz", "f(i+t, j+t) - f(i, j) reduces to 0 "
                                           "(angles, frequencies and weights symbolic)")
    return ToeplitzVerdict("undecided", "the shift difference did not reduce to 0 and no "
                                        "witness was found")


def _function_value(app: AppliedUndef, table: SymbolTable, candidate: int, seed: int) -> sp.Expr:
    name = app.func.__name__
    arg = int(app.args[0])
    spec = table.functions.get(name)
    if spec is not None and spec.exact is not None:
        return sp.Integer(spec.exact(arg))
    if candidate == 0:
        return sp.Integer(arg)  # identity table: f(v) = v
    return sp.Integer(random.Random(f"{seed}:{candidate}:{name}:{arg}").randint(1, 9))


def _evaluate_functions(expr: sp.Expr, table: SymbolTable, candidate: int, seed: int) -> sp.Expr:
    for _ in range(8):
        apps = [a for a in expr.atoms(AppliedUndef) if all(x.is_Integer for x in a.args)]
        if not apps:
            break
        expr = expr.xreplace({a: _function_value(a, table, candidate, seed) for a in apps})
    return expr


def assignment(expr: sp.Expr, table: SymbolTable, candidate: int,
               seed: int = 0) -> dict[sp.Symbol, sp.Expr]:
    """Exact values for every non-position symbol: catalogue parameters, else candidate values.

    Candidate 0 sets every weight and content symbol to 1; candidate c > 0 draws
    integers in [-3, 3] from a generator seeded by (seed, c, symbol name).
    """
    values: dict[sp.Symbol, sp.Expr] = {}
    for s in sorted(expr.free_symbols - {I_POS, J_POS, SHIFT}, key=lambda s: s.name):
        if s in table.parameters:
            values[s] = table.parameters[s]
        elif candidate == 0:
            values[s] = sp.Integer(1)
        else:
            values[s] = sp.Integer(random.Random(f"{seed}:{candidate}:{s.name}").randint(-3, 3))
    return values


def evaluate(expr: sp.Expr, values: dict[sp.Symbol, sp.Expr], positions: dict[sp.Symbol, int],
             table: SymbolTable, candidate: int, seed: int = 0) -> Optional[sp.Expr]:
    """The exact value of ``expr`` at the given symbol values and integer positions."""
    value = expr.xreplace(values).xreplace({s: sp.Integer(v) for s, v in positions.items()})
    value = _evaluate_functions(value, table, candidate, seed)
    if value.free_symbols or value.atoms(AppliedUndef):
        return None
    return value


def is_nonzero(value: sp.Expr) -> bool:
    """Nonzero to 30 significant digits (sympy's evalf tracks the precision of each step)."""
    approx = sp.N(value, 30)
    return bool(approx.is_real and abs(approx) > sp.Float("1e-20", 30))


def find_witness(diff: sp.Expr, table: SymbolTable, seed: int = 0) -> Optional[dict[str, Any]]:
    """Exact values at which ``diff`` (an expression in i, j, t and others) is nonzero."""
    for candidate in range(_CANDIDATES):
        values = assignment(diff, table, candidate, seed)
        for (i, j, t) in _POSITIONS:
            value = evaluate(diff, values, {I_POS: i, J_POS: j, SHIFT: t}, table, candidate, seed)
            if value is None or not is_nonzero(value):
                continue
            text = ("weights and content all 1, tables f(v) = v" if candidate == 0 else
                    f"weights and content drawn from [-3, 3], tables from [1, 9], "
                    f"candidate {candidate}, seed {seed}")
            exact_text = sp.sstr(value)
            return {"i": i, "j": j, "t": t, "value": float(sp.N(value, 17)),
                    "exact": exact_text if len(exact_text) <= 200 else None,
                    "assignment": text,
                    "values": {s.name: int(v) for s, v in values.items()
                               if s not in table.parameters}}
    return None


def depends_on_position(expr: sp.Expr, table: SymbolTable, seed: int = 0) -> bool:
    """Whether ``expr`` really varies with (i, j): two exact values differ, or after expansion."""
    if not has_position(expr):
        return False
    pairs = ((0, 0), (1, 0), (0, 1), (2, 1), (1, 3))
    for candidate in range(1, _CANDIDATES):
        values = assignment(expr, table, candidate, seed)
        first = None
        for i, j in pairs:
            value = evaluate(expr, values, {I_POS: i, J_POS: j}, table, candidate, seed)
            if value is None:
                break
            if first is None:
                first = value
            elif is_nonzero(value - first):
                return True
    return has_position(reduce_trig(expr))
