"""A safe parser for user-given relative kernels g(k), e.g. ``exp(-0.1*abs(k))``.

The text is parsed with :mod:`ast` and only a whitelist of node types is
accepted: numbers, the variable ``k`` (the offset i - j), the constants
``pi`` and ``e``, the operators ``+ - * / **`` (unary and binary) and calls of
the functions in :data:`FUNCTIONS`.  Nothing is ever passed to ``eval``,
``exec`` or ``sympify``; attribute access, subscripts, names other than the
above, keyword arguments and every other construct are rejected with a
:class:`~posenc.errors.PosencError`.

The parsed :class:`Expr` is backend-neutral: :meth:`Expr.evaluate` takes a
mapping from function name to implementation, so the symbolic layer evaluates
it with sympy functions, the numeric layer with numpy ufuncs and the empirical
layer with torch functions -- one parser, three independent evaluations.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping

from ..errors import PosencError

#: Function name -> number of arguments.
FUNCTIONS: dict[str, int] = {
    "abs": 1, "exp": 1, "log": 1, "sqrt": 1, "sin": 1, "cos": 1,
    "tanh": 1, "sign": 1, "min": 2, "max": 2,
}
CONSTANTS = ("pi", "e")
VARIABLE = "k"
MAX_LENGTH = 500

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_UNARY = {ast.USub: "-", ast.UAdd: "+"}


@dataclass(frozen=True)
class Expr:
    """A validated kernel expression: its source text and checked AST."""

    text: str
    #: what :func:`posenc.coerce.coerce` calls the type in a message; a type with a ``TEXT_KIND``
    #: is made from its text there (``Expr(str(value))``), without coerce importing it
    TEXT_KIND: ClassVar[str] = "expression"

    def __post_init__(self) -> None:
        _validate(self.text)

    def evaluate(self, k: Any, functions: Mapping[str, Callable[..., Any]],
                 constants: Mapping[str, Any] | None = None,
                 number: Callable[[Any], Any] | None = None) -> Any:
        """Evaluate at offset(s) ``k`` with the given function implementations.

        ``number`` converts every literal (``float`` for a floating-point backend, so that
        ``400**abs(10)`` never meets numpy's fixed-width integers; None keeps Python's exact
        int and float, for sympy)."""
        tree = ast.parse(self.text, mode="eval").body
        consts = dict(constants or {})
        return _eval(tree, k, functions, consts, number)

    def __str__(self) -> str:
        return self.text


def _fail(text: str, why: str) -> PosencError:
    return PosencError(f"bad kernel expression {text!r}: {why}")


def _validate(text: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise _fail(str(text), "it is empty")
    if len(text) > MAX_LENGTH:
        raise _fail(text[:40] + "...", f"longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise _fail(text, f"syntax error at column {exc.offset}") from None
    for node in ast.walk(tree.body):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise _fail(text, f"only numbers are allowed as constants, got {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id != VARIABLE and node.id not in CONSTANTS and node.id not in FUNCTIONS:
                raise _fail(text, f"unknown name {node.id!r}; use k, pi, e or a function "
                                  f"of {sorted(FUNCTIONS)}")
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                what = ast.unparse(node.func)
                raise _fail(text, f"{what!r} is not an allowed function; allowed: "
                                  f"{', '.join(sorted(FUNCTIONS))}")
            if node.keywords:
                raise _fail(text, "keyword arguments are not allowed")
            if len(node.args) != FUNCTIONS[node.func.id]:
                raise _fail(text, f"{node.func.id} takes {FUNCTIONS[node.func.id]} argument(s)")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise _fail(text, f"operator {type(node.op).__name__} is not allowed")
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                raise _fail(text, f"operator {type(node.op).__name__} is not allowed")
        elif isinstance(node, ast.Attribute):
            raise _fail(text, "attribute access is not allowed")
        elif not isinstance(node, (ast.Load, ast.operator, ast.unaryop)):
            raise _fail(text, f"{type(node).__name__} is not allowed")
    if isinstance(tree.body, ast.Name) and tree.body.id in FUNCTIONS:
        raise _fail(text, "a bare function name is not an expression")
    _fold(tree.body, text)


#: Largest |exponent| of a power: a constant one, or one that depends on k for |k| <= EXPONENT_K
#: (exact backends -- sympy, Python ints -- would otherwise build numbers of 10^9 digits and hang).
MAX_EXPONENT = 1024
EXPONENT_K = 16.0

_MATH: dict[str, Callable[..., float]] = {
    "abs": abs, "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "sin": math.sin,
    "cos": math.cos, "tanh": math.tanh, "sign": lambda x: float((x > 0) - (x < 0)),
    "min": min, "max": max,
}


def _fold(node: ast.AST, text: str) -> tuple[float | None, float]:
    """(value, magnitude) of a subtree: ``value`` is its float value when it does not depend on
    k (checked finite and real, so every backend computes it without overflow, division by zero
    or a complex result), else None; ``magnitude`` bounds |value| for |k| <= EXPONENT_K (inf when
    no bound is known).  Powers get bounded exponents."""
    if isinstance(node, ast.Constant):
        try:
            value = float(node.value)
        except OverflowError:
            raise _fail(text, f"the number {node.value} is too large for floating point") from None
        if not math.isfinite(value):
            raise _fail(text, f"the number {node.value!r} is not finite")
        return value, abs(value)
    if isinstance(node, ast.Name):
        if node.id == VARIABLE:
            return None, EXPONENT_K
        value = math.pi if node.id == "pi" else math.e
        return value, value
    if isinstance(node, ast.UnaryOp):
        value, mag = _fold(node.operand, text)
        return (None if value is None else (-value if isinstance(node.op, ast.USub) else value)), mag
    if isinstance(node, ast.BinOp):
        (a, ma), (b, mb) = _fold(node.left, text), _fold(node.right, text)
        op = _BINOPS[type(node.op)]
        if op == "**":
            _check_power(node, b, mb, a is None, text)
        if a is not None and b is not None:
            value = _apply(op, a, b, where=ast.unparse(node), text=text)
            return value, abs(value)
        mag = {"+": ma + mb, "-": ma + mb, "*": ma * mb}.get(op, math.inf)
        if op == "/" and b is not None and b != 0:
            mag = ma / abs(b)
        elif op == "**" and b is not None and ma <= 1e6:
            mag = _safe_pow(max(ma, 1.0), abs(b)) if b >= 0 else math.inf
        return None, mag
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        name = node.func.id
        folded = [_fold(a, text) for a in node.args]
        if all(v is not None for v, _ in folded):
            value = _apply(name, *[v for v, _ in folded], where=ast.unparse(node), text=text)
            return value, abs(value)
        mags = [m for _, m in folded]
        if name in ("sin", "cos", "tanh", "sign"):
            return None, 1.0
        if name in ("abs", "min", "max"):
            return None, max(mags)
        if name == "sqrt":
            return None, math.sqrt(mags[0])
        if name == "exp":
            return None, _safe_exp(mags[0])
        return None, math.inf                                    # log: unbounded near 0
    raise AssertionError(f"unvalidated node {type(node).__name__}")  # pragma: no cover


def _check_power(node: ast.BinOp, exponent: float | None, magnitude: float, base_has_k: bool,
                 text: str) -> None:
    where = ast.unparse(node)
    if exponent is not None:
        if abs(exponent) > MAX_EXPONENT:
            raise _fail(text, f"exponent {exponent:g} in {where!r} exceeds the limit {MAX_EXPONENT}")
        return
    if base_has_k:
        raise _fail(text, f"{where!r}: base and exponent both depend on k; write exp(...) instead")
    if not magnitude <= MAX_EXPONENT:
        raise _fail(text, f"the exponent of {where!r} may exceed {MAX_EXPONENT} in magnitude for "
                          f"|k| <= {EXPONENT_K:g}; write exp(...) instead")


def _safe_pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except OverflowError:
        return math.inf


def _safe_exp(x: float) -> float:
    return math.exp(x) if x < 700 else math.inf


def _apply(op: str, *args: float, where: str, text: str) -> float:
    """One operation on finite floats; overflow, division by zero, domain errors and complex
    results are one PosencError naming the subexpression."""
    try:
        if op in _MATH:
            value = _MATH[op](*args)
        elif op == "+":
            value = args[0] + args[1]
        elif op == "-":
            value = args[0] - args[1]
        elif op == "*":
            value = args[0] * args[1]
        elif op == "/":
            value = args[0] / args[1]
        else:
            value = args[0] ** args[1]
    except ZeroDivisionError:
        raise _fail(text, f"{where!r} divides by zero") from None
    except OverflowError:
        raise _fail(text, f"{where!r} overflows floating point") from None
    except ValueError:
        raise _fail(text, f"{where!r} is undefined (outside the function's domain)") from None
    if isinstance(value, complex):
        raise _fail(text, f"{where!r} is not a real number; kernels must be real")
    if not math.isfinite(value):
        raise _fail(text, f"{where!r} is not finite ({value})")
    return float(value)


def _eval(node: ast.AST, k: Any, fns: Mapping[str, Callable[..., Any]],
          consts: Mapping[str, Any], number: Callable[[Any], Any] | None = None) -> Any:
    if isinstance(node, ast.Constant):
        return node.value if number is None else number(node.value)
    if isinstance(node, ast.Name):
        if node.id == VARIABLE:
            return k
        if node.id in consts:
            return consts[node.id]
        return {"pi": math.pi, "e": math.e}[node.id]
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, k, fns, consts, number)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp):
        a = _eval(node.left, k, fns, consts, number)
        b = _eval(node.right, k, fns, consts, number)
        op = _BINOPS[type(node.op)]
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b
        return a ** b
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        args = [_eval(a, k, fns, consts, number) for a in node.args]
        return fns[node.func.id](*args)
    raise AssertionError(f"unvalidated node {type(node).__name__}")  # pragma: no cover
