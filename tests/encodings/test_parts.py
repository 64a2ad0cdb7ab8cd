"""The catalogue's structural split (posenc.encodings.parts) and its conventions, held against every layer.

Each layer keeps its own table {part kind: formula}; these tests check that every kind the
catalogue declares has a formula in every layer, that an unknown kind is an error in every layer
(never a silent NoPE), and that the conventions declared once as data (pairings, slope
schedules, bucket rules) come out the same in theory, numerics and empirical.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from posenc.encodings import parts as P
from posenc.encodings.registry import kinds as part_kinds
from posenc.encodings import NAMED_SPECS, REGISTRY, ALiBi, Custom, PESpec, RelativeBias
from posenc.errors import PosencError
from posenc.empirical.model.pe import bias as ebias
from posenc.empirical.model.pe import plan as eplan
from posenc.empirical.model.pe.rotary import Rotary
from posenc.numerics import conventions as ncv
from posenc.numerics import kernels as nk
from posenc.numerics.logits import MLA_FORMULAS, ROTARY_FORMULAS, logits, plane_indices
from posenc.theory import builders as tb
from posenc.theory import conventions as tcv
from posenc.theory.derive import _derive, derive


def _entries() -> list[PESpec]:
    out = [cls() for name, cls in REGISTRY.items() if name != "custom"]
    out += [Custom(kernel="exp(-abs(k))"), Custom(frequencies=(1.0, 0.5))]
    return out + list(NAMED_SPECS.values())


@pytest.mark.parametrize("spec", _entries(), ids=lambda s: s.to_string())
def test_every_entry_has_a_valid_structure_matching_its_family(spec):
    s = P.structure(spec)
    roles = {p.role for p in s.parts}
    expected = {"none": set(), "additive-input": {"absolute"}, "additive-bias": {"bias"},
                "multiplicative": {"rotary"} if spec.name != "mla" else {"mla"}}.get(spec.family)
    if expected is not None:
        assert roles == expected
    else:  # hybrid: one additive and one multiplicative part
        assert len(s.additive) == 1 and len(s.multiplicative) == 1


def test_every_declared_kind_has_a_formula_in_every_layer():
    theory = (set(tb.BIAS_FORMULAS) | set(tb.ROTARY_FORMULAS) | set(tb.MLA_FORMULAS)
              | {"sinusoidal", "learned"})
    empirical = (set(eplan.BIAS_FORMULAS) | set(eplan.ROTARY_FORMULAS) | set(eplan.MLA_FORMULAS)
                 | {"sinusoidal", "learned"})
    kinds = part_kinds()
    assert {"alibi", "t5", "table", "kernel", "rope", "frequencies", "mla", "sinusoidal",
            "learned", "xpos", "kerple_log", "mla_paper_code"} <= set(kinds)
    assert set(nk.PART_FORMULAS) == set(kinds)
    assert set(ROTARY_FORMULAS) | set(MLA_FORMULAS) == {k for k, r in kinds.items() if r in ("rotary", "mla")}
    assert theory == set(kinds)
    assert empirical == set(kinds)
    assert set(P.MLA_ROPES.values()) == {k for k, r in kinds.items() if r == "mla"}
    assert set(P.NOT_TOEPLITZ) <= set(kinds)


@pytest.mark.parametrize("kind", list(P.NOT_TOEPLITZ))
@pytest.mark.parametrize("layer", range(3))
def test_a_kind_without_a_toeplitz_form_is_refused_by_theory_and_numerics_built_by_empirical(
        kind, layer):
    spec = next(s for s in _entries() if any(p.kind == kind for p in s.parts()))
    assert not spec.has_toeplitz_form
    _derive.cache_clear()
    with pytest.raises(PosencError, match="not Toeplitz") as err:
        _every_layer(spec)[layer]()
    assert "\n" not in str(err.value)   # one line
    plan = eplan.plan_for(spec)             # the empirical layer builds it
    assert plan.mla is not None and P.structure(plan.mla).mla.kind == kind


@dataclasses.dataclass(frozen=True)
class _Strange(PESpec):
    name = "strange"

    @property
    def family(self) -> str:
        return "additive-bias"

    def parts(self):
        return (P.Part("bias", "alibi", ALiBi()),)


@dataclasses.dataclass(frozen=True)
class _Undeclared(PESpec):
    name = "undeclared"

    @property
    def family(self) -> str:
        return "none"


def _every_layer(spec):
    x = np.random.default_rng(0).standard_normal((5, 4))
    w = np.eye(4)
    return [lambda: derive(spec, head_dim=2, n_heads=1, prove=False), lambda: nk.kernel(spec, 8),
            lambda: logits(spec, x, w, w), lambda: eplan.plan_for(spec)]


@pytest.mark.parametrize("layer", range(4))
def test_a_spec_without_parts_is_an_error_in_every_layer(layer):
    # logits used to treat an unknown spec as NoPE
    with pytest.raises(PosencError, match="declares no parts"):
        _every_layer(_Undeclared())[layer]()


@pytest.mark.parametrize("layer", range(4))
def test_a_part_kind_a_layer_lacks_is_an_error(layer, monkeypatch):
    spec = _Strange()
    for call in _every_layer(spec):   # the known kind works everywhere
        call()
    monkeypatch.setattr(_Strange, "parts", lambda self: (P.Part("bias", "strange_kind", ALiBi()),))
    _derive.cache_clear()   # derive caches forms per spec
    with pytest.raises(PosencError, match="strange_kind"):
        _every_layer(spec)[layer]()


def test_structure_rejects_unknown_and_repeated_roles(monkeypatch):
    monkeypatch.setattr(_Strange, "parts", lambda self: (P.Part("offset", "alibi", ALiBi()),))
    with pytest.raises(PosencError, match="unknown part"):
        P.structure(_Strange())
    monkeypatch.setattr(_Strange, "parts",
                        lambda self: (P.Part("bias", "alibi", ALiBi()),) * 2)
    with pytest.raises(PosencError, match="more than one"):
        P.structure(_Strange())


# -- conventions declared once, computed per layer ------------------------------------------

@pytest.mark.parametrize("pairing", list(P.PAIRINGS))
@pytest.mark.parametrize("r", [2, 4, 8, 14])
def test_pairing_rule_agrees_across_layers(pairing, r):
    theory = [tcv.pair(pairing, m, r) for m in range(r // 2)]
    a, b = plane_indices(r, pairing)
    numerics = list(zip(a.tolist(), b.tolist()))
    empirical = Rotary(r, torch.ones(1, r // 2), pairing).planes()
    assert theory == numerics == empirical
    assert sorted(d for ab in theory for d in ab) == list(range(r))   # a partition of the dims


@pytest.mark.parametrize("layer", [lambda p: tcv.pair(p, 0, 4), lambda p: plane_indices(4, p)])
def test_an_unknown_pairing_is_an_error(layer):
    with pytest.raises(PosencError):
        layer("sideways")


@pytest.mark.parametrize("schedule", list(P.SLOPE_SCHEDULES))
@pytest.mark.parametrize("heads", [1, 2, 3, 5, 8, 12, 16])
def test_slope_schedules_agree_across_layers(schedule, heads):
    theory = [float(s) for s in tcv.alibi_slopes(heads, schedule)]
    numerics = ncv.alibi_slopes(heads, schedule)
    empirical = ebias.alibi_slopes(heads, schedule)
    np.testing.assert_allclose(numerics, theory, rtol=1e-14)
    np.testing.assert_allclose(empirical, theory, rtol=1e-14)


@pytest.mark.parametrize("rule", list(P.BUCKET_RULES))
@pytest.mark.parametrize("nb,md", [(32, 128), (8, 20), (16, 9)])
def test_bucket_rules_agree_across_layers(rule, nb, md):
    spec = RelativeBias(mode=rule, num_buckets=nb, max_distance=md)
    n = 60
    values = np.arange(2 * md + 1 if rule == "table" else nb, dtype=float)
    B = nk.kernel(spec, n, n_heads=1, values=values).dense()   # B_ij = values[index(i, j)]
    ij = np.arange(n)
    off = ij[:, None] - ij[None, :]
    if rule == "t5":
        theory = np.vectorize(lambda k: tcv.t5_bucket(-int(k), nb, md))(off)
        empirical = ebias.t5_buckets(torch.as_tensor(-off), nb, md).numpy()
    else:
        theory = np.vectorize(lambda k: int(tcv.table_index(int(k), md)) + md)(off)
        empirical = ebias.TableBias(1, md).index(n).numpy()
    np.testing.assert_array_equal(B, values[theory])
    np.testing.assert_array_equal(empirical, theory)


@pytest.mark.parametrize("layout", list(P.SINUSOIDAL_LAYOUTS))
@pytest.mark.parametrize("n,width", [(7, 2), (9, 6), (5, 16)])
def test_sinusoidal_layouts_agree_across_layers(layout, n, width):
    from posenc.empirical.model.pe.absolute import sinusoidal_table
    from posenc.encodings import Sinusoidal
    from posenc.theory.builders import Build, _input_pe
    from posenc.theory.symbols import I_POS, SymbolTable
    numerics = ncv.sinusoidal_table(n, width, 10000.0, layout)
    empirical = sinusoidal_table(torch.arange(n), width, 10000.0, layout).numpy()
    t = SymbolTable()
    b = Build(t, t.content(width, "query"), t.content(width, "key"), [])
    _input_pe(b, "sinusoidal", 10000.0, layout=layout)
    theory = np.array([[float(v.subs(t.parameters).subs(I_POS, p)) for v in b.pe.p_i]
                       for p in range(n)])
    np.testing.assert_allclose(numerics, theory, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(empirical, theory, rtol=1e-12, atol=1e-12)
    # the layout a spec names is the layout every layer's part uses
    part = P.structure(Sinusoidal(layout=layout)).absolute
    assert eplan.plan_for(Sinusoidal(layout=layout)).absolute_layout == part.spec.layout == layout
