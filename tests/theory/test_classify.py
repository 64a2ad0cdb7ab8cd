"""The family derived from the form alone equals the catalogue's declared family."""

import pytest
import sympy as sp

from posenc.encodings import derivable_entries, parse_spec
from posenc.theory import classify_expr, combine, derive
from posenc.theory.classify import NON_TOEPLITZ
from posenc.theory.symbols import I_POS as i, J_POS as j

EXTRA = ["rope:heads=1", "rope:fraction=0.5,keep=0.5,pairing=half", "alibi:direction=causal",
         "relative_bias:mode=table", "hybrid:additive=alibi", "hybrid:additive=learned_absolute",
         "mla:absolute=sinusoidal", "mla:shared_rope_key=false", "custom:frequencies=2"]
ENTRIES = list(derivable_entries()) + [(t, parse_spec(t)) for t in EXTRA]


@pytest.mark.parametrize("name,spec", ENTRIES, ids=[n for n, _ in ENTRIES])
def test_derived_family_equals_declared(name, spec):
    form = derive(spec)
    assert form.family == spec.family, form.text()
    assert all(form.analysis.decomposition_proved)
    assert all(t.toeplitz.status != "undecided" for t in form.terms)


def test_family_is_read_from_the_form_not_the_label():
    # a custom kernel that carries no position: declared additive-bias, derived none
    form = derive("custom:kernel=0*k")
    assert form.declared_family == "additive-bias" and form.family == "none"
    # zero frequencies rotate nothing: declared multiplicative, derived none
    assert derive("custom:frequencies=0;0").family == "none"


def _content():
    ci = sp.symbols("x_0:2", real=True)
    cj = sp.symbols("y_0:2", real=True)
    return ci, cj


def test_hand_made_forms_cover_every_branch():
    ci, cj = _content()
    th = sp.Symbol("theta", real=True)
    cc = ci[0] * cj[0] + ci[1] * cj[1]
    cases = {
        "none": cc,
        "additive-bias": cc - sp.Abs(i - j),
        "additive-input": cc + ci[0] * sp.sin(j),
        "multiplicative": cc * sp.cos(th * (i - j)),
        "hybrid": cc * sp.cos(th * (i - j)) + sp.Abs(i - j),
        NON_TOEPLITZ: cc * sp.cos(i) * sp.cos(j),
    }
    for family, expr in cases.items():
        assert classify_expr(expr, ci, cj).family == family, family
    witness = classify_expr(cases[NON_TOEPLITZ], ci, cj).block_witness
    assert witness is not None and witness.status == "not-toeplitz"


def test_cancelling_position_is_not_position():
    ci, cj = _content()
    expr = ci[0] * cj[0] * (sp.sin(i) ** 2 + sp.cos(i) ** 2)   # = c_i0 c_j0
    assert classify_expr(expr, ci, cj).family == "none"


def test_combine_heads():
    assert combine(["none", "multiplicative", "none"]) == "multiplicative"
    assert combine(["none", "none"]) == "none"
    assert combine(["additive-bias", "multiplicative"]) == "hybrid"
    assert combine(["multiplicative", NON_TOEPLITZ]) == NON_TOEPLITZ
