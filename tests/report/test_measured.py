"""The report section behind verdicts EH, S and RA (posenc.report.measured): means over seeds,
sites in order, and runs stored before the recordings existed shown as not recorded."""

import pytest

from posenc.empirical.pipeline.experiment_result import ExperimentResult
from posenc.report.measured import SECTION, measured_markdown


def res(task, role, seed, share=None, trace=None, schedule=None):
    out = {"summary": {"task": task, "role": role, "seed": seed, "tags": {"role": role},
                       **({"schedule": schedule.to_dict()} if schedule else {})},
           "probe": {"probe_r2": {"embed": 1.0}}}
    if share is not None:
        out["probe"].update(pe_span_share=share, pe_span_chance=0.25)
    if trace is not None:
        out["trace"] = trace
    return ExperimentResult.from_stored(out)


def test_old_results_are_shown_as_not_recorded():
    lines, payload = measured_markdown([res("distance", "absolute", 0), res("count", "rope", 0)])
    assert lines[0] == SECTION
    assert sum("(not recorded in these runs)" in x for x in lines) == 3
    assert payload == {"pe_span_share": {}, "trace": {}, "relative_table": {}}


def test_means_over_seeds_and_site_order():
    share = [{"block1": 0.2 + 0.1 * s, "embed": 0.9, "block0": 0.5} for s in (0, 1)]
    tr = [{"grad_norm_cv": 0.1 * (s + 1), "spike_rate": 0.0, "steps_to_90": 0.5,
           "tables": {"centred_rms": [0.02, 0.04 + 0.02 * s], "log_attenuation": 0.7}}
          for s in (0, 1)]
    results = [res("distance", "absolute", s, share=share[s]) for s in (0, 1)] + \
        [res("count", "relative", s, trace=tr[s]) for s in (0, 1)]
    lines, payload = measured_markdown(results)
    text = "\n".join(lines)
    assert "| PE (role) | chance | embed | block0 | block1 |" in text
    assert "| absolute | 0.25 | 0.900 | 0.500 | 0.250 |" in text
    assert "| count | relative | 2 | 0.150 | 0.000 | 0.500 |" in text
    assert "- count: 0.02 → 0.05" in text
    assert payload["trace"]["count/relative"][1]["grad_norm_cv"] == pytest.approx(0.2)


def test_the_relative_table_is_shown_with_its_drift_null():
    """RA's numbers: the mean log change A and the drift null A_null of the same runs (each
    run's schedule and steps); runs read without a schedule are left out of that line."""
    from posenc.empirical.training.schedule import OptimizerSchedule
    from posenc.verdicts.drift_null import null_attenuation
    sched = OptimizerSchedule(lr=1e-2, betas=(0.9, 0.98), weight_decay=0.0, warmup_frac=0.1,
                              epochs=5, steps_per_epoch=10)
    tr = [{"steps": 50 - 10 * s, "tables": {"centred_rms": [0.02, 0.05], "log_attenuation": 0.9}}
          for s in (0, 1)]
    results = [res("count", "relative", s, trace=tr[s], schedule=sched) for s in (0, 1)]
    lines, payload = measured_markdown(results + [res("distance", "relative", 0, trace=tr[0])])
    null = (null_attenuation(sched, 50) + null_attenuation(sched, 40)) / 2
    assert f"- count: A = log(final / initial) +0.900; drift null A_null {null:+.3f}" \
        in "\n".join(lines)
    assert not any(x.startswith("- distance: A =") for x in lines)
    assert payload["relative_table_drift"]["count"][1] == \
        pytest.approx([0.9, null_attenuation(sched, 40)])
