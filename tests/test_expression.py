"""Kernel expressions: no hang, no traceback, no silently dropped imaginary part.

Constants are folded in floating point when the expression is parsed; a power's exponent is
bounded (``MAX_EXPONENT``), also when it depends on k (for |k| <= ``EXPONENT_K``), so no backend
(numpy, torch, sympy with exact integers) can be asked for a number of 10^9 digits.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from posenc.cli import main
from posenc.errors import PosencError
from posenc.encodings.expression import MAX_EXPONENT, Expr
from posenc.numerics.kernels import evaluate_kernel

REFUSED = [
    ("9**9**9", "exceeds the limit"),
    ("1/0", "divides by zero"),
    ("0**-1", "divides by zero"),
    ("10.0**400", "overflows"),
    ("10**400", "overflows"),
    ("2**2**2**2**2", "exponent 65536"),
    ("(-1)**0.5", "not a real number"),
    ("(-8)**(1/3)", "not a real number"),
    ("log(0)", "domain"),
    ("sqrt(-1)", "domain"),
    ("exp(1000)", "overflows"),
    ("1e999", "not finite"),
    ("1" + "0" * 400, "too large for floating point"),
    ("k**k", "both depend on k"),
    ("2**(k**20)", "may exceed"),
    ("k**(2**11)", "exceeds the limit"),
    ("2**(1/k)", "may exceed"),
    ("(" * 210 + "k" + ")" * 210, "syntax error"),
]


@pytest.mark.parametrize("text,match", REFUSED, ids=[t[:30] for t, _ in REFUSED])
def test_refused_expressions_are_one_line(text, match):
    with pytest.raises(PosencError, match=match) as info:
        Expr(text)
    assert "\n" not in str(info.value)


ACCEPTED = ["exp(-0.1*abs(k))", "2**(-abs(k))", "abs(k)**0.5", "-log(1+abs(k))",
            "max(-abs(k), -5)", "0.9**(k*k)", "(k+1)**1024", "k**-1", "2**10*k", "(-1)**k",
            "e**(-abs(k)/4)", "sqrt(2)*cos(pi*k/7)"]


@pytest.mark.parametrize("text", ACCEPTED)
def test_accepted_expressions_evaluate_to_what_python_floats_give(text):
    expr = Expr(text)
    ks = np.array([-3.0, -2.0, 2.0, 3.0])
    with np.errstate(all="ignore"):
        got = np.broadcast_to(evaluate_kernel(expr, ks), ks.shape)
    fns = {"abs": abs, "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "sin": math.sin,
           "cos": math.cos, "tanh": math.tanh, "sign": np.sign, "min": min, "max": max}
    for k, g in zip(ks, got, strict=True):
        try:
            want = complex(expr.evaluate(float(k), fns))
        except OverflowError:
            want = complex(math.inf)
        if want.imag == 0 and math.isfinite(want.real):
            assert g == pytest.approx(want.real, rel=1e-12), (k, g, want)


# -- property: a constant expression is refused iff checked float arithmetic fails ------------

def _trees(depth: int) -> st.SearchStrategy[str]:
    leaf = st.sampled_from(["0", "1", "2", "-1", "0.5", "10", "9", "400", "1e300", "pi"])
    if depth == 0:
        return leaf
    sub = _trees(depth - 1)
    return st.one_of(leaf,
                     st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "**"]), sub).map(
                         lambda t: f"({t[0]}){t[1]}({t[2]})"),
                     st.tuples(st.sampled_from(["exp", "log", "sqrt", "abs", "tanh"]), sub).map(
                         lambda t: f"{t[0]}({t[1]})"))


def _reference(text: str) -> float | None:
    """A constant expression in plain checked float arithmetic (independent of posenc):
    None when it is undefined, overflows, is complex, or needs an exponent past the bound."""
    import ast

    def ev(node):
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return math.pi
        if isinstance(node, ast.UnaryOp):
            return -ev(node.operand)
        if isinstance(node, ast.Call):
            return getattr(math, node.func.id, abs)(ev(node.args[0]))
        a, b = ev(node.left), ev(node.right)
        if isinstance(node.op, ast.Pow):
            if abs(b) > MAX_EXPONENT:
                raise OverflowError
            power = a ** b
            if isinstance(power, complex):  # a negative base to a fractional power: not real
                raise ValueError            # (math.exp etc. of it would be a TypeError)
            return power
        return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}.get(type(node.op)) \
            if not isinstance(node.op, ast.Div) else a / b
    try:
        value = ev(ast.parse(text, mode="eval").body)
    except (ZeroDivisionError, OverflowError, ValueError):
        return None
    if isinstance(value, complex) or not math.isfinite(value):
        return None
    return value


@settings(max_examples=150, deadline=None)
@given(_trees(3))
def test_constant_expressions_are_checked_like_float_arithmetic(text):
    want = _reference(text)
    if want is None:
        with pytest.raises(PosencError):
            Expr(text)
        return
    value = evaluate_kernel(Expr(text), 0.0)
    assert np.isfinite(value) and not np.iscomplexobj(value)
    assert float(value) == pytest.approx(want, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("command", [["bound", "--n", "8"], ["derive"]])
@pytest.mark.parametrize("text,match", REFUSED[:7], ids=[t for t, _ in REFUSED[:7]])
def test_cli_refuses_in_one_line(capsys, command, text, match):
    code = main([command[0], f"custom:kernel={text}", *command[1:]])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and match in err, err


def test_theory_layer_handles_the_largest_accepted_powers(capsys):
    """sympy gets only bounded exponents: these derive (symbolically) without hanging."""
    for text in ("(k+1)**1024", "2**(k*k)", "0.5**abs(k)"):
        assert main(["derive", f"custom:kernel={text}", "--json"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("text", ["400**abs(10)", "400**10", "(0)+((400)**(abs(10)))"])
def test_integer_literals_are_floats_in_the_numeric_and_torch_layers(text):
    """400**10 overflows numpy's int64 (a wrong kernel that looks right); both numeric
    backends evaluate literals in floating point."""
    import torch

    from posenc.empirical.model.pe.bias import TORCH_FUNCTIONS
    want = 400.0 ** 10
    assert evaluate_kernel(Expr(text), np.zeros(3)) == pytest.approx(want, rel=1e-12)
    got = Expr(text).evaluate(torch.zeros(3, dtype=torch.float64), TORCH_FUNCTIONS, number=float)
    assert float(torch.as_tensor(got, dtype=torch.float64).reshape(-1)[0]) == pytest.approx(want, rel=1e-12)
