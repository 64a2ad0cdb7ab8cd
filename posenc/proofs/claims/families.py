"""The catalogue's declared family of each PE is the family theory derives.

Gu et al. (arXiv 2505.13027) sort PEs into additive (position added to the input, or a bias
added to the logits) and multiplicative (position multiplies the content interaction).  The
catalogue (:mod:`posenc.encodings`) *declares* a family per spec; :func:`posenc.theory.derive`
*derives* one from the logit form alone (the content-content block ∂²L/∂c_i∂c_j constant or
depending on i−j, and which other terms carry position).  The numeric layer's kernel carries a
coupling (none / additive / multiplicative / hybrid) that must match too.

Drawn inputs: custom kernels g(k) and frequencies that depend on position; every check also
runs every catalogue entry and named spec.  Variant: a custom kernel or frequency list that does not depend on
position (g constant, all frequencies 0) is declared additive-bias / multiplicative by the
catalogue but is derived ``none`` -- posenc finds that disagreement and shrinks it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ...encodings import derivable_entries, parse_spec
from ..claim import FAILED, PROVED, Claim, SymbolicResult, Variant, agree, require

COUPLING = {"none": "none", "additive-input": "additive", "additive-bias": "additive",
            "multiplicative": "multiplicative", "hybrid": "hybrid"}
KERNEL_SHAPES = ("-{a}*abs(k)", "exp(-abs(k)/{b})*{a}", "{a}*k", "-log(1+abs(k))*{a}",
                 "max(-abs(k),-{b})*{a}", "{a}*sin(k/{b})")


def _custom_kernels():
    return st.builds(lambda shape, a, b: f"custom:kernel={shape.format(a=a, b=b)}",
                     st.sampled_from(KERNEL_SHAPES), st.integers(1, 3), st.integers(1, 4))


def _custom_frequencies():
    # one frequency: deriving (with proofs) a two-plane custom form costs ~2 s; the catalogue
    # entry custom:frequencies=1;0.1;0.01 covers several planes
    return st.sampled_from((1.0, 0.5, 0.1, 0.01)).map(lambda f: f"custom:frequencies={f:g}")


def _inputs():
    return st.one_of(_custom_kernels().map(parse_spec), _custom_frequencies().map(parse_spec))


def _position_free():
    return st.one_of(st.integers(-3, 3).map(lambda a: parse_spec(f"custom:kernel={a}")),
                     st.integers(1, 2).map(lambda m: parse_spec(
                         "custom:frequencies=" + ";".join(["0"] * m))))


def _family_and_catalogue(spec) -> None:
    # the drawn custom spec, then every catalogue entry and named spec (derivations are cached)
    _family(spec)
    for _, entry in derivable_entries():
        _family(entry)


def _family(spec) -> None:
    from ...numerics.kernels import kernel
    from ...theory.derive import derive

    derived = derive(spec).family
    require(derived == spec.family,
            f"declared {spec.family!r} but theory derives {derived!r} for {spec.to_string()}")
    coupling = kernel(spec, 4, n_heads=2, head_dim=8).coupling
    agree(coupling == COUPLING[derived],
          f"numerics kernel coupling {coupling!r} for a {derived!r} PE ({spec.to_string()})")


def _symbolic() -> SymbolicResult:
    from ...theory.derive import derive

    bad, count = [], 0
    for name, spec in derivable_entries():
        form = derive(spec)
        count += 1
        if form.family != spec.family or not all(form.analysis.decomposition_proved):
            bad.append(f"{name}: declared {spec.family}, derived {form.family}")
    if bad:
        return SymbolicResult(FAILED, "; ".join(bad))
    return SymbolicResult(PROVED, f"all {count} catalogue entries and named specs with a Toeplitz form (not "
                          "mla:rope=paper_code): the family derived from the proved logit form "
                          "equals the declared one")


CLAIMS = (
    Claim(
        id="declared-family",
        title="Declared family = derived family",
        statement="For every catalogue PE, the family the catalogue declares (none, additive-input, "
                  "additive-bias, multiplicative, hybrid) is the family derived from its logit "
                  "form, and the numeric kernel's coupling agrees.",
        latex=r"\mathrm{family}_{\mathrm{declared}}(\mathrm{PE})="
              r"\mathrm{family}\bigl(\partial^2L/\partial c_i\partial c_j,\ \text{position terms}\bigr)",
        source="Gu et al., additive vs multiplicative classification",
        assumptions=("the PE's positional part depends on position (custom g non-constant, "
                     "some frequency non-zero)",),
        strategy=_inputs,
        check=_family_and_catalogue,
        symbolic=_symbolic,
        variants=(Variant("the positional part depends on position", _position_free, check=_family,
                          note="custom g constant or all frequencies 0"),),
        describe=lambda spec: spec.to_string(),
        layers=("theory", "numerics"),
    ),
)
