"""runs.csv's stopping columns (posenc.report.build._stopping_columns): empty where a run had no
early stopping, "unknown" where a run stored before the rule's outcome was recorded cannot say
whether it fired."""

from posenc.report.build import _stopping_columns


def test_a_run_without_early_stopping_has_empty_columns():
    cols = _stopping_columns({"epochs": 3})
    assert cols == {"max_epochs": "", "best_epoch": "", "fired": "", "stopped_early": "",
                    "diverged_step": ""}


def test_fired_is_read_and_unknown_for_an_old_run():
    stop = {"max_epochs": 60, "best_epoch": 12, "stopped_early": True}
    assert _stopping_columns({"early_stopping": {**stop, "fired": True}})["fired"] is True
    assert _stopping_columns({"early_stopping": {**stop, "fired": False}})["fired"] is False
    assert _stopping_columns({"early_stopping": stop})["fired"] == "unknown"



def test_a_run_written_by_the_removed_seed_groups_reads_as_any_other(tmp_path):
    """Runs trained by ``--seed-groups`` (removed; docs/usage.md) carry one more key,
    ``seed_group``, in train_summary.json and in the result's summary: both still read."""
    import json

    from posenc.empirical.pipeline.experiment_result import ExperimentResult
    from posenc.empirical.training.runs import RESULT, read_summary

    group = {"seeds": 3, "members": [0, 1, 2], "seconds": 10.0}
    (tmp_path / RESULT).write_text(json.dumps(
        {"final": {"test_acc": 0.5}, "best_test_acc": 0.5, "n_params": 10, "seconds": 3.3,
         "device": "cpu", "seed_group": group}))
    assert read_summary(tmp_path)["final"]["test_acc"] == 0.5
    summary = {"task": "distance", "pe": "rope", "seed": 1, "test_acc": 0.5, "epochs": 3,
               "tags": {"role": "rope"}, "seed_group": group}
    res = ExperimentResult.from_stored({"summary": summary, "ablation": {}})
    assert (res.task, res.role, res.seed, res.test_acc) == ("distance", "rope", 1, 0.5)
