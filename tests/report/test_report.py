"""``posenc reproduce`` end to end: the smoke report, kill -9 and resume, and the Ray backend."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from posenc.empirical.analysis.dynamics import dynamics_file
from posenc.report import FIGURES, SECTIONS
from posenc.verdicts.verdict import VERDICTS
from posenc.verdicts.words import verdict_word
from small_sweep import SMALL, posenc

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def smoke_store(tmp_path_factory):
    """The whole smoke preset, made once per session (a module fixture was made twice under
    xdist: another group's test of this file, run between, tore it down)."""
    out = tmp_path_factory.mktemp("smoke") / "store"
    proc = posenc("reproduce", "--preset", "smoke", "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    return out


def test_smoke_report_is_complete(smoke_store):
    report = (smoke_store / "report" / "report.md").read_text()
    for section in SECTIONS:
        assert section in report
    for fig in FIGURES:
        assert (smoke_store / "report" / fig).stat().st_size > 1000
        assert f"({fig})" in report
    data = json.loads((smoke_store / "report" / "report.json").read_text())
    claims = {v["claim"] for v in data["verdicts"]}
    assert claims == {"E10", "E10 (with MLA)", "E11", "E12", "E13", "E14", "EH", "Prop 6.1",
                      "Prop 6.2", "Thm 6.1", "NC1", "NC2 (layer 0)", "NC2 (layer 1)",
                      "NC2 (shallower half)", "NC3", "S", "RA", "AD", "MX",
                      "AL1 (learns nothing)", "AL1 (worst)", "AL2"}
    for v in data["verdicts"]:  # the word names the regime; the decision is kept beside it
        assert v["decision"] in VERDICTS and v["regime"] == "smoke"
        assert v["verdict"] == verdict_word(v["decision"], "smoke")
        assert f"**{v['verdict']}**" in report and "refuted" not in v["verdict"]
    assert set(data["accuracy"]) == {"distance", "count"}
    # the smoke preset trains without early stopping: the plateau part cannot tell
    crit = {c["name"]: c for c in data["trained_criterion"]}
    assert list(crit) == ["(a) plateau", "(b) distance", "(b') ceiling", "(c) count",
                         "(c') count ceiling"]
    assert crit["(a) plateau"]["met"] is None
    # both tasks' clean samplers: every label is a function of the input
    assert [(c["task"], c["sampler"], c["accuracy"]) for c in data["bayes_ceiling"]] == \
        [("count", "clean", 100.0), ("distance", "clean", 100.0)]
    assert "best possible accuracy (Bayes ceiling) of each task: count (clean sampler) 100.0%" \
        in report
    assert "| distance | rope | 2 | no early stopping |" in report
    # Sec. 6: recorded in the distance runs of RoPE and ALiBi, two seeds each, nowhere else
    dyn = data["dynamics"]
    assert sorted((r["role"], r["seed"]) for r in dyn["runs"]) == \
        [("alibi", 0), ("alibi", 1), ("rope", 0), ("rope", 1)]
    assert set(dyn["prediction"]) == {"alibi", "rope"}
    for role, row in dyn["prediction"].items():
        assert row["seeds"] == [0, 1] and row["signal"]["n"] == 2
        assert f"| {role} | " in report.split("## Training dynamics")[1]
    by = {v["claim"]: v for v in data["verdicts"]}
    assert by["Prop 6.1"]["seeds"] == 2 and by["Thm 6.1"]["seeds"] == 2
    from posenc.reproduction.plan import COUNT_ROLES, DISTANCE_ROLES
    assert len(data["accuracy"]["distance"]) == len(DISTANCE_ROLES)
    assert len(data["accuracy"]["count"]) == len(COUNT_ROLES)
    # the new measurements are recorded by a fresh sweep: every part measured on both seeds
    for claim in ("EH", "NC1", "NC2 (layer 0)", "S", "RA", "Prop 6.2"):
        assert all(p["n"] == 2 for p in by[claim]["parts"]), by[claim]
    assert by["Prop 6.2"]["parts"][0]["null"][0]["n"] >= 1
    assert set(data["measured"]["pe_span_share"]) >= {"absolute", "absolute+rope"}
    assert "## Claims measured as the paper states them" in report
    from posenc.proofs.registry import all_claims
    assert [c["claim"] for c in data["theory_claims"]] == [c.id for c in all_claims()]
    assert all(c["holds"] and c["counterexamples_found"] == c["counterexamples_expected"]
               for c in data["theory_claims"])
    ratios = [r["ratio_multiplicative"] for r in data["spectra"]]
    assert all(r <= 1 for r in ratios) and data["spectra"][-1]["ratio_additive"] > 100


def test_report_rebuilds_identically_without_training(smoke_store):
    before = (smoke_store / "report" / "report.md").read_text()
    proc = posenc("report", str(smoke_store), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (smoke_store / "report" / "report.md").read_text() == before


def test_runs_lists_the_store(smoke_store):
    proc = posenc("runs", str(smoke_store))
    assert proc.returncode == 0
    from posenc.reproduction.plan import COUNT_ROLES, DISTANCE_ROLES
    n = 2 * (len(DISTANCE_ROLES) + len(COUNT_ROLES))  # the smoke preset's 2 seeds
    assert f"{n} done, 0 pending, 0 running, 0 failed" in proc.stdout


def _finished(store: Path) -> dict[str, tuple[bytes, int]]:
    return {p.parent.name: (p.read_bytes(), p.stat().st_mtime_ns)
            for p in (store / "runs").glob("*/result.json")}


def test_sigkill_mid_sweep_then_resume_loses_nothing(tmp_path, small_store):
    store = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-m", "posenc", "reproduce", *SMALL, "--out", str(store)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while not ((store / "runs").exists() and _finished(store)):
        if proc.poll() is not None or time.time() > deadline:
            pytest.fail("the sweep ended (or stalled) before it could be killed")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its worker processes
    proc.wait()
    before = _finished(store)
    assert 1 <= len(before) < 4, "kill came too late to interrupt the sweep"
    # a finished run's checkpoint is dropped at its commit; one of a run in flight
    # goes too, as it would from a store committed to git at this point
    assert not list((store / "runs").glob("*/checkpoint.pt"))
    for path in store.rglob("checkpoint.pt"):
        path.unlink()
    resumed = posenc("reproduce", *SMALL, "--out", str(store), timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert f"skipped {len(before)} finished" in resumed.stdout
    after = _finished(store)
    assert len(after) == 4
    for rid, (content, mtime) in before.items():
        assert after[rid] == (content, mtime), f"finished run {rid} was redone or changed"
    listing = posenc("runs", str(store)).stdout
    assert "4 done, 0 pending, 0 running, 0 failed" in listing
    assert not (store / "staging").exists() and not list(store.rglob("checkpoint.pt"))
    # the report of the uninterrupted sweep, byte for byte: text, JSON and every figure
    # (runs.csv and timings.md hold wall-clock times)
    names = sorted(p.name for p in (small_store / "report").iterdir()
                   if p.name not in ("runs.csv", "timings.md"))
    assert {"report.md", "report.json", *FIGURES} <= set(names)
    assert sorted(p.name for p in (store / "report").iterdir()
                  if p.name not in ("runs.csv", "timings.md")) == names
    for name in names:
        assert (store / "report" / name).read_bytes() == \
            (small_store / "report" / name).read_bytes(), name


def _epoch_of(checkpoint: Path) -> int:
    import torch
    return int(torch.load(checkpoint, map_location="cpu", weights_only=False)["epoch"])


def test_sigkill_mid_run_resumes_the_run_from_its_staging_checkpoint(tmp_path, small_store):
    """A sweep stopped while a run trains (the checkpoint in its staging folder is written after
    each epoch) resumes that run from the checkpoint -- it does not start it over -- and the
    report is the uninterrupted sweep's, byte for byte."""
    store = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-m", "posenc", "reproduce", *SMALL, "--out", str(store)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while not list(store.glob("staging/*/checkpoint.pt")):
        if proc.poll() is not None or time.time() > deadline:
            pytest.fail("the sweep ended (or stalled) before a run had a checkpoint")
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    left = {p.parent.name.partition(".")[0]: _epoch_of(p)
            for p in (store / "staging").glob("*/checkpoint.pt")}
    assert left and all(1 <= e < 8 for e in left.values()), left  # smoke: 8 epochs, mid-run
    resumed = posenc("reproduce", *SMALL, "--out", str(store), timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert f"({len(left)} resumed from the checkpoint of a sweep that ended mid-run)" \
        in resumed.stdout, resumed.stdout
    assert not (store / "staging").exists() and not list(store.rglob("checkpoint.pt"))
    names = sorted(p.name for p in (small_store / "report").iterdir()
                   if p.name not in ("runs.csv", "timings.md"))
    for name in names:
        assert (store / "report" / name).read_bytes() == \
            (small_store / "report" / name).read_bytes(), name
    for rid in left:  # the resumed runs' files are the uninterrupted runs' (the trace dropped)
        for f in ("metrics.jsonl", "ablation_zero.json", "probe.json"):
            assert (store / "runs" / rid / f).read_bytes() == \
                (small_store / "runs" / rid / f).read_bytes(), (rid, f)
    # their seconds count every epoch, the earlier ones from the checkpoint (2026-12-06)
    import csv
    rows = {r["run"]: r for r in csv.DictReader((store / "report" / "runs.csv").open())}
    for rid, epoch in left.items():
        summary = json.loads((store / "runs" / rid / "result.json").read_text())["summary"]
        assert summary["resumed"]["from_epoch"] == epoch and summary["resumed"]["earlier_seconds"] > 0
        assert summary["seconds"] > summary["resumed"]["earlier_seconds"]
        assert (rows[rid]["resumed_from_epoch"], rows[rid]["earlier_seconds_counted"]) == \
            (str(epoch), "yes")
    assert "Short:" not in (store / "report" / "timings.md").read_text()


def test_a_run_keeps_its_kept_files_alone_and_a_store_of_before_reports_the_same(small_store,
                                                                               small_store_copy,
                                                                               capsys):
    """A finished run's folder holds what kept_files lists (its dynamics
    compressed), config.json and run.json -- no checkpoint, trace or strip plot -- and the report
    needs nothing else; the same store with its dynamics files plain (as a store written before
    holds them) reports byte for byte as the store it was made from; a dynamics file of another
    run is refused."""
    import gzip

    from posenc.cli import main
    from posenc.empirical.pipeline.kept_files import kept_files
    store = small_store_copy
    plain = 0
    for run in sorted((store / "runs").iterdir()):
        kept = kept_files(json.loads((run / "result.json").read_text()))
        held = {p.name for p in run.iterdir()}
        assert held == {f"{n}.gz" if n == "dynamics.jsonl" else n for n in kept} | \
            {"config.json", "run.json"}, run.name
        packed = dynamics_file(run)
        if packed is not None:
            (run / "dynamics.jsonl").write_bytes(gzip.decompress(packed.read_bytes()))
            packed.unlink()
            plain += 1
    assert plain == 2  # the rope runs record dynamics
    assert main(["report", str(store), "--no-theory"]) == 0
    names = sorted(p.name for p in (small_store / "report").iterdir()
                   if p.name not in ("runs.csv", "timings.md"))
    for name in names:
        assert (store / "report" / name).read_bytes() == \
            (small_store / "report" / name).read_bytes(), name
    # and a run's dynamics file is read as that run's: two swapped are refused in one line
    first, second = (r / "dynamics.jsonl" for r in sorted((store / "runs").iterdir())
                     if dynamics_file(r))
    data = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(data)
    assert main(["report", str(store), "--no-theory"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds the dynamics of rope on distance, seed" in err, err
    assert "not of the run it is in (rope on distance, seed" in err


def test_a_store_without_checkpoints_lists_reports_and_refuses_what_needs_weights(small_store_copy,
                                                                                  capsys):
    """`posenc reproduce` drops each run's checkpoint after its analysis; the store still
    lists its runs as finished, and whatever needs weights says why it cannot (in process: a
    child's imports cost seconds each)."""
    from posenc.cli import main
    store = small_store_copy
    runs = sorted((store / "runs").iterdir())
    assert len(runs) == 4 and not list(store.rglob("checkpoint.pt"))
    assert main(["runs", str(store)]) == 0
    assert "4 done, 0 pending, 0 running, 0 failed" in capsys.readouterr().out
    files = {p: p.read_bytes() for p in store.rglob("*") if p.is_file() and "index" not in p.name}
    rope = next(r for r in runs if dynamics_file(r))
    why = "was stored without its checkpoint (posenc reproduce drops it after the analysis; " \
          "--keep-checkpoints keeps it)"
    seed = str(json.loads((rope / "train_config.json").read_text())["seed"])
    for args in (["ablate", str(rope)],
                 ["dynamics", str(rope), "--record", "--preset", "smoke", "--seed", seed]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert why in err and err.count("\n") == 1 and "Traceback" not in err, err
    import posenc as api
    with pytest.raises(api.PosencError, match=why.replace("(", r"\(").replace(")", r"\)")):
        api.load_run(rope)
    assert {p: p.read_bytes() for p in files} == files  # nothing re-trained or rewritten


@pytest.mark.parametrize("flag, keep", [([], False), (["--keep-checkpoints"], True)])
def test_keep_checkpoints_reaches_the_sweep(tmp_path, monkeypatch, flag, keep):
    """--keep-checkpoints (reproduce(keep_checkpoints=True)) keeps them; the default drops them."""
    import posenc.reproduction.run as orchestrate
    from posenc.cli import main
    seen = []
    monkeypatch.setattr(orchestrate, "run_plan", lambda plan, store, **kw: seen.append(kw))
    monkeypatch.setattr(orchestrate, "build_report", lambda root, **kw: Path(root) / "report.md")
    assert main(["reproduce", *SMALL, *flag, "--replicate", "--out", str(tmp_path / "s")]) == 0
    assert [kw["keep_checkpoints"] for kw in seen] == [keep, keep]  # the replica's sweep too


def test_a_finished_run_missing_a_kept_file_is_refused_not_retrained(small_store_copy, capsys):
    """A run folder that lacks a kept file: report and reproduce refuse the store in one line
    naming the run, its folder and the file, and train nothing (only --retrain-incomplete
    would)."""
    from posenc.cli import main
    store = small_store_copy
    run = next(r for r in sorted((store / "runs").iterdir()) if dynamics_file(r))
    label = json.loads((run / "run.json").read_text())["label"]
    (run / "ablation_zero.json").unlink()
    result = (run / "result.json").read_bytes()
    for args in (["report", str(store)], ["reproduce", *SMALL, "--out", str(store)]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert f"run {label} ({run}) lacks ablation_zero.json" in err, err
        assert "--retrain-incomplete" in err
    assert (run / "result.json").read_bytes() == result and not (run / "ablation_zero.json").exists()
    assert not (store / "staging").exists()


@pytest.mark.ray_cluster
def test_ray_backend_matches_local(tmp_path, small_store):
    pytest.importorskip("ray")
    store = tmp_path / "ray"
    args = ["--preset", "smoke", "--roles", "rope", "--tasks", "distance", "--seeds", "2", "--no-theory"]
    proc = posenc("reproduce", *args, "--backend", "ray", "--out", str(store), timeout=600)
    assert proc.returncode == 0, proc.stderr
    ray_runs = _finished(store)
    assert len(ray_runs) == 2
    for rid in ray_runs:
        a = json.loads((store / "runs" / rid / "result.json").read_text())
        b = json.loads((small_store / "runs" / rid / "result.json").read_text())
        assert a["ablation"] == b["ablation"] and a["probe"] == b["probe"]
        assert a["summary"]["test_acc"] == b["summary"]["test_acc"]
        assert not (store / "runs" / rid / "checkpoint.pt").exists()  # dropped


@pytest.mark.parametrize("args,fragment", [
    (["--preset", "huge"], "unknown preset"),
    (["--backend", "slurm"], "unknown backend"),
    (["--roles", "rope,bogus"], "unknown PE role"),
    (["--count-seeds", "0"], "--count-seeds must be a positive integer"),
    (["--max-seeds", "4"], "--max-seeds and --seed-batch go with --until-decided"),
    (["--until-decided"], "--until-decided needs --max-seeds N"),
    (["--until-decided", "--max-seeds", "1"], "--max-seeds 1 is below the 6 seeds"),
    (["--first-seed", "-1"], "--first-seed must be an integer"),
    (["--backend", "ray", "--ray-address", "127.0.0.1:9", "--roles", "rope", "--tasks", "distance"],
     "cannot reach the Ray cluster"),
    # the quick distance task has 42 classes; paper-code mode raises the vocabulary to them, a
    # smaller one the user sets is refused before any run starts
    (["--paper-code", "--set", "task.vocab_size=41"],
     "paper-code mode classifies over the vocabulary (41 tokens)"),
])
def test_bad_reproduce_input(tmp_path, args, fragment):
    proc = posenc("reproduce", *args, "--out", str(tmp_path / "s"), timeout=300)
    assert proc.returncode == 2 and fragment in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("setting,fragment", [
    ('model.pe="alibi"', "set the PE (--pe, --roles)"), ("seed=5", "set the seed"),
    ("task=1", "set the task"), ("pe=alibi", "unknown config key 'pe'"),
    ("name=x", "unknown config key 'name'"), ("lr=Infinity", "lr must be a finite number > 0"),
    ('task.sampler="code"', "task.sampler must be one of clean, paper; got 'code'")])
def test_a_bad_override_is_refused_before_the_store_is_made(tmp_path, setting, fragment):
    proc = posenc("reproduce", "--preset", "smoke", "--set", setting, "--out", str(tmp_path / "s"))
    assert proc.returncode == 2 and fragment in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "s").exists()


def test_unwritable_out_and_newer_store(tmp_path):
    (tmp_path / "file").write_text("x")
    proc = posenc("reproduce", "--out", str(tmp_path / "file" / "s"))
    assert proc.returncode == 2 and "cannot write the results store" in proc.stderr
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "posenc-store.json").write_text('{"format": 99}')
    for cmd in (["reproduce", "--out", str(tmp_path / "new")], ["report", str(tmp_path / "new")],
                ["runs", str(tmp_path / "new")]):
        proc = posenc(*cmd)
        assert proc.returncode == 2 and "newer posenc" in proc.stderr, cmd


def test_report_refuses_a_result_of_another_role_in_one_line(small_store_copy):
    """A stored result whose role tag is not its run's (hand-edited, or another sweep's file) is
    refused by ``posenc report`` with exit 2 and one line, and the report on disk is untouched."""
    store = small_store_copy
    before = (store / "report" / "report.md").read_bytes()
    path = next((store / "runs").glob("*/result.json"))
    data = json.loads(path.read_text())
    data["summary"]["tags"]["role"] = "alibi" if data["summary"]["tags"]["role"] != "alibi" else "rope"
    path.write_text(json.dumps(data))
    proc = posenc("report", str(store), timeout=600)
    assert proc.returncode == 2 and proc.stderr.startswith("posenc: error:"), proc.stderr
    assert "role" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert (store / "report" / "report.md").read_bytes() == before


def test_timings_count_the_dynamics_phase_over_the_runs_that_record_it(tmp_path):
    """Runs that record no dynamics store 0 s of it; the per-run figure is over the 2 recording
    runs (40 s each), not over all 10 (it read 8.0)."""
    from posenc.report.build import _write_timings
    rows = [{"training_seconds": 10.0, "dynamics_seconds": 40.0 if i < 2 else 0.0,
             "ablation_seconds": 1.0, "probe_seconds": ""} for i in range(10)]
    _write_timings(tmp_path / "t.md", rows, 2.0)
    text = (tmp_path / "t.md").read_text()
    assert "| dynamics | 2 | 80.0 | 40.0 |" in text
    assert "| training | 10 | 100.0 | 10.0 |" in text and "| probe | 0 | 0.0 | - |" in text


def test_the_setup_line_gives_the_epoch_maximum_and_span_not_one_runs_count():
    from synthetic_runs import result

    from posenc.empirical.pipeline.experiment_result import ExperimentResult
    from posenc.report.markdown import _epochs

    def run(seed, stop):
        data = result("distance", "rope", seed, 0.9, stop=stop)
        data["summary"]["epochs"] = stop[0] if stop else 8
        return ExperimentResult.from_stored(data)
    stopped = [run(0, (7, 5, 60, 2)), run(1, (19, 17, 60, 2)), run(2, (60, 60, 60, 2))]
    assert _epochs(stopped) == ("early stopping (patience 2 on validation accuracy) at most 60 "
                                "epochs, 7-60 trained")
    assert _epochs([run(0, None), run(1, None)]) == "8 epochs"
    # the rule's measure is read from the runs: stop_on recorded (the quick preset's rule)
    for r in stopped:
        r.summary["early_stopping"]["stop_on"] = "accuracy_or_loss"
    assert _epochs(stopped).startswith("early stopping (patience 2 on validation accuracy or loss)")


def test_task_ceilings_read_each_runs_config_and_check_its_task(tmp_path):
    from synthetic_runs import result

    from posenc.empirical.bayes_ceiling import bayes_ceiling
    from posenc.empirical.config import preset
    from posenc.empirical.pipeline.experiment_result import ExperimentResult
    from posenc.errors import PosencError
    from posenc.report.ceiling import task_ceilings

    paper = preset("smoke", task="distance",
                   **{"task.sampler": "paper", "task.vocab_size": 9}).task
    def run(name, cfg, task="distance"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train_config.json").write_text(cfg.to_json())
        return ExperimentResult.from_stored(result(task, "rope", 0, 0.9), run_dir=tmp_path / name)
    clean = preset("smoke", task="distance")
    rows = task_ceilings([run("a", clean), run("b", clean.replace(task=paper))], examples=4000)
    assert [(r["sampler"], r["accuracy"]) for r in rows][0] == ("clean", 100.0)
    assert rows[1]["sampler"] == "paper"
    assert rows[1]["accuracy"] == 100 * bayes_ceiling(paper, 4000).accuracy < 99  # same estimate
    with pytest.raises(PosencError, match="is a distance run; its result says count"):
        task_ceilings([run("c", clean, task="count")])


def test_a_dynamics_summary_older_than_the_sign_balance_is_made_again_only_when_it_agrees(tmp_path):
    """The report re-summarises a run's dynamics.jsonl when its stored summary lacks the sign
    balance (Prop 6.1 / 6.2's null check), and adopts the new summary only when it reproduces
    every stored value."""
    import json as _json

    import numpy as np
    import torch

    from posenc.empirical.analysis.dynamics import FORMAT, signal_grids
    from posenc.empirical.analysis.dynamics_summary import summarize
    from posenc.empirical.pipeline.experiment_result import ExperimentResult
    from posenc.report.build import _with_current_dynamics
    psi = np.random.default_rng(1).normal(size=(2, 16, 3)) + 0.2
    grids = signal_grids(torch.as_tensor(psi), probe_batches=2)
    grids.pop("sign_balance")  # a record made before the sign balance was recorded
    header = {"kind": "header", "format": FORMAT, "pe": "alibi", "task": "distance", "seed": 0,
              "n_layers": 2, "n_heads": 3, "total_steps": 100, "dynamics": {"every": 10},
              "signal_layers": [True, True], "probe_examples": 16}
    recs = [{"kind": "record", "step": s, "final": s == 20, **grids,
             "attribution": [[0.0] * 3] * 2} for s in (0, 10, 20)]
    ablation = {"layers": [{"layer": 0, "largest_drop": 0.1, "deposit_head": 0},
                           {"layer": 1, "largest_drop": 0.0, "deposit_head": 0}]}
    (tmp_path / "dynamics.jsonl").write_text("\n".join(_json.dumps(r) for r in [header, *recs]))
    (tmp_path / "ablation_zero.json").write_text(_json.dumps(ablation))
    fresh = summarize(header, recs, ablation=ablation)
    stored = {k: v for k, v in _json.loads(_json.dumps(fresh)).items() if k != "sign_balance_max"}

    def res(dyn):
        return ExperimentResult(task="distance", role="alibi", seed=0, summary={}, ablation={},
                                dynamics=dyn, run_dir=tmp_path)
    assert _with_current_dynamics(res(stored)).dynamics["sign_balance_max"] == \
        pytest.approx(fresh["sign_balance_max"])
    other = dict(stored, coherence_max=stored["coherence_max"] + 0.1)  # not this file's summary
    assert _with_current_dynamics(res(other)).dynamics == other
    # a summary older than Thm 6.1's scale-free margins is made again the same way
    scale_free = ("signal_margin_relative", "signal_relative_gains", "signal_relative_mean_log_gain")
    older = {k: v for k, v in _json.loads(_json.dumps(fresh)).items() if k not in scale_free}
    assert _with_current_dynamics(res(older)).dynamics["signal_relative_mean_log_gain"] == \
        pytest.approx(fresh["signal_relative_mean_log_gain"])
