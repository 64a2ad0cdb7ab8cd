"""Claim S judged over matched phases (posenc.verdicts.stability): every run of a seed measured
over the same epochs, before any of them stopped."""

import pytest

from posenc.empirical.pipeline.experiment_result import ExperimentResult
from posenc.verdicts.accuracy_runs import Runs
from posenc.verdicts.stability import matched_cv_lead, stability_verdict

ROLES = ("rope", "absolute", "relative", "alibi")


def run(role, seed, epoch_cv, whole_cv=None, spikes=0.0):
    trace = {"grad_norm_epoch_cv": epoch_cv, "spike_rate": spikes,
             "grad_norm_cv": sum(epoch_cv) / len(epoch_cv) if whole_cv is None else whole_cv}
    return ExperimentResult.from_stored(
        {"summary": {"task": "distance", "pe": role, "seed": seed, "preset": "smoke",
                     "test_acc": 0.9, "n_test": 900, "tags": {"role": role}},
         "ablation": {}, "probe": {}, "trace": trace})


def phase_profile(epochs, jitter=0.0):
    """One per-epoch CV profile shared by every PE: the gradient norm gets noisier late in
    training (0.1 in epochs 1-10, 0.5 after)."""
    return [(0.1 if e < 10 else 0.5) + jitter for e in range(epochs)]


def test_s_compares_the_same_epochs_not_each_runs_own_phases():
    """RoPE stops after 8 epochs, the additive PEs train 40; every PE has the same per-epoch CV
    -- no PE is more stable than another.  Over each run's own training (the old statistic) the
    additive PEs' CV is larger (their late, noisy epochs count), which would confirm S; over the
    same epochs 2..8 the difference is 0 and S is not confirmed.  (Swapping the matched CV for
    the whole-run one makes this test fail.)"""
    results = []
    for s in range(4):
        j = 0.001 * s
        results.append(run("rope", s, phase_profile(8, j)))
        results += [run(r, s, phase_profile(40, j)) for r in ROLES[1:]]
    v = stability_verdict(Runs(results))
    matched, whole, _ = v.parts
    assert matched["values"] == pytest.approx([0.0] * 4, abs=1e-12)
    assert v.verdict != "confirmed"
    assert whole["verdict"] == "shown" and whole["values"][0] == pytest.approx(0.4 - 0.1)
    assert [w["epochs"] for w in matched["windows"]] == [8] * 4


@pytest.mark.parametrize("rope_cv,expected", [(0.2, "confirmed"), (0.6, "against")])
def test_s_both_ways_against_the_least_variable_additive_pe(rope_cv, expected):
    results = []
    for s in range(3):
        e = 0.01 * s
        results.append(run("rope", s, [1.0] + [rope_cv + e] * 11))
        results += [run(r, s, [1.0] + [0.4 + 0.1 * i] * 20) for i, r in enumerate(ROLES[1:])]
    v = stability_verdict(Runs(results))
    assert v.verdict == expected and v.parts[0]["primary"]
    # epochs 2..12 (the first left out; RoPE trained 12): against the smallest CV, 0.4
    assert v.parts[0]["values"][0] == pytest.approx(0.4 - rope_cv)
    lead = matched_cv_lead(Runs(results), 0)
    assert lead["epochs"] == 12 and lead["cv"]["alibi"] == pytest.approx(0.6)


def test_s_without_per_epoch_cvs_or_a_window_is_not_recorded():
    old = [ExperimentResult.from_stored(
        {"summary": {"task": "distance", "pe": r, "seed": s, "preset": "smoke", "test_acc": 0.9,
                     "n_test": 900, "tags": {"role": r}}, "ablation": {}, "probe": {},
         "trace": {"grad_norm_cv": 0.3, "spike_rate": 0.0}}) for r in ROLES for s in (0, 1)]
    v = stability_verdict(Runs(old))
    assert v.verdict == "inconclusive" and "not recorded" in v.parts[0]["note"]
    assert v.parts[1]["n"] == 2  # the whole-run CV is still shown
    one_epoch = [run(r, s, [0.3] if r == "rope" else [0.3, 0.2]) for r in ROLES for s in (0, 1)]
    v = stability_verdict(Runs(one_epoch))
    assert v.verdict == "inconclusive" and "no epoch after the first" in v.parts[0]["note"]


def test_the_matched_window_skips_what_the_trace_skips():
    """posenc.verdicts.stability loads no torch, so it states the trace's warm-up skip itself."""
    from posenc.empirical.training.trace import MATCHED_SKIP as traced
    from posenc.verdicts.stability import MATCHED_SKIP

    assert MATCHED_SKIP == traced
