"""timings.md says which runs' seconds miss the epochs before a resume (their checkpoint held
no times), and runs.csv's columns say it per run."""

import json

from posenc.empirical.training.runs import RESULT
from posenc.report.build import _resumed_columns, _summary_timing, _write_timings


def _row(label, summary, timed_epochs=None, stored_resumed=None):
    return {"label": label, "training_seconds": 10.0, "dynamics_seconds": 0.0,
            "ablation_seconds": 1.0, "probe_seconds": 1.0,
            **_resumed_columns({"epochs": 15, **summary}, timed_epochs, stored_resumed)}


def test_timings_name_the_runs_whose_earlier_seconds_are_not_counted(tmp_path):
    rows = [_row("distance/rope/s0", {}),
            _row("distance/mla/s3", {"resumed": {"from_epoch": 6, "earlier_seconds": None}}),
            _row("distance/alibi/s3", {"resumed": {"from_epoch": 2, "earlier_seconds": 40.5}})]
    assert [(r["resumed_from_epoch"], r["earlier_seconds_counted"]) for r in rows] == \
        [("", ""), (6, "no"), (2, "yes")]
    _write_timings(tmp_path / "timings.md", rows, 1.0)
    text = (tmp_path / "timings.md").read_text()
    assert "Short: 1 run(s) resumed" in text and text.rstrip().endswith(": distance/mla/s3.")
    _write_timings(tmp_path / "t2.md", [rows[0], rows[2]], 1.0)
    assert "Short" not in (tmp_path / "t2.md").read_text()


def test_a_run_resumed_before_posenc_recorded_it_is_known_by_its_epoch_seconds(tmp_path):
    """Runs resumed by posenc before 2026-12-06 carry no ``resumed`` record; their summary's
    per-epoch seconds cover only the epochs trained after the resume (two paper-small seed-3
    runs: 8 of 15 and 17 of 23), which names them short too."""
    rows = [_row("distance/absolute+rope/s3", {}, timed_epochs=8),
            _row("distance/rope/s3", {}, timed_epochs=15),
            _row("distance/nope/s3", {}, timed_epochs=None),
            _row("distance/mla/s3", {"resumed": {"from_epoch": 6, "earlier_seconds": 9.0}}, 9),
            # found finished before 2026-12-06: result.json lost the record, the summary kept it
            _row("distance/alibi/s3", {}, 15, {"from_epoch": 4, "earlier_seconds": 30.0})]
    assert [(r["resumed_from_epoch"], r["earlier_seconds_counted"]) for r in rows] == \
        [(7, "no"), ("", ""), ("", ""), (6, "yes"), (4, "yes")]
    _write_timings(tmp_path / "timings.md", rows, 1.0)
    assert (tmp_path / "timings.md").read_text().rstrip().endswith(
        "Short: 1 run(s) resumed from a checkpoint that did not hold the seconds of its epochs "
        "count only those trained after it: distance/absolute+rope/s3.")


def test_summary_timing_reads_the_run_summary(tmp_path):
    summary = {"status": "finished", "run_id": "x", "final": {"test_acc": 0.5},
               "best_test_acc": 0.5, "n_params": 1, "seconds": 3.0, "device": "cpu",
               "epoch_seconds": [1.0, 2.0]}
    (tmp_path / RESULT).write_text(json.dumps(summary))
    assert _summary_timing(tmp_path) == (2, None)
    resumed = {"from_epoch": 1, "earlier_seconds": 1.0}
    (tmp_path / RESULT).write_text(json.dumps(dict(summary, epoch_seconds=[], resumed=resumed)))
    assert _summary_timing(tmp_path) == (None, resumed)
    assert _summary_timing(tmp_path / "absent") == (None, None)
    (tmp_path / RESULT).write_text("{broken")
    assert _summary_timing(tmp_path) == (None, None)
