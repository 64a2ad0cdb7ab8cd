"""``posenc reproduce --replicate``: a second, disjoint seed set in its own store, both verdicts of
each claim side by side, decided only where they agree; and the report folder's per-phase wall
times (timings.md)."""

import dataclasses
import json
from types import SimpleNamespace

import pytest

from posenc.cli import main
from posenc.report.replication import SECTION, agreement, replicated, replication_rows
from posenc.verdicts.words import verdict_word
from small_sweep import SMALL, posenc, replica_store


@pytest.mark.parametrize("first,second,expected", [
    ("confirmed", "confirmed", "confirmed"), ("against", "against", "against"),
    ("ceiling", "ceiling", "ceiling"), ("confirmed", "against", "not replicated"),
    ("confirmed", "ceiling", "not replicated"), ("confirmed", "inconclusive", "undecided"),
    ("inconclusive", "inconclusive", "undecided"), ("against", "missing", "undecided")])
def test_a_claim_is_decided_only_where_both_seed_sets_agree(first, second, expected):
    assert agreement(first, second) == expected


def _verdict(claim, decision, p=0.01, regime="paper-small", seeds=2):
    """A Verdict whose judged part's exact sign-flip p on its decided side is ``p``."""
    from posenc.verdicts.verdict import Verdict
    exact = None if decision not in ("confirmed", "against") else \
        {"p": p, "alpha": 0.025, "agrees": p <= 0.025}
    return Verdict(claim=claim, statement="s", statistic="t", paper="p",
                   measured=f"{claim}:{decision}", verdict=decision, seeds=seeds,
                   agreement="2/2", resolution="r", exact=exact, regime=regime)


def test_rows_follow_the_first_verdicts_and_name_a_missing_claim():
    v = _verdict
    rows = replication_rows([v("E10", "confirmed"), v("E11", "against")], [v("E10", "confirmed")])
    assert [r["claim"] for r in rows] == ["E10", "E11"]
    assert rows[0]["replicated"] == "confirmed at paper-small"
    assert rows[0]["replicated_decision"] == "confirmed"
    assert rows[0]["second_measured"] == "E10:confirmed"
    assert rows[1]["second"] == "missing" and rows[1]["replicated"] == "undecided"
    assert rows[1]["first"] == "not reproduced at paper-small"


@pytest.mark.parametrize("decision", ["confirmed", "against"])
def test_replicated_needs_the_sign_flip_test_on_both_sets(decision):
    """Both intervals decide the same way; the replicated word follows only when the exact test
    agrees on both sets (p <= 2.5%): a p of 0.031 on one set (5 of 6 seeds) leaves it
    undecided and names the set -- this test fails when the interval alone decides."""
    both = replicated(_verdict("E10", decision, 0.016), _verdict("E10", decision, 0.016),
                      ("seeds 0-5", "seeds 2000-2005"))
    assert both[0] == decision and both[1] == verdict_word(decision, "paper-small")
    one = replicated(_verdict("E10", decision, 0.016), _verdict("E10", decision, 0.031),
                     ("seeds 0-5", "seeds 2000-2005"))
    assert one[0] is None
    assert one[1] == "undecided (sign-flip p 0.031 > 0.025 on seeds 2000-2005)"
    # a decision with no exact test (a statistic judged against its run-to-run noise): undecided
    none = replicated(_verdict("E10", decision, 0.016), dataclasses.replace(
        _verdict("E10", decision), exact=None))
    assert none[0] is None and "no exact test on the second seed set" in none[1]


def test_a_ceiling_on_both_sets_stays_a_ceiling_and_names_its_regime():
    assert replicated(_verdict("E10", "ceiling", regime="quick"),
                      _verdict("E10", "ceiling", regime="quick")) == ("ceiling", "ceiling at quick")


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
    # the headline table: both seed sets' words and the replicated verdict, in bold
    assert "| verdict, seeds 0-1 | verdict, seeds 2000-2001 | replicated |" in report
    for row in data["replication"]:
        assert f"| {row['first']} | {row['second']} | **{row['replicated']}** |" in report
    # the replication's own full report carries the same section, pointing back
    back = (replica / "report" / "report.md").read_text()
    assert SECTION in back and f"(store `../{out.name}`," in back
    assert f"(store `../{replica.name}`," in report
    assert json.loads((replica / "report" / "report.json").read_text())["replication_store"] \
        == f"../{out.name}"
    for folder in (out, replica):  # no machine path in either report
        _assert_no_machine_path(folder / "report", out.parent)
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


def _assert_no_machine_path(report, root):
    """Neither report.md nor report.json names ``root`` (the stores' folder) or any absolute
    path of this machine's usual roots."""
    import re
    for name in ("report.md", "report.json"):
        text = (report / name).read_text()
        assert str(root.resolve()) not in text and str(root) not in text, name
        assert not re.search(r"(?<![\w.])/(tmp|home|root|work|Users|var|private)/", text), name


def test_no_machine_path_names_the_replica_or_the_other_report(tmp_path):
    """The replication section named the replica store by its absolute path; it (and --beside's
    report) is now named relative to the store."""
    from posenc.report.build import relative_to_store
    store = tmp_path / "runs" / "store"
    assert relative_to_store(tmp_path / "runs" / "store-replicate", store) == "../store-replicate"
    assert relative_to_store(store / "x" / "report.json", store) == "x/report.json"


