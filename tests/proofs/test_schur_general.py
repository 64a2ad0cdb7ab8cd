"""schur-multiplier-norm for a general A: ‖A∘K‖₂ ≤ max_i K_ii ‖A‖₂ for K ⪰ 0 and ANY real square
A (non-symmetric, rectangular padded with zeros), and K ⪰ 0 cannot be dropped."""

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from posenc.proofs.claim import Violation
from posenc.proofs.claims import schur
from posenc.proofs.strategies import int_matrix, psd_from_factor, unit_diagonal_psd


def _nonsymmetric(n):
    """Any n×n integer matrix with A[0, n-1] moved off A[n-1, 0]: never symmetric."""
    def build(t):
        rows, c = t
        A = np.asarray(rows, dtype=float)
        A[0, n - 1] = A[n - 1, 0] + c
        return A
    return st.tuples(int_matrix(n, n), st.sampled_from((-2, -1, 1, 2))).map(build)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4).flatmap(lambda n: st.tuples(_nonsymmetric(n), int_matrix(n, n))))
def test_bound_holds_on_nonsymmetric_a(pair):
    A, factor = pair
    assert not np.allclose(A, A.T)
    for K in (psd_from_factor(factor), unit_diagonal_psd(factor)):
        schur.multiplier_norm({"A": A, "K": K})          # no Violation


def test_a_check_on_the_symmetric_part_alone_would_not_do():
    A = np.array([[0.0, 1.0], [0.0, 0.0]])
    K = np.ones((2, 2))                               # PSD, unit diagonal: A∘K = A
    assert np.linalg.norm(A * K, 2) > np.linalg.norm((A + A.T) / 2, 2)
    schur.multiplier_norm({"A": A, "K": K})


def test_dropping_psd_still_gives_a_counterexample_on_nonsymmetric_a():
    A = np.array([[0.0, 1.0], [0.0, 0.0]])            # non-symmetric
    K = np.array([[1.0, 2.0], [2.0, 1.0]])            # unit diagonal, eigenvalues 3, -1
    with pytest.raises(Violation, match="‖A∘K‖₂ = 2 > max K_ii · ‖A‖₂ = 1"):
        schur.multiplier_norm({"A": A, "K": K})


def test_the_claims_strategy_draws_nonsymmetric_and_padded_a():
    strat = schur.MULTIPLIER.strategy()
    ex = find(strat, lambda d: not np.allclose(d["A"], d["A"].T))
    assert not np.allclose(ex["A"], ex["A"].T)
    ex = find(strat, lambda d: d["A"].shape[0] >= 2 and not d["A"][:, -1].any()
              and d["A"][:, 0].any())
    assert not ex["A"][:, -1].any()
    # and K with a diagonal other than 1 (the max_i K_ii factor is exercised)
    ex = find(strat, lambda d: np.diag(d["K"]).max() > 1)
    assert np.diag(ex["K"]).max() > 1


def test_the_registered_variants_behave(ci_result):
    r = ci_result(schur.MULTIPLIER)
    assert r["ok"] and r["holds"] and r["symbolic"]["status"] == "proved"
    found = {v["drops"]: v["found"] for v in r["variants"]}
    assert found == {"K ⪰ 0": True, "‖A∘K‖₂ ≤ ‖A‖₂ without K_ii = 1": True}
