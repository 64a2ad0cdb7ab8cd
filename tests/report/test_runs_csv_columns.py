"""runs.csv's stopping and seed-group columns (posenc.report.build._stopping_columns): empty where
a run had no early stopping or trained alone, "unknown" where a run stored before the rule's
outcome was recorded cannot say whether it fired."""

from posenc.report.build import _stopping_columns


def test_a_run_without_early_stopping_has_empty_columns():
    cols = _stopping_columns({"epochs": 3})
    assert cols == {"max_epochs": "", "best_epoch": "", "fired": "", "stopped_early": "",
                    "diverged_step": "", "seed_group": ""}


def test_fired_is_read_and_unknown_for_an_old_run():
    stop = {"max_epochs": 60, "best_epoch": 12, "stopped_early": True}
    assert _stopping_columns({"early_stopping": {**stop, "fired": True}})["fired"] is True
    assert _stopping_columns({"early_stopping": {**stop, "fired": False}})["fired"] is False
    assert _stopping_columns({"early_stopping": stop})["fired"] == "unknown"


def test_the_seed_group_column_is_the_groups_size():
    assert _stopping_columns({"seed_group": {"seeds": 6, "members": list(range(6)),
                                             "seconds": 10.0}})["seed_group"] == 6
