"""The toy model behind the seed claims, held against plain finite differences (the claims use
complex-step derivatives and closed forms; this checks that machinery independently), and the
margin model against a direct loop.  The claims themselves run in test_claims (registry)."""

import numpy as np
from hypothesis import given, settings

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


def test_rope_seed_survives_where_the_additive_seed_cancels():
    # one concrete symmetric batch: additive seed exactly 0, RoPE first-order seed not
    ex = ds._arrays({"n": 3, "theta": 1.0, "q": (1, 2), "w": (2, -1), "b": (-1, -2, -3),
                     "batch": [(((1, 0), (0, 1), (2, 1)), 1), (((0, 2), (1, 1), (0, 1)), -1)]})
    batch = ds.closed(ex["batch"])
    add = [ds.psi(ex, X, y, 0.0, "additive") for X, y in batch]
    assert abs(sum(add)) < 1e-12 and max(abs(a) for a in add) > 1e-3
    rope = [ds.first_order(ex, X, y) for X, y in batch]
    assert abs(sum(rope) / len(rope)) > 1e-3


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
