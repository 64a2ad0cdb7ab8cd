"""The lambdified sympy forms agree with an independent loop over (head, i, j), for every entry.

Both evaluation methods (staged: projections by numpy matmul; expanded: the
fully expanded sympy expression) are compared with tests/theory/theory_reference.py
on inputs drawn by Hypothesis.  Tolerance: float64 with O(1) inputs, sums of
at most a few hundred products (|terms| <= ~1e3), so rounding error is below
~1e-12; we allow 1e-9 absolute + relative.
"""

import functools

import numpy as np
import pytest
from hypothesis import given, strategies as st

from posenc.encodings import derivable_entries, parse_spec
from posenc.errors import PosencError
from posenc.theory import derive
from rope_scaling_reference import scaled_specs
from theory_reference import logits as reference_logits

H = 3
EXTRA = [
    "rope:pairing=half", "rope:fraction=0.5", "rope:keep=0.5", "rope:heads=1",
    "rope:base=500000,pairing=half,heads=2,fraction=0.5",
    "alibi:direction=causal", "alibi:slopes=exp,direction=causal",
    "relative_bias:num_buckets=8,max_distance=16", "relative_bias:mode=table,max_distance=3",
    "hybrid:additive=alibi", "hybrid:additive=relative_bias", "hybrid:additive=learned_absolute,pairing=half",
    "mla:absolute=sinusoidal", "mla:shared_rope_key=false,rope_dim=4",
    "custom:kernel=max(-abs(k), -2) + 0.5*cos(k)", "custom:frequencies=0.5;0",
    *scaled_specs(planes=2),                           # scaled RoPE at the default head dim 4
]
SPECS = [spec for _, spec in derivable_entries()] + [parse_spec(t) for t in EXTRA]
IDS = [spec.to_string() for spec in SPECS]


@functools.lru_cache(maxsize=None)
def compiled(spec, method):
    form = derive(spec, n_heads=H, prove=False)
    return form, form.to_numpy_function(method=method)


def draw_values(form, n, seed):
    rng = np.random.default_rng(seed)
    return {name: rng.normal(size=tuple(n if s in ("n", "n+") else s for s in shape))
            for name, shape in form.inputs().items()}


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@given(n=st.integers(1, 7), seed=st.integers(0, 2**32 - 1),
       scale=st.sampled_from([1.0, 0.5, 0.125]))
def test_form_matches_reference_loop(spec, n, seed, scale):
    form, staged = compiled(spec, "staged")
    values = draw_values(form, n, seed)
    want = reference_logits(spec, values, n, H, form.head_dim, scale)
    got = staged(values, scale=scale)
    assert got.shape == (H, n, n)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    _, expanded = compiled(spec, "expanded")
    np.testing.assert_allclose(expanded(values, scale=scale), want, rtol=1e-9, atol=1e-9)


def test_term_selection_and_input_pe_flag():
    form = derive("sinusoidal", n_heads=1, prove=False)
    values = draw_values(form, 5, 0)
    whole = form.to_numpy_function()(values)
    parts = sum(form.to_numpy_function(terms=[t.name])(values) for t in form.terms)
    np.testing.assert_allclose(whole, parts, rtol=1e-12, atol=1e-12)
    # input_pe=False keeps only the content-content term: x^T W_q^T W_k x
    cc = form.to_numpy_function(input_pe=False)(values)[0]
    x, wq, wk = values["x"], values["W_q"][0], values["W_k"][0]
    np.testing.assert_allclose(cc, (x @ wq.T) @ (x @ wk.T).T, rtol=1e-12, atol=1e-12)


def test_evaluation_errors_are_posenc_errors():
    form = derive("learned_absolute", n_heads=1, prove=False)
    fn = form.to_numpy_function()
    values = draw_values(form, 4, 0)
    with pytest.raises(PosencError, match="missing input"):
        fn({k: v for k, v in values.items() if k != "P"})
    with pytest.raises(PosencError, match="shape"):
        fn(dict(values, P=values["P"][:2]))           # fewer table rows than positions
    with pytest.raises(PosencError, match="unknown term"):
        form.to_numpy_function(terms=["no such term"])


@pytest.mark.parametrize("text", ["rope", "mla"])
def test_separate_key_input(text):
    """x_key: keys from another input (the paper's code); staged == expanded == direct formula."""
    form = derive(text, n_heads=2, prove=False)
    values = draw_values(form, 5, 1)
    values["x_key"] = np.random.default_rng(2).normal(size=values["x"].shape)
    staged = form.to_numpy_function()(values)
    np.testing.assert_allclose(form.to_numpy_function(method="expanded")(values), staged,
                               rtol=1e-9, atol=1e-9)
    if text == "rope":   # direct: rotate W_q x_i and W_k y_j
        from theory_reference import rope_planes, rotate
        planes = rope_planes(form.spec, form.head_dim)
        for h in range(2):
            for i in range(5):
                for j in range(5):
                    q = rotate(values["W_q"][h] @ values["x"][i], planes, i)
                    k = rotate(values["W_k"][h] @ values["x_key"][j], planes, j)
                    assert abs(staged[h, i, j] - q @ k) < 1e-9
