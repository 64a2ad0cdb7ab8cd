"""Claim S of Gu et al. (arXiv 2505.13027, v1): "multiplicative coupling (RoPE) stabilises
optimisation compared with the additive PEs", judged over matched phases of training.

The statistic before this one compared each run's gradient-norm CV over its whole training (up
to its kept epoch), i.e. windows of different training phases: under early stopping RoPE stops
at 8-12 epochs of the quick preset and ALiBi at 38-60, so RoPE's CV covered the warm-up and
the fast-learning phase while ALiBi's was mostly the late, low-learning-rate phase.  Here every
run of a seed is measured over **the same epochs, before any of them stopped**
(:func:`~posenc.empirical.training.trace.matched_epochs_cv`): with ``E_s`` the fewest epochs
that seed's RoPE run and additive runs trained, X = the mean over epochs 2..E_s of each epoch's
gradient-norm CV (sd / mean of the epoch's steps; epoch 1, the initial transient, left out).
An epoch is the same steps of the same learning-rate schedule in every run of a task (the
cosine runs over the maximum number of epochs, whichever epoch a run stops at).

**Primary:** ``d_s = min over additive PEs of X - X(rope)`` > 0 on distance.  Its null, the
claim's negation: some additive PE's gradient norm is no more variable than RoPE's over the
same epochs (``d_s <= 0``).  Shown, not judged: (b) the same difference of the whole-run CV
(the old statistic), (c) of the loss-spike rate.
"""

from __future__ import annotations

from typing import Any, Optional

from ..roles import ADDITIVE
from .accuracy_runs import UNIT, Runs, judged_part as _part
from .verdict import Verdict, verdict_from_parts

D = "distance"
NOT_TRACED = ("not recorded: {what} (runs trained before it was recorded; re-run them, or "
              "rebuild their summaries from trace.jsonl)")
ROLES = ("rope",) + ADDITIVE


#: epochs left out at the start of the matched window (warm-up): the trace's own
#: ``posenc.empirical.training.trace.MATCHED_SKIP`` (a test holds them equal; this module loads no torch)
MATCHED_SKIP = 1

def matched_cv_lead(runs: Runs, seed: int, roles: tuple[str, ...] = ROLES) -> Optional[dict[str, Any]]:
    """Seed ``seed``'s matched-phase CVs: ``{"epochs": E, "cv": {role: X}, "lead": min over the
    additive roles of X - X(roles[0])}``; None when a run lacks the per-epoch CVs, or the
    window is empty."""
    from ..empirical.training.trace import matched_epochs_cv  # (torch: not at import)
    per_epoch = [(runs.by[(D, r)][seed].trace or {}).get("grad_norm_epoch_cv") for r in roles]
    if any(p is None for p in per_epoch):
        return None
    means, last = matched_epochs_cv(per_epoch)
    if means is None or any(m is None for m in means):
        return None
    return {"epochs": last, "cv": dict(zip(roles, means)),
            "lead": min(means[1:]) - means[0]}


def _whole_run(runs: Runs, key: str):
    def stat(s: int) -> Optional[float]:
        vals = [(runs.by[(D, r)][s].trace or {}).get(key) for r in ROLES]
        return None if any(v is None for v in vals) else min(vals[1:]) - vals[0]
    return stat


def stability_verdict(runs: Runs) -> Verdict:
    """The verdict on S (module doc)."""
    def matched(s: int) -> Optional[float]:
        got = matched_cv_lead(runs, s)
        return None if got is None else got["lead"]
    primary = _part("matched-epoch grad-norm CV: additive - rope", runs, D, ROLES, matched,
                    0.0, "above", bounds=None,
                    missing_note=NOT_TRACED.format(what="no per-epoch gradient-norm CV, or no "
                                                        "epoch after the first that every run "
                                                        "trained"))
    primary["windows"] = [{"seed": s, **matched_cv_lead(runs, s)} for s in primary.get("seeds", [])]
    shown = [_part(name, runs, D, ROLES, _whole_run(runs, key), 0.0, "above",
                   bounds=None if key == "grad_norm_cv" else UNIT,
                   missing_note=NOT_TRACED.format(what="no training trace"))
             for name, key in (("whole-run grad-norm CV: additive - rope", "grad_norm_cv"),
                               ("spike rate: additive - rope", "spike_rate"))]
    return verdict_from_parts(
        "S", "Multiplicative coupling (RoPE) stabilises optimisation compared with the additive "
             "PEs (over the same epochs of training)",
        "min over additive PEs of X - X(rope): primary X = the gradient norm's per-epoch CV "
        f"(sd / mean), mean over epochs {MATCHED_SKIP + 1}..E, E the fewest epochs the seed's "
        "runs trained; shown (b) the windowed CV of each run's training up to its kept epoch "
        "(each run's own phases), (c) the "
        "loss-spike rate; distance",
        "v1: multiplicative coupling improves optimisation stability",
        [primary] + shown, digits=3, primary=0)
