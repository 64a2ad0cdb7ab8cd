"""spectrum(): Lanczos on the matvec agrees with dense LAPACK; structure and fallbacks."""

import numpy as np
import pytest

from posenc.errors import PosencError
from posenc.numerics.contraction import seeded_content
from posenc.numerics.kernels import kernel
from posenc.numerics.operators import DENSE_LIMIT, HadamardOperator, ToeplitzOperator
from posenc.numerics.spectra import AUTO_DENSE, DENSE_EIG, LANCZOS_EIG, LANCZOS_SVD, spectrum

N = AUTO_DENSE + 88          # just above the dense threshold: auto picks Lanczos
# Lanczos runs to tol=0 (machine precision); extreme eigenvalues agree with LAPACK to ~1e-14
# relative.  1e-9 relative to ||M|| leaves room for rounding while catching any wrong value.
RTOL = 1e-9


def _kernels():
    return {"rope": kernel("rope", N), "alibi": kernel("alibi", N),
            "alibi causal": kernel("alibi:direction=causal", N),
            "t5 (seeded)": kernel("relative_bias", N), "sinusoidal": kernel("sinusoidal", N),
            "custom frequencies": kernel("custom:frequencies=1;0.1;0.01", N)}


@pytest.mark.parametrize("name", list(_kernels()))
def test_lanczos_agrees_with_dense(name):
    kern = _kernels()[name]
    fast = spectrum(kern.operator, psd=kern.psd, rank_bound=kern.rank_bound)
    dense = spectrum(kern.operator, method="dense", psd=kern.psd, rank_bound=kern.rank_bound)
    assert fast.method in (LANCZOS_EIG, LANCZOS_SVD) and dense.method.startswith("dense")
    scale = dense.sigma_max
    assert fast.sigma_max == pytest.approx(dense.sigma_max, rel=RTOL)
    if dense.hermitian:
        assert abs(fast.lambda_max - dense.lambda_max) <= RTOL * scale
        assert abs(fast.lambda_min - dense.lambda_min) <= RTOL * scale


def test_lanczos_on_the_hadamard_operator_agrees_with_dense():
    a = seeded_content(N, rank=3, seed=1)
    op = HadamardOperator(a.x, a.x, kernel("alibi", N).operator)
    fast, dense = spectrum(op, method="lanczos"), spectrum(op, method="dense")
    assert abs(fast.lambda_max - dense.lambda_max) <= RTOL * dense.sigma_max
    assert abs(fast.lambda_min - dense.lambda_min) <= RTOL * dense.sigma_max


def test_clustered_end_falls_back_to_a_one_sided_rayleigh_quotient():
    # KMS matrix exp(-0.1|i-j|): eigenvalues cluster at the symbol's minimum, ARPACK stalls
    op = kernel("custom:kernel=exp(-0.1*abs(k))", N).operator
    fast = spectrum(op, method="lanczos")
    exact = np.linalg.eigvalsh(op.dense())
    assert fast.lambda_max == pytest.approx(exact[-1], rel=RTOL)
    if any("LOBPCG" in note for note in fast.notes):
        assert fast.lambda_min >= exact[0] - 1e-12               # a Rayleigh quotient: >= lam_min
        assert fast.lambda_min == pytest.approx(exact[0], rel=1e-3)
    else:
        assert fast.lambda_min == pytest.approx(exact[0], rel=RTOL)


def test_structural_zero_and_condition_number():
    kern = kernel("rope", N, head_dim=16)                         # rank <= 16 < N
    s = spectrum(kern.operator, psd=True, rank_bound=kern.rank_bound)
    assert s.lambda_min == 0 and s.sigma_min == 0 and s.cond == float("inf")
    zero = spectrum(kernel("nope", N).operator)
    assert zero.sigma_max == 0 and zero.method.startswith("structure")
    small = spectrum(kernel("alibi", 50).operator, full=True)
    ev = np.linalg.eigvalsh(kernel("alibi", 50).dense())
    assert small.method == DENSE_EIG and np.allclose(small.eigenvalues, ev)
    assert small.cond == pytest.approx(np.abs(ev).max() / np.abs(ev).min(), rel=1e-9)


def test_indefinite_lanczos_leaves_sigma_min_uncomputed_and_says_so():
    s = spectrum(kernel("alibi", N).operator)
    assert s.sigma_min is None and s.cond is None
    assert any("interior" in note for note in s.notes)


def test_dense_request_past_the_limit_is_a_user_error():
    with pytest.raises(PosencError, match="too large"):
        spectrum(ToeplitzOperator(np.ones(DENSE_LIMIT + 1)), method="dense")
    with pytest.raises(PosencError, match="method"):
        spectrum(ToeplitzOperator(np.ones(3)), method="fast")