def test_the_verdict_table_shows_both_words_and_the_replicated_one():
    from posenc.report.markdown import ReportInputs, _verdicts

    v = _verdict
    verdicts = [v("E10", "confirmed"), v("AL1", "confirmed")]
    rows = replication_rows(verdicts, [v("E10", "confirmed"), v("AL1", "inconclusive")])
    runs = [SimpleNamespace(seed=s, summary={"n_params": 18000, "pe": "rope"}) for s in (0, 1)]
    inp = ReportInputs(preset="smoke", results=runs, verdicts=verdicts, accuracy={}, deposits={},
                       strips=[], probes={}, theory_claims=None, spectra=[], measured_sections=[],
                       replicated=rows, replica_seeds=[2000, 2001])
    lines = _verdicts(inp)
    head = next(line for line in lines if line.startswith("| claim"))
    assert head.endswith("| sign-flip p | verdict, seeds 0-1 | verdict, seeds 2000-2001 | "
                         "replicated |")
    body = [line for line in lines if line.startswith(("| E10", "| AL1"))]
    assert body[0].endswith("| 0.010 | confirmed at paper-small | confirmed at paper-small | "
                            "**confirmed at paper-small** |")
    assert body[1].endswith("| confirmed at paper-small | inconclusive at paper-small | "
                            "**undecided** |")  # not bold alone
    cells = head.count(" |")
    assert all(line.count(" |") == cells for line in body)
    assert next(line for line in lines if line.startswith("|---")).count("|---") == cells
    plain = _verdicts(ReportInputs(**{**inp.__dict__, "replicated": [], "replica_seeds": []}))
    assert plain[-1].endswith("| r | 0.010 | **confirmed at paper-small** |")
    assert "replicated" not in plain[2]


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
    from posenc.reproduction.stores import replica_root
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
    from posenc.reproduction.plan import ReproductionPlan
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


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _paper_code(config, summary):
    config["train"]["model"]["code"] = "paper"
    summary["code"] = "paper"


def _rope_only(config, summary):
    return config["tags"]["role"] == "rope"


def _count_task(config, summary):
    config["train"]["task"]["name"] = summary["task"] = "count"


def _one_epoch(config, summary):
    config["train"]["epochs"] = 1


def _first_seeds(config, summary):  # back on the first store's seeds
    config["train"]["seed"] = summary["seed"] = config["train"]["seed"] - 2000


@pytest.mark.parametrize("change,fragment", [
    (_paper_code, "holds paper-code runs, not standard"),
    (_rope_only, "holds the roles rope on distance, not nope, rope on distance"),
    (_count_task, "holds the tasks count, not distance"),
    (_one_epoch, "differs in train.epochs of its distance/nope runs: 1, not 8"),
])
def test_report_refuses_a_replica_of_another_plan(tmp_path, small_store_copy, capsys, change,
                                                  fragment):
    """``report --replica`` put any store with other seeds into the replication table (a
    paper-code store, other roles or tasks, epochs=1: exit 0).  Now it runs the plan check of
    ``reproduce --replicate``: one line, exit 2, and the existing report byte-identical."""
    store = small_store_copy
    other = replica_store(store, tmp_path / "other", change)
    before = _files(store / "report")
    assert main(["report", str(store), "--no-theory", "--replica", str(other)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "every config field but the seed" in err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert _files(store / "report") == before
    assert not list(store.glob(".report.*"))


def test_the_plan_check_passes_the_same_plan_on_other_seeds(small_store):
    from posenc.report.build import _done_configs
    from posenc.report.replication import plan_difference
    first = _done_configs(small_store)
    moved = [{**c, "train": {**c["train"], "seed": c["train"]["seed"] + 2000}} for c in first]
    assert plan_difference(first, moved) is None
    assert plan_difference(first, moved[:1] + moved) is None  # seed counts may differ
    extra = {**first[0], "train": {**first[0]["train"], "lr": 0.5}}
    assert "lacks the distance/" in plan_difference(first + [extra], moved)


def test_a_refused_replicate_writes_no_store(tmp_path, small_store, capsys):
    """A ``reproduce --replicate`` refused for its replica store created the first store (empty)
    before refusing; now every check reads the stores as they are, and a refusal writes
    nothing."""
    replica_store(small_store, tmp_path / "s-replicate", _one_epoch)
    proc = posenc("reproduce", *SMALL, "--replicate", "--out", str(tmp_path / "s"), timeout=120)
    assert proc.returncode == 2 and "differs in train.epochs" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "s").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-replicate"]
    assert not (tmp_path / "s-replicate" / "index.sqlite").exists()
    # and a replica store sharing the first store's seeds: refused, no first store either
    shared = replica_store(small_store, tmp_path / "t-replicate", _first_seeds)
    assert main(["reproduce", *SMALL, "--replicate", "--out", str(tmp_path / "t")]) == 2
    assert "would share seeds [0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "t").exists() and shared.is_dir()
