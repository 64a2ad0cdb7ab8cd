"""``posenc reproduce --until-decided``: seeds go only to undecided claims' runs, a batch at a
time, up to the limit; a sweep killed with SIGKILL mid-round resumes to the same report."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from synthetic_runs import result

from posenc.reproduction.plan import ReproductionPlan
from posenc.errors import PosencError
from posenc.verdicts.dynamics import evaluate_dynamics
from posenc.verdicts.accuracy_deposit import evaluate
from posenc.reproduction.rounds import grow, until_decided
from posenc.verdicts.looks import RECORD, optional_stopping_text, read_record, write_record
from small_sweep import posenc

# count task: NoPE minus RoPE per seed, in points -- undecided at 2 and 4 seeds (t interval
# half-widths 25 and 3.0 around means 2.0 and 2.5), decided at 6 (2.67 +- 1.57)
NOPE_MINUS_ROPE = [4, 0, 4, 2, 3, 3, 1, 1, 1, 1]
DEPOSIT = {"rope": (0.6, 0.9)}  # (largest drop, deposit index); every other PE (0.1, 0.3)


def world(task, role, seed):
    """Constructed results: everything clear-cut except E11(a) on the count task."""
    # ALiBi 10 points below the other PEs on both tasks (AL1 and AL2 decided)
    if task == "distance":
        acc = {"rope": 0.9, "mla": 0.88, "rope-1head": 0.9, "rope-2heads": 0.9,
               "alibi": 0.4}.get(role, 0.5)
        acc += 0.001 * seed
    else:
        lift = NOPE_MINUS_ROPE[seed] / 100  # MLA keeps a steady 25-point lead over NoPE
        acc = {"nope": 0.70 + lift, "rope": 0.70, "mla": 0.95 + lift, "alibi": 0.4}.get(role, 0.5)
    # no deposit on the count task (negative control NC1 decided)
    drop, index = DEPOSIT.get(role, (0.1, 0.3)) if task == "distance" else (0.1, 0.3)
    return result(task, role, seed, acc, drop=drop, index=index)


def judge(results):
    return evaluate(results) + evaluate_dynamics(results)


def rounds_of(plan, batch, max_seeds, on_look=None):
    seen = []

    def run_round(counts):
        seen.append(dict(counts))
        return [world(t, r, s) for (t, r), n in counts.items() for s in range(n)]
    final = until_decided(plan.seed_counts(), run_round, judge, batch, max_seeds,
                          log=lambda m: None, on_look=on_look)
    return seen, final


def test_seeds_are_added_only_to_the_runs_of_undecided_claims():
    plan = ReproductionPlan.for_command("smoke", roles=["nope", "absolute", "relative", "alibi",
                                                       "rope", "mla", "rope-1head", "rope-2heads"])
    seen, final = rounds_of(plan, batch=2, max_seeds=10)
    grown = {k for k, n in final.items() if n != 2}
    assert grown == {("count", "nope"), ("count", "rope")}  # the runs of E11(a), nothing else
    assert [r[("count", "nope")] for r in seen] == [2, 4, 6]  # a batch at a time, decided at 6
    assert all(r[k] == 2 for r in seen for k in r if k not in grown)
    verdicts = {v.claim: v for v in judge([world(t, r, s) for (t, r), n in final.items()
                                           for s in range(n)])}
    assert verdicts["E11"].verdict == "confirmed" and verdicts["E10"].verdict == "confirmed"


def test_each_look_is_recorded_and_the_warning_names_the_looks_and_the_claims(tmp_path):
    """Optional stopping is warned of, not corrected: the record holds every look (written after
    each), the text gives their number, the union bound on the error and the claims that were
    given seeds; the report rebuilt from the store reads the same record."""
    plan = ReproductionPlan.for_command("smoke", roles=["nope", "absolute", "relative", "alibi",
                                                       "rope", "mla", "rope-1head", "rope-2heads"])
    written = []

    def on_look(looks):
        write_record(tmp_path, looks, 2, 10)
        written.append(len(read_record(tmp_path)["looks"]))
    rounds_of(plan, batch=2, max_seeds=10, on_look=on_look)
    assert written == [1, 2, 3]  # on disk after each look: a killed sweep leaves its looks
    record = read_record(tmp_path)
    assert [k["seeds"] for k in record["looks"]] == [2, 4, 6]
    assert [k["seeds_added_for"] for k in record["looks"]] == [["E11"], ["E11"], []]
    assert all("E11" in k["undecided"] for k in record["looks"][:2])
    text = optional_stopping_text(record)
    assert text.startswith("**Optional stopping: 3 looks.**")
    assert "up to 3 x 2.5% = 7.5% per side after 3 looks" in text
    assert "inconclusive at a look: E11." in text and "up to 10 per configuration, 2 at a time" in text
    one = dict(record, looks=record["looks"][-1:])
    assert "1 look." in optional_stopping_text(one) and "keeps its 95%" in optional_stopping_text(one)


def test_the_verdict_section_carries_the_warning():
    from types import SimpleNamespace

    from posenc.report.markdown import _verdicts
    def inputs(warning):  # no verdicts and no replication: the table's header and the warning
        return SimpleNamespace(verdicts=[], optional_stopping=warning, replicated=[],
                               replica_seeds=[], results=[], preset="quick")
    assert _verdicts(inputs("WARN"))[-2:] == ["", "WARN"]
    assert "WARN" not in _verdicts(inputs(None))


def test_a_store_without_a_record_has_none_and_a_bad_record_is_refused(tmp_path):
    assert read_record(tmp_path) is None
    for bad in ("{not json", '{"format": 1, "looks": []}', '{"format": 2, "looks": [{}]}',
                '{"format": 1, "seed_batch": 2, "max_seeds": 4, "looks": [{"look": 1}]}'):
        (tmp_path / RECORD).write_text(bad)
        with pytest.raises(PosencError, match="record of --until-decided"):
            read_record(tmp_path)


def test_seeds_stop_at_the_limit_and_never_exceed_it():
    plan = ReproductionPlan.for_command("smoke", roles=["nope", "absolute", "relative", "alibi",
                                                       "rope", "mla"], tasks=["count"])
    seen, final = rounds_of(plan, batch=3, max_seeds=4)
    assert [r[("count", "nope")] for r in seen] == [2, 4]  # 2 + 3 capped at 4, then stop
    assert final[("count", "nope")] == 4 and final[("count", "mla")] == 2


def test_a_part_without_runs_gets_no_seeds():
    # only RoPE on distance: E10 has no runs of the PEs it compares; no seeds can decide it
    plan = ReproductionPlan.for_command("smoke", roles=["rope"], tasks=["distance"])
    verdicts = judge([world("distance", "rope", s) for s in range(2)])
    assert grow(verdicts, plan.seed_counts(), 2, 10) == plan.seed_counts()


def test_limits_are_checked():
    counts = {("distance", "rope"): 3}
    with pytest.raises(PosencError, match="--max-seeds 2 is below the 3 seeds"):
        until_decided(counts, lambda c: [], judge, 2, 2)
    with pytest.raises(PosencError, match="--seed-batch must be a positive integer"):
        until_decided(counts, lambda c: [], judge, 0, 5)


# ------------------------------------------------------------------------------ end to end, kill -9

ARGS = ["--preset", "smoke", "--roles", "rope,mla", "--tasks", "distance", "--until-decided",
        "--max-seeds", "3", "--seed-batch", "1", "--set", "task.n_samples=1000", "--set",
        "epochs=4", "--no-theory"]


def _finished(store: Path) -> dict[str, tuple[bytes, int]]:
    return {p.parent.name: (p.read_bytes(), p.stat().st_mtime_ns)
            for p in (store / "runs").glob("*/result.json")}


@pytest.mark.slow
def test_until_decided_resumes_after_sigkill_to_the_same_report(tmp_path):
    ref = tmp_path / "ref"
    proc = posenc("reproduce", *ARGS, "--out", str(ref), timeout=900)
    assert proc.returncode == 0, proc.stderr
    # on smoke at this size RoPE stays within 5 points of chance, so the deposit parts are
    # inconclusive and take no seeds (the runs did not learn); Thm 6.1 stays undecided: a second
    # round adds seed 2 of RoPE, and of RoPE only
    assert "round 1: undecided" in proc.stdout and "seeds distance/rope 2->3\n" in proc.stdout
    assert len(_finished(ref)) == 5
    # optional stopping: warned of at the command and in the report's verdict section
    assert "warning: Optional stopping: 2 looks." in proc.stdout
    report = (ref / "report" / "report.md").read_text()
    verdicts = report.split("## Verdicts")[1].split("\n## ")[0]
    assert "**Optional stopping: 2 looks.**" in verdicts and "2 x 2.5% = 5.0%" in verdicts
    assert len(json.loads((ref / "report" / "report.json").read_text())["until_decided"]["looks"]) == 2

    store, log = tmp_path / "cut", tmp_path / "cut.log"
    with open(log, "w") as fh:
        sweep = subprocess.Popen([sys.executable, "-m", "posenc", "reproduce", *ARGS, "--out",
                                  str(store)], stdout=fh, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    deadline = time.time() + 600
    while "round 1:" not in log.read_text():  # round 2 is starting: kill it mid-round
        if sweep.poll() is not None or time.time() > deadline:
            pytest.fail("the sweep ended (or stalled) before round 2")
        time.sleep(0.05)
    time.sleep(1.0)
    os.killpg(sweep.pid, signal.SIGKILL)  # the sweep and its worker processes
    sweep.wait()
    before = _finished(store)
    assert len(before) == 4, "the kill did not land in round 2"
    resumed = posenc("reproduce", *ARGS, "--out", str(store), timeout=900)
    assert resumed.returncode == 0, resumed.stderr
    assert "skipped 4 finished" in resumed.stdout
    after = _finished(store)
    assert set(after) == set(_finished(ref))
    for rid, (content, mtime) in before.items():
        assert after[rid] == (content, mtime), f"finished run {rid} was redone or changed"
    assert (store / "report" / "report.md").read_text() == (ref / "report" / "report.md").read_text()


def test_a_round_reads_each_result_only_if_it_is_its_configs(tmp_path, monkeypatch):
    """The rounds judge the results run_plan returns: a finished run whose result.json says
    another seed than its config (a swapped or edited file) is refused by the sweep in one line,
    and redone only with ``retrain_incomplete`` (tests/empirical/pipeline/test_kept_files.py),
    and a result that is still not its config's when it is read is an error, not a number."""
    import json

    from posenc.empirical.pipeline import sweep
    from posenc.empirical.pipeline.store import RunStore, run_id
    from posenc.reproduction import run_plan

    plan = ReproductionPlan.for_command("smoke", seeds=1, roles=["nope"], tasks=["distance"],
                                        overrides={"task.n_samples": 200, "epochs": 1})
    store = RunStore(tmp_path / "store")
    (res,) = run_plan(plan, store, workers=1, log=lambda m: None, keep_checkpoints=True)
    (job,) = plan.jobs()
    seed = job.config["train"]["seed"]
    assert (res.task, res.role, res.seed) == ("distance", "nope", seed)
    path = store.run_dir(run_id(job.config)) / "result.json"

    def tamper():
        data = json.loads(path.read_text())
        data["summary"]["seed"] = seed + 1
        path.write_text(json.dumps(data))

    tamper()
    with pytest.raises(PosencError, match="lacks a readable result.json"):   # refused, not redone
        run_plan(plan, store, workers=1, log=lambda m: None, keep_checkpoints=True)
    (res,) = run_plan(plan, store, workers=1, log=lambda m: None, keep_checkpoints=True,
                      retrain_incomplete=True)  # redone when asked
    assert res.seed == seed and json.loads(path.read_text())["summary"]["seed"] == seed
    tamper()
    monkeypatch.setattr(sweep, "_intact", lambda store, rid, job: True)  # as if it read back
    with pytest.raises(PosencError, match="does not match its config"):
        run_plan(plan, store, workers=1, log=lambda m: None)


def test_a_part_shown_and_not_judged_gets_no_seeds():
    """E11's primary part (NoPE - RoPE on count) is decided; its shown part (MLA - best other,
    undecided on these seeds) must not pull seeds into the sweep."""
    counts = {("count", r): 2 for r in ("nope", "absolute", "relative", "alibi", "rope", "mla")}
    results = []
    for s in range(2):
        for r in counts:
            acc = {"nope": 0.80 + 0.001 * s, "rope": 0.70, "mla": 0.80 + 0.1 * (-1) ** s}
            results.append(result("count", r[1], s, acc.get(r[1], 0.5)))
    e11 = {v.claim: v for v in evaluate(results)}["E11"]
    assert e11.parts[0]["verdict"] == "confirmed" and e11.parts[1]["verdict"] == "shown"
    assert grow([e11], counts, 2, 10) == counts
