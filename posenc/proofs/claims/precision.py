"""RoPE tables at large positions: an mpmath oracle for the numeric layer's float64 kernels.

RoPE (Su et al. 2021) rotates plane m at position p by p·θ_m, θ_m = base^(−2m/r).  At p up to
10^6 the angle is up to 10^6 rad and its rounding dominates the error of cos/sin tables.  The
claim checks the entries e^{iθ_m p} of the plane kernels E_m built by
:func:`posenc.numerics.kernels.kernel` against mpmath at 40 digits: computed in float64 they are
within 4·eps64·(p·θ_m + 1) of the exact value (θ_m and p·θ_m each rounded once, ≤ u(1+|ln θ_m|)
relative, plus the ≤ 1-ulp cos/sin).  The variant puts float32 tables in their place (θ_m and
p·θ_m rounded to float32, cos/sin evaluated in float32 -- what ``torch.arange(...).float()``
code does) and Hypothesis finds the smallest position where they miss the float64 bound.  The
report measures the float32 drift at p = 10^3 .. 10^6.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ...encodings import RoPE, Custom
from ..claim import NOT_APPLICABLE, Claim, SymbolicResult, Variant, require

EPS64 = float(np.finfo(np.float64).eps)
HEAD_DIM = 64
BASES = (10000.0, 500000.0)


def _exact(p: int, base: float, m: int, r: int) -> complex:
    import mpmath as mp
    with mp.workdps(40):
        ang = mp.mpf(p) * mp.power(mp.mpf(base), -mp.mpf(2 * m) / r)
        return complex(float(mp.cos(ang)), float(mp.sin(ang)))


def _theta(base: float, m: int) -> float:
    from ...numerics.conventions import rope_frequencies
    return float(rope_frequencies(RoPE(base=base), HEAD_DIM)[m])


def _numerics_entry(ex: dict) -> complex:
    from ...numerics.kernels import kernel
    # θ_m from numerics' RoPE convention; the one-plane kernel builds E_0 = e^{iθ k} by the same
    # code path as a RoPE kernel's plane(m), without the O(n·planes) average kernel (n ~ 10^6).
    theta = _theta(ex["base"], ex["m"])
    kern = kernel(Custom(frequencies=(theta,)), ex["p"] + 1, n_heads=1)
    return complex(kern.plane(0).column[ex["p"]])


def _float32_entry(ex: dict) -> complex:
    theta32 = np.float32(_theta(ex["base"], ex["m"]))
    ang = np.float32(ex["p"]) * theta32                      # float32 product, as torch does
    return complex(float(np.cos(ang)), float(np.sin(ang)))


def _checker(entry):
    def check(ex: dict) -> None:
        p, m = ex["p"], ex["m"]
        got, want = entry(ex), _exact(p, ex["base"], m, HEAD_DIM)
        err = abs(got - want)
        bound = 4 * EPS64 * (p * _theta(ex["base"], m) + 1)
        require(err <= bound, f"|E_m[p] − e^(iθ_m p)| = {err:.3g} > 4·eps64·(pθ_m + 1) = "
                              f"{bound:.3g} (θ_m = {_theta(ex['base'], m):.6g})")
    return check


def inputs():
    return st.fixed_dictionaries({"p": st.integers(0, 10**6), "m": st.integers(0, HEAD_DIM // 2 - 1),
                                  "base": st.sampled_from(BASES)})


def _report() -> dict:
    from ...numerics.kernels import kernel

    positions = (10**3, 10**4, 10**5, 10**6)
    e64, e32 = dict.fromkeys(positions, 0.0), dict.fromkeys(positions, 0.0)
    planes = range(0, HEAD_DIM // 2, 4)                       # every 4th plane: 8 kernels of 10^6
    for m in planes:
        theta = _theta(10000.0, m)
        column = kernel(Custom(frequencies=(theta,)), positions[-1] + 1, n_heads=1).plane(0).column
        for p in positions:
            want = _exact(p, 10000.0, m, HEAD_DIM)
            e64[p] = max(e64[p], abs(complex(column[p]) - want))
            e32[p] = max(e32[p], abs(_float32_entry({"p": p, "m": m, "base": 10000.0}) - want))
    rows = [f"p={p}: float64 {e64[p]:.1e}, float32 {e32[p]:.1e}" for p in positions]
    return {"max over planes m = 0, 4, .., 28 of |table − e^(iθ_m p)|, base 10000, d = 64 "
            "(mpmath oracle)":
            "; ".join(rows)}


CLAIMS = (
    Claim(
        id="rope-table-precision",
        title="RoPE kernel tables at positions up to 10^6 (mpmath oracle)",
        statement="The numeric layer's RoPE plane kernels E_m = e^{iθ_m p} at positions "
                  "p ≤ 10^6 are within 4·eps64·(p·θ_m + 1) of the exact value.",
        latex=r"\bigl|\widehat{E}_m[p]-e^{i\theta_m p}\bigr|\le 4\,\varepsilon_{64}\,(p\,\theta_m+1),"
              r"\quad p\le 10^6",
        source="new (precision of the numeric layer)",
        assumptions=("tables computed in float64", "θ_m = base^(−2m/r), r = 64"),
        strategy=inputs,
        check=_checker(_numerics_entry),
        symbolic=lambda: SymbolicResult(NOT_APPLICABLE, "a floating-point property; the oracle "
                                        "is mpmath at 40 digits"),
        variants=(Variant("tables computed in float64", inputs, check=_checker(_float32_entry),
                          note="float32 θ and p·θ, as torch code with .float() tables"),),
        describe=lambda ex: f"p={ex['p']}, plane m={ex['m']}, base={ex['base']:g}",
        reports=_report,
        layers=("numerics", "mpmath"),
    ),
)
