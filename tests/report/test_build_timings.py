"""timings.md says which runs' seconds miss the epochs before a resume (their checkpoint held
no times), and runs.csv's columns say it per run."""

from posenc.report.build import _resumed_columns, _write_timings


def _row(label, summary):
    return {"label": label, "training_seconds": 10.0, "dynamics_seconds": 0.0,
            "ablation_seconds": 1.0, "probe_seconds": 1.0, **_resumed_columns(summary)}


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
