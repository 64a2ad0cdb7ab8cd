"""The exact sign-flip test beside each interval: a decision the t-interval makes on few seeds,
checked without its normality assumption.

A judged part has per-seed values ``d_1..d_n``, a threshold ``tau`` and a predicted side.  With
``x_s = d_s - tau`` (negated when the predicted side is "below", so that the predicted side is
always "above") the test's statistic is ``mean(x)``.  **The null: sign symmetry** -- each
``x_s`` is as likely to be ``-x_s`` as ``x_s``, the seeds independent (nothing is assumed of the
magnitudes).  Given ``|x|``, each of the ``2^n`` sign patterns ``g`` is then equally likely, so
over the patterns ``mean(g x)`` is the exact null distribution of the statistic, and

    p_predicted = #{g: mean(g x) >= mean(x)} / 2^n     (for a confirmation)
    p_other     = #{g: mean(g x) <= mean(x)} / 2^n     (for a decision against the claim)

satisfy ``P(p <= a) <= a`` under the null.  The patterns are those of
:func:`posenc.empirical.analysis.sign_flip.sign_patterns` (the sign-flip randomisation of Prop.
6.1's coherence): all ``2^n`` for ``n <= 10`` seeds (the identity first), else the identity and
1,999 patterns of fair signs from a fixed generator, which keeps ``P(p <= a) <= a``.

The smallest p is ``2^-n``: with 6 seeds, 1/64 = 0.016, below the one-sided 2.5% of a 95%
interval only when every seed lies on the decided side or the seeds off it are small; 5 of 6
seeds on the side give at least 2/64 = 0.031.  A conjunction (:mod:`.conjunction`) is checked
condition by condition at the level its interval used: a confirmation needs every condition's
``p_predicted <= 2.5%``, a decision against needs a condition decided against at the Bonferroni
level with ``p_other <= 2.5% / K`` (K conditions).

:func:`exact_check` says whether the test agrees with a part's decision; the report's
*replicated* needs that agreement and the interval's decision on both seed sets
(:mod:`posenc.report.replication`).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

#: the test's name, as the report's methods text gives it
TEST = "exact sign-flip test of the mean"


def sign_flip_p(values: Sequence[float], threshold: float = 0.0, predicted: str = "above"
                ) -> dict[str, Any]:
    """The two one-sided p-values of ``mean(values) - threshold`` under sign symmetry (module
    doc): ``p_predicted`` (the predicted side), ``p_other``, the number of patterns and whether
    they are all ``2^n`` (exact)."""
    import numpy as np

    from ..empirical.analysis.sign_flip import sign_patterns

    if predicted not in ("above", "below"):
        raise ValueError(f"predicted must be 'above' or 'below', not {predicted!r}")
    x = np.asarray([float(v) - threshold for v in values], dtype=np.float64)
    if predicted == "below":
        x = -x
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError("sign_flip_p needs one or more finite values")
    signs, exact = sign_patterns(int(x.size))
    means = signs @ x / x.size
    observed = float(means[0])  # row 0 is the identity
    tol = 1e-12 * max(float(np.abs(x).max()), 1.0)
    return {"p_predicted": float(np.mean(means >= observed - tol)),
            "p_other": float(np.mean(means <= observed + tol)),
            "patterns": int(len(means)), "exact": bool(exact)}


def exact_check(part: dict[str, Any], level: float = 0.95) -> Optional[dict[str, Any]]:
    """Whether the sign-flip test agrees with a judged part's decision: ``{"p", "alpha",
    "agrees"}`` (``p``: the p-value of the decided side -- for a conjunction the largest of its
    conditions' for a confirmation, the smallest of those decided against for a decision
    against; ``alpha``: the level it must reach), or None when the part is not decided
    (inconclusive, ceiling, shown) or carries no sign-flip p (a statistic judged against its
    run-to-run noise)."""
    decision, alpha = part.get("verdict"), (1 - level) / 2
    if decision not in ("confirmed", "against"):
        return None
    conds = part.get("conditions")
    if conds:
        flips = [c.get("sign_flip") for c in conds]
        if any(f is None for f in flips):
            return None
        if decision == "confirmed":
            p = max(f["p_predicted"] for f in flips)
        else:
            alpha = alpha / len(conds)
            decided = [f["p_other"] for c, f in zip(conds, flips) if c.get("against_at")]
            if not decided:
                return None
            p = min(decided)
    else:
        flip = part.get("sign_flip")
        if flip is None:
            return None
        p = flip["p_predicted"] if decision == "confirmed" else flip["p_other"]
    return {"p": p, "alpha": alpha, "agrees": p <= alpha + 1e-12}
