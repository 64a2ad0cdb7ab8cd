"""ReproduceOptions: one value per reproduction, built where a call enters and checked once.

The front door's keywords and the command's flags are the options' fields (neither can gain or
lose one without the other); each wrong value or combination is one PosencError, made when the
value is made (before a store is touched)."""

from __future__ import annotations

import inspect

import pytest

import posenc
from posenc.cli import build_parser
from posenc.errors import PosencError
from posenc.reproduction import ReproduceOptions


def test_the_front_doors_keywords_are_the_options():
    params = [p for p in inspect.signature(posenc.reproduce).parameters if p != "log"]
    assert tuple(params) == ReproduceOptions.names()


def _command(*flags: str):
    return build_parser().parse_args(["reproduce", *flags])


def test_every_flag_reaches_its_field():
    args = _command("--preset", "smoke", "--backend", "ray", "--out", "store", "--seeds", "3",
                    "--count-seeds", "4", "--first-seed", "1000", "--workers", "3", "--threads", "2",
                    "--ray-address", "h:1", "--device", "cpu", "--roles", "rope,nope",
                    "--tasks", "distance", "--set", "epochs=2", "--wait", "--replicate",
                    "--replicate-first-seed", "5000", "--keep-checkpoints",
                    "--retrain-incomplete", "--paper-code", "--no-theory")
    o = ReproduceOptions.from_command(args, {"epochs": 2})
    assert o == ReproduceOptions(
        preset="smoke", backend="ray", out="store", seeds=3, count_seeds=4, first_seed=1000,
        workers=3, threads=2, ray_address="h:1", device="cpu", roles=("rope", "nope"),
        tasks=("distance",), overrides={"epochs": 2}, wait=True, replicate=True,
        replicate_first_seed=5000, keep_checkpoints=True, retrain_incomplete=True,
        paper_code=True, theory=False)
    decided = ReproduceOptions.from_command(
        _command("--until-decided", "--max-seeds", "8", "--seed-batch", "3", "--standard"), {})
    assert (decided.until_decided, decided.max_seeds, decided.seed_batch, decided.batch,
            decided.paper_code) == (True, 8, 3, 3, False)


def test_the_defaults_are_the_commands_defaults():
    assert ReproduceOptions.from_command(_command(), {}) == ReproduceOptions()
    assert ReproduceOptions().batch == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"preset": "huge"}, "unknown preset 'huge'"),
    ({"backend": "slurm"}, "unknown backend 'slurm'"),
    ({"out": ""}, "out is an empty path"),
    ({"out": 3}, "out must be a path"),
    ({"workers": 0}, "workers must be a positive integer"),
    ({"threads": "2"}, "threads must be a positive integer"),
    ({"seeds": 0}, "--seeds must be a positive integer"),
    ({"roles": ""}, "roles is empty"),
    ({"tasks": [1]}, "tasks must be a comma-separated string or a list of strings"),
    ({"overrides": [("epochs", 2)]}, "overrides must be a dict"),
    ({"wait": "yes"}, "wait must be True or False"),
    ({"paper_code": 1}, "paper_code must be True, False or None"),
    ({"max_seeds": 4}, "--max-seeds and --seed-batch go with --until-decided"),
    ({"seed_batch": 2}, "--max-seeds and --seed-batch go with --until-decided"),
    ({"until_decided": True}, "--until-decided needs --max-seeds N"),
    ({"until_decided": True, "max_seeds": 4, "seed_batch": 0}, "--seed-batch must be a positive"),
    ({"until_decided": True, "max_seeds": 4, "replicate": True}, "do not go together"),
    ({"replicate_first_seed": 3000}, "--replicate-first-seed goes with --replicate"),
])
def test_a_wrong_option_is_one_error(kwargs, message):
    with pytest.raises(PosencError, match=message.replace("(", r"\(")):
        ReproduceOptions(**kwargs)
    with pytest.raises(PosencError, match=message.replace("(", r"\(")):  # the front door's
        posenc.reproduce(**kwargs, log=lambda line: None)


def test_names_are_normalised_once():
    o = ReproduceOptions(roles="rope, nope", tasks=["count"], out=__import__("pathlib").Path("s"))
    assert (o.roles, o.tasks, o.out) == (("rope", "nope"), ("count",), "s")


def test_the_value_is_handed_down_whole(monkeypatch, tmp_path):
    """What the front door builds is what the reproduction runs with."""
    import posenc.reproduction.run as run
    seen = []
    monkeypatch.setattr(run, "run_plan", lambda plan, store, **kw: seen.append((plan, kw)))
    monkeypatch.setattr(run, "build_report", lambda root, **kw: root / "report.md")
    posenc.reproduce("smoke", out=tmp_path / "s", roles="rope", tasks="distance", seeds=1,
                     workers=1, keep_checkpoints=True, first_seed=7, log=lambda line: None)
    (plan, kw), = seen
    assert (plan.preset, plan.distance_roles, plan.count_roles, plan.seeds, plan.first_seed) == \
        ("smoke", ("rope",), (), 1, 7)
    assert (kw["workers"], kw["keep_checkpoints"]) == (1, True)
