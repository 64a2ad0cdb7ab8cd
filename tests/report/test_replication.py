"""``posenc reproduce --replicate``: a second, disjoint seed set in its own store, both verdicts of
each claim side by side, decided only where they agree; and the report folder's per-phase wall
times (timings.md)."""

import json
from types import SimpleNamespace

import pytest

from posenc.report.replication import SECTION, agreement, replication_rows
from small_sweep import SMALL, posenc


@pytest.mark.parametrize("first,second,expected", [
    ("confirmed", "confirmed", "confirmed"), ("refuted", "refuted", "refuted"),
    ("ceiling", "ceiling", "ceiling"), ("confirmed", "refuted", "not replicated"),
    ("confirmed", "ceiling", "not replicated"), ("confirmed", "inconclusive", "undecided"),
    ("inconclusive", "inconclusive", "undecided"), ("refuted", "missing", "undecided")])
def test_a_claim_is_decided_only_where_both_seed_sets_agree(first, second, expected):
    assert agreement(first, second) == expected


def test_rows_follow_the_first_verdicts_and_name_a_missing_claim():
    def v(claim, word):
        return SimpleNamespace(claim=claim, verdict=word, measured=f"{claim}:{word}")
    rows = replication_rows([v("E10", "confirmed"), v("E11", "refuted")], [v("E10", "confirmed")])
    assert [r["claim"] for r in rows] == ["E10", "E11"]
    assert rows[0]["replicated"] == "confirmed" and rows[0]["second_measured"] == "E10:confirmed"
    assert rows[1]["second"] == "missing" and rows[1]["replicated"] == "undecided"


@pytest.mark.slow
def test_replicate_runs_a_disjoint_seed_set_and_sets_the_verdicts_side_by_side(small_store_copy):
    """Into a copy of the SMALL store (conftest): its runs are found finished, the replica's
    seeds are trained into a store beside it."""
    out = small_store_copy
    proc = posenc("reproduce", *SMALL, "--replicate", "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "ran 0, skipped 4 finished" in proc.stdout, proc.stdout
    replica = out.parent / f"{out.name}-replicate"
    seeds = {json.loads(p.read_text())["train"]["seed"]
             for p in replica.glob("runs/*/experiment_config.json")} or {
        r["seed"] for r in _csv(replica / "report" / "runs.csv")}
    assert seeds == {2000, 2001}
    assert {r["seed"] for r in _csv(out / "report" / "runs.csv")} == {0, 1}
    report = (out / "report" / "report.md").read_text()
    assert SECTION in report and "seeds 2000-2001" in report and "seeds 0-1" in report
    data = json.loads((out / "report" / "report.json").read_text())
    assert [r["claim"] for r in data["replication"]] == [v["claim"] for v in data["verdicts"]]
    for row in data["replication"]:
        assert row["replicated"] == agreement(row["first"], row["second"])
    assert (replica / "report" / "report.md").is_file()  # the replication's own full report
    # per-phase wall time beside the report (never in report.md itself)
    timings = (out / "report" / "timings.md").read_text()
    for phase in ("training", "dynamics", "ablation", "probe", "report"):
        assert f"| {phase}" in timings
    rows = _csv(out / "report" / "runs.csv")
    assert all(float(r["training_seconds"]) > 0 and float(r["ablation_seconds"]) > 0 for r in rows)
    # the dynamics recording is timed apart from training, in the runs that record it only
    assert all((float(r["dynamics_seconds"]) > 0) == (r["role"] in ("rope", "alibi")
                                                       and r["task"] == "distance") for r in rows)
    # rebuilt from the two stores alone, the same section (no training)
    again = posenc("report", str(out), "--no-theory", "--replica", str(replica), timeout=300)
    assert again.returncode == 0, again.stderr
    assert (out / "report" / "report.md").read_text() == report
    # a replica that shares seeds with the first store is refused in one line
    shared = posenc("report", str(out), "--no-theory", "--replica", str(out), timeout=300)
    assert shared.returncode == 2 and "disjoint" in shared.stderr
    assert "Traceback" not in shared.stderr


def _csv(path):
    import csv
    return [{**r, "seed": int(r["seed"])} for r in csv.DictReader(path.open())]


@pytest.mark.parametrize("args,fragment", [
    (["--replicate", "--until-decided", "--max-seeds", "4"], "do not go together"),
    (["--replicate", "--replicate-first-seed", "1"], "overlap"),
    (["--replicate-first-seed", "3000"], "goes with --replicate"),
])
def test_bad_replicate_input_is_one_line(tmp_path, args, fragment):
    proc = posenc("reproduce", *SMALL, *args, "--out", str(tmp_path / "s"), timeout=120)
    assert proc.returncode == 2 and fragment in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "s").exists()


def test_the_replica_store_lies_beside_the_absolute_store_path(tmp_path, monkeypatch):
    """``--out .`` put the replica at '.-replicate' (``--out ..`` at '..-replicate' in the current
    folder) and ``--out /`` raised a raw ValueError: the path is resolved first, a root without a
    name is one line."""
    from posenc.errors import PosencError
    from posenc.report.orchestrate import replica_root
    monkeypatch.chdir(tmp_path)
    assert replica_root(".") == tmp_path.parent / f"{tmp_path.name}-replicate"
    assert replica_root("..") == tmp_path.parent.parent / f"{tmp_path.parent.name}-replicate"
    assert replica_root("store") == tmp_path / "store-replicate"
    with pytest.raises(PosencError, match="needs a store folder with a name"):
        replica_root("/")
    proc = posenc("reproduce", *SMALL, "--replicate", "--out", "/", timeout=120)
    assert proc.returncode == 2 and "needs a store folder with a name" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_replica_sharing_a_seed_already_in_the_first_store_is_refused_before_training(tmp_path):
    """The overlap check read the plans only: seeds an earlier sweep stored past the plan (here
    seed 8, beside the plan's 0-1) let a replica on seeds 8-9 train in full and fail at the
    report.  Now it is one line before any run, and the replica store holds no run."""
    from posenc.empirical.pipeline.reproduction import ReproductionPlan
    from posenc.empirical.pipeline.store import RunStore
    store = RunStore(tmp_path / "s")
    exp = ReproductionPlan.for_command("smoke", 1, roles=["nope"], tasks=["distance"]).experiments()[0]
    exp = exp.replace(train=exp.train.replace(seed=8))
    store.add(exp.to_dict(), "experiment", "distance/nope/s8")
    proc = posenc("reproduce", *SMALL, "--replicate", "--replicate-first-seed", "8",
                  "--out", str(tmp_path / "s"), timeout=120)
    assert proc.returncode == 2 and "share seeds [8]" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not any((tmp_path / "s-replicate" / "runs").glob("*/result.json"))
    assert not any((tmp_path / "s" / "runs").glob("*/result.json"))
