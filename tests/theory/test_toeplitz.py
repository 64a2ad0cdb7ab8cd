"""Toeplitz verdicts: proofs for relative terms, exact witnesses for absolute ones."""

import math

import numpy as np
import sympy as sp
from hypothesis import given, strategies as st

from posenc.theory import derive, prove_toeplitz
from posenc.theory.symbols import I_POS as i, J_POS as j, SymbolTable

TABLE = SymbolTable()
W = sp.symbols("w_0:3", real=True)


def test_sinusoidal_generic_is_not_toeplitz_with_a_true_witness():
    form = derive("sinusoidal")
    pp = form.term("position-position")
    assert pp.toeplitz.status == "not-toeplitz"
    w = pp.toeplitz.witness
    # Recompute the witness independently: all weights 1 -> p_i^T (W_q^T W_k) p_j with
    # W_q^T W_k = d * ones (D x D), so the term is d * (sum p_i)(sum p_j).
    d, D = form.head_dim, form.model_dim
    assert set(w["values"].values()) == {1}

    def p(pos):
        return sum(f(pos / 10000 ** (2 * m / D)) for m in range(D // 2) for f in (math.sin, math.cos))

    def term(a, b):
        return d * p(a) * p(b)
    value = term(w["i"] + w["t"], w["j"] + w["t"]) - term(w["i"], w["j"])
    assert abs(value - w["value"]) < 1e-9 and abs(value) > 1e-3


def test_sinusoidal_identity_and_commuting_cases_are_toeplitz():
    cases = derive("sinusoidal").analysis.special_cases
    assert len(cases) == 2
    for case in cases:
        assert case.proved and case.toeplitz.status == "toeplitz"
    eye, commuting = cases
    assert eye.result_text == "cos(omega_0*(i - j)) + cos(omega_1*(i - j))"
    assert "a_0*cos(omega_0*(i - j))" in commuting.result_text


def test_learned_absolute_is_not_toeplitz_and_bias_pes_are():
    learned = derive("learned_absolute")
    assert learned.term("position-position").toeplitz.status == "not-toeplitz"
    for spec in ("alibi", "alibi:direction=causal", "relative_bias", "paper-relative",
                 "custom:kernel=exp(-abs(k))"):
        assert derive(spec).term("bias").toeplitz.status == "toeplitz", spec


def test_rotary_terms():
    rope = derive("rope")
    assert [t.toeplitz.status for t in rope.terms] == ["toeplitz"]
    mla = derive("mla")
    assert {t.name: t.toeplitz.status for t in mla.terms} == {
        "content-content, content path": "position-free",
        "content-content, rotary path": "toeplitz"}
    paper = derive("paper-rope")
    status = {t.name: t.toeplitz.status for t in paper.terms}
    assert status["content-content, rotary"] == "toeplitz"
    assert status["position-position, rotary"] == "not-toeplitz"


def test_proof_needs_the_pythagorean_identity():
    w = sp.Symbol("w", real=True)
    expr = sp.sin(w * i) * sp.sin(w * j) + sp.cos(w * i) * sp.cos(w * j)
    v = prove_toeplitz(expr, TABLE)
    assert v.status == "toeplitz" and "reduces to 0" in v.detail


def _kernel(k, c):   # a relative kernel built from Toeplitz pieces
    return c[0] * sp.cos(W[0] * k) + c[1] * sp.sin(W[1] * k) + c[2] * sp.Abs(k)


@given(st.lists(st.integers(-3, 3), min_size=3, max_size=3),
       st.lists(st.integers(-3, 3), min_size=3, max_size=3))
def test_hypothesis_relative_kernels_are_proved(c, e):
    expr = _kernel(i - j, c)
    # the same kernel written through the angle-addition formula (not visibly relative)
    expanded = sp.expand_trig(sp.expand(expr))
    for f in (expr, expanded):
        assert prove_toeplitz(f, TABLE).is_toeplitz


@given(st.integers(1, 3), st.integers(-3, 3).filter(bool))
def test_hypothesis_absolute_terms_get_witnesses(power, c):
    table = SymbolTable()
    table.parameter("w_0", sp.Rational(1, 3))
    expr = c * sp.sin(W[0] * i) ** power * sp.cos(W[0] * j) + (i - j) ** 2
    v = prove_toeplitz(expr, table)
    assert v.status == "not-toeplitz"
    wit = v.witness
    f = lambda a, b: c * math.sin(a / 3) ** power * math.cos(b / 3) + (a - b) ** 2  # noqa: E731
    val = f(wit["i"] + wit["t"], wit["j"] + wit["t"]) - f(wit["i"], wit["j"])
    assert np.isclose(val, wit["value"], rtol=1e-9, atol=1e-12) and abs(val) > 1e-12
