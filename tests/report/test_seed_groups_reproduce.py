"""``posenc reproduce --seed-groups``: the seeds of a (task, role) train as one seed-batched model
and land in the store as ordinary runs (the same run ids: a later sweep without the flag skips
them); a run that records training dynamics trains alone; Ray is refused in one line."""

import json

import pytest
from small_sweep import posenc

SMALL = ["--preset", "smoke", "--roles", "nope,rope", "--tasks", "distance", "--seeds", "2",
         "--no-theory"]


@pytest.mark.slow
def test_seed_groups_write_ordinary_runs_that_a_plain_sweep_skips(tmp_path):
    out = tmp_path / "store"
    proc = posenc("reproduce", *SMALL, "--seed-groups", "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "seed groups]" in proc.stdout
    summaries = {}
    for result in out.glob("runs/*/result.json"):
        s = json.loads(result.read_text())["summary"]
        summaries[(s["tags"]["role"], s["seed"])] = s
    assert set(summaries) == {("nope", 0), ("nope", 1), ("rope", 0), ("rope", 1)}
    for seed in (0, 1):
        assert summaries[("nope", seed)]["seed_group"]["seeds"] == 2
        assert "seed_group" not in summaries[("rope", seed)]  # records dynamics: alone
    assert (out / "report" / "report.md").is_file()
    import csv
    with open(out / "report" / "runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {"fired", "stopped_early", "seed_group"} <= set(rows[0])
    assert sorted((r["role"], r["seed_group"]) for r in rows) == [("nope", "2"), ("nope", "2"),
                                                                 ("rope", ""), ("rope", "")]
    again = posenc("reproduce", *SMALL, "--out", str(out), timeout=900)
    assert again.returncode == 0, again.stderr
    assert "ran 0, skipped 4 finished" in again.stdout


def test_seed_groups_on_ray_is_one_line_and_exit_2(tmp_path):
    proc = posenc("reproduce", *SMALL, "--seed-groups", "--backend", "ray",
                  "--out", str(tmp_path / "s"), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "local backend" in proc.stderr
    assert not (tmp_path / "s").exists()
    # the Python API refuses it with the same line
    import posenc as api
    from posenc.errors import PosencError
    with pytest.raises(PosencError) as exc:
        api.reproduce("smoke", roles="nope", tasks="distance", seeds=2, theory=False,
                      seed_groups=True, backend="ray", out=str(tmp_path / "a"))
    assert proc.stderr.strip().endswith(str(exc.value))
    assert not (tmp_path / "a").exists()
