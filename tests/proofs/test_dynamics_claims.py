"""The toy model behind the seed claims, held against plain finite differences (the claims use
complex-step derivatives and closed forms; this checks that machinery independently), and the
margin model against a direct loop.  The claims themselves run in test_claims (registry)."""

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis.errors import NoSuchExample

from posenc.proofs.claim import Violation
from posenc.proofs.claims import dynamics_margin as dm
from posenc.proofs.claims import dynamics_seed as ds


def _fd(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


@settings(max_examples=30)
@given(ds.inputs())
def test_signals_equal_central_differences(ex):
    for X, y in ex["batch"]:
        for kind in ("rope", "additive"):
            for eps in (0.0, 0.5):
                truth = _fd(lambda t: ds._loss(ex, X, y, eps, t, kind).real, 1.0, 1e-5)
                got = ds.psi(ex, X, y, eps, kind)
                # central difference error O(h^2 |l'''|) ~ 1e-10 * O(1e3) plus rounding
                # eps_64 |l| / h ~ 1e-11 * O(1e2): 1e-5 (1 + |psi|) is far above both
                assert abs(got - truth) <= 1e-5 * (1 + abs(truth))
        # d psi / d eps at 0, from the closed form of psi, against differences of the complex-step psi
        first = _fd(lambda e: ds.psi(ex, X, y, e, "rope"), 0.0, 1e-4)
        assert abs(ds.first_order(ex, X, y) - first) <= 1e-5 * (1 + abs(first))
        assert abs(ds.closed_form(ex, X, y) - first) <= 1e-5 * (1 + abs(first))
        first_add = _fd(lambda e: ds.psi(ex, X, y, e, "additive"), 0.0, 1e-4)
        assert abs(ds.first_order(ex, X, y, kind="additive") - first_add) <= 1e-5 * (1 + abs(first_add))


def _coherence(signals):
    return abs(sum(signals) / len(signals)) / (sum(abs(x) for x in signals) / len(signals))


def test_both_first_order_seeds_survive_but_only_rope_is_coherent():
    # one concrete σ-closed batch: the additive O(1) seed is exactly 0 but its O(ε) seed is not
    # (σ-even coefficient), like RoPE's; what differs is coherence |seed| / mean |ψ|
    ex = ds._arrays({"n": 3, "theta": 1.0, "q": (1, 2), "w": (2, -1), "b": (-1, -2, -3),
                     "batch": [(((1, 0), (0, 1), (2, 1)), 1), (((0, 2), (1, 1), (0, 1)), -1)]})
    batch = ds.closed(ex["batch"])
    add = [ds.psi(ex, X, y, 0.0, "additive") for X, y in batch]
    assert abs(sum(add)) < 1e-12 and max(abs(a) for a in add) > 1e-3
    add1 = [ds.first_order(ex, X, y, kind="additive") for X, y in batch]
    assert abs(sum(add1) / len(add1)) > 1e-3          # the additive seed survives at first order
    rope = [ds.first_order(ex, X, y) for X, y in batch]
    assert abs(sum(rope) / len(rope)) > 1e-3
    # coherence at small ε: additive O(ε) (pairs cancel at O(1)), RoPE O(1) (pairs agree)
    for eps in (1e-2, 1e-3):
        c_add = _coherence([ds.psi(ex, X, y, eps, "additive") for X, y in batch])
        c_rope = _coherence([ds.psi(ex, X, y, eps, "rope") for X, y in batch])
        assert c_add < 20 * eps and c_rope > 0.1, (eps, c_add, c_rope)
    with pytest.raises(Violation, match="first-order additive seed"):
        ds._additive_first_order_zero(ex)


def test_inputs_have_at_least_two_keys():
    # a single key has softmax weight 1 whatever its logit: ψ = 0 under every PE (no claim may
    # count it as a counterexample)
    ex = ds._arrays({"n": 1, "theta": 1.0, "q": (1, 2), "w": (2, -1), "b": (3,),
                     "batch": [(((1, 2),), 1)]})
    X, y = ex["batch"][0]
    assert ds.psi(ex, X, y, 0.7, "rope") == 0 and ds.psi(ex, X, y, 0.7, "additive") == 0
    assert find(ds.inputs(), lambda e: True)["n"] >= 2
    with pytest.raises(NoSuchExample):
        find(ds.inputs(), lambda e: e["n"] < 2, settings=settings(max_examples=200))


def test_margin_propagation_equals_a_matrix_loop():
    from fractions import Fraction as F
    ex = {"s": [F(3), F(1), F(0)], "gammas": [F(5, 4), F(3, 2)],
          "N": [[[F(2), F(1), F(1)], [F(0), F(1), F(0)], [F(1), F(0), F(1)]],
                [[F(1), F(1), F(0)], [F(1), F(0), F(0)], [F(0), F(0), F(0)]]]}
    layers = dm.propagate(ex)
    s = np.array([3.0, 1.0, 0.0])
    for g, N in zip(ex["gammas"], ex["N"]):
        s = (float(g) * np.eye(3) + np.array(N, dtype=float)) @ s
    assert np.allclose([float(x) for x in layers[-1]], s)
    dm.amplification(ex)  # dominance holds for head 0 here: no Violation


def test_without_gamma_above_one_the_bound_holds_and_only_growth_fails(ci_result):
    from fractions import Fraction as F
    # γ = 1/2, no coupling: the margin halves; Margin_1 = 1/2 ≥ Margin_L γ = 1/2 (bound holds)
    ex = {"s": [F(2), F(1)], "gammas": [F(1, 2)], "N": [[[F(0), F(0)], [F(0), F(0)]]]}
    dm.amplification(ex, strict=False)
    with pytest.raises(Violation, match="no amplification"):
        dm.amplification(ex)
    # the registered variant checks the bound only and finds no counterexample; a broken bound
    # (Margin_1 below Margin_L γ, e.g. the runner-up fed more) would be one
    bad = {"s": [F(2), F(1)], "gammas": [F(1, 2)], "N": [[[F(0), F(0)], [F(1, 4), F(0)]]]}
    with pytest.raises(Violation, match="< Margin_L"):
        dm.amplification(bad, strict=False)
    claim = dm.CLAIMS[0]
    r = ci_result(claim)
    v = {v["drops"]: v for v in r["variants"]}["γ_k > 1"]
    assert v["expected"] is False and v["found"] is False and r["ok"]
