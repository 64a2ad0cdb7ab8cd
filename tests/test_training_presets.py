"""The training presets (posenc.training_presets) are one list of records: every command's
--preset help, ``posenc encodings`` and the config layer name the same presets, one lookup refuses
any other name (the same line from every entry point), a bad record is refused when it is made,
and the ``paper-small`` preset is what its calibration froze (scripts/regime_calibration.py)."""

import json
import subprocess
import sys

import pytest

from posenc.errors import PosencError
from posenc.training_presets import PAPER_CODE_PRESETS, PRESET_NAMES, TRAINING_PRESETS, TrainingPreset
from tests.script_loader import load_script


def _help(name):
    from tests.test_cli import _subparsers
    return " ".join(_subparsers()[name].format_help().split())


@pytest.mark.parametrize("command", ["reproduce", "train", "dynamics"])
def test_every_command_lists_every_preset(command):
    text = _help(command)
    for name in PRESET_NAMES:
        assert f" {name} " in text or f" {name};" in text, (command, name)


def test_encodings_describes_every_training_preset():
    proc = subprocess.run([sys.executable, "-m", "posenc", "encodings", "--json"],
                          capture_output=True, text=True, check=True)
    listed = json.loads(proc.stdout)
    assert listed["training_presets"] == {n: p.summary for n, p in TRAINING_PRESETS.items()}
    assert listed["training_preset_notes"] == {n: p.notes for n, p in TRAINING_PRESETS.items()
                                               if p.notes}
    assert set(PAPER_CODE_PRESETS) <= set(PRESET_NAMES)


@pytest.mark.parametrize("name", PRESET_NAMES)
@pytest.mark.parametrize("task", ["distance", "count"])
def test_the_config_layer_builds_every_preset(name, task):
    from posenc.empirical.config import preset

    assert preset(name, task, "rope", 0).preset == name
    assert set(TRAINING_PRESETS) == set(PRESET_NAMES)


def test_paper_small_runs_the_paper_codes_distance_task_by_default():
    from posenc.empirical.paper_specs import PAPER_CODE_LENGTH
    from posenc.reproduction.plan import DISTANCE_ROLES, ReproductionPlan

    plan = ReproductionPlan.for_command("paper-small")
    assert plan.in_paper_code and plan.count_roles == () and plan.distance_roles == DISTANCE_ROLES
    exps = plan.experiments()
    assert len(exps) == 6 * len(DISTANCE_ROLES) == 54
    for e in exps:
        t, m = e.train.task, e.train.model
        assert (t.sampler, t.vocab_size, t.max_gap, t.max_left, t.length) == \
            ("paper", 574, 70, 25, PAPER_CODE_LENGTH)
        assert m.code == "paper" and (m.d_model, m.n_heads, m.n_layers) == (64, 8, 4)
        # the heads are ablated on test examples, not on the whole data set as at ``paper``
        assert (e.ablation_data, e.ablation_examples) == ("test", 500)
        assert e.train.patience == e.train.epochs  # every epoch runs: no early stop
    # every role on the preset's budget but MLA, which gets the code's MLA budget at this scale
    budgets = {(e.tags["role"] == "mla", e.train.epochs, e.train.batch_size) for e in exps}
    assert budgets == {(False, 15, 16), (True, 23, 32)}
    # the count task runs when asked for, padded to the code's 128 tokens
    count = ReproductionPlan.for_command("paper-small", tasks=["count"]).experiments()[0].train
    assert (count.task.content_length, count.task.length) == (120, PAPER_CODE_LENGTH)


def test_paper_small_gives_mla_the_codes_budget_ratios():
    """dis_gen/mla.py trains 1.5x trans.py's epochs at twice its batch (150 of 1024 against 100
    of 512); paper-small's MLA budget is those ratios of the preset's own, epochs rounded up."""
    import math

    from posenc.empirical.config import preset
    from posenc.empirical.paper_specs import paper_budget

    base, paper = preset("paper-small"), preset("paper")
    code = paper_budget("paper", "mla")
    assert code == {"epochs": 150, "batch_size": 1024}  # dis_gen/mla.py
    want = math.ceil(base.epochs * code["epochs"] / paper.epochs)
    assert paper_budget("paper-small", "mla") == {
        "epochs": want, "batch_size": base.batch_size * code["batch_size"] // paper.batch_size,
        "patience": want}
    assert paper_budget("paper-small", "rope") == {} and paper_budget("quick", "mla") == {}


@pytest.mark.parametrize("role", ["rope", "alibi", "mla", "absolute+rope"])
def test_paper_small_is_the_frozen_calibration_candidate(monkeypatch, role):
    """The preset holds the candidate its calibration froze (on seeds 1000+, before the report's
    seeds ran): the same config field for field, bar the preset's name and the thread count."""
    from posenc.empirical.config import apply_overrides
    from posenc.empirical.paper_specs import paper_budget
    from posenc.reproduction.plan import ReproductionPlan

    cal = load_script(monkeypatch, "regime_calibration")
    plan = ReproductionPlan.select("paper-small", 1, roles=[role], tasks=["distance"],
                                   first_seed=1000)
    ours = plan.experiments()[0].train.to_dict()
    # (MLA on the code's MLA budget at this scale: the calibration docs/methods.md names)
    frozen = apply_overrides(cal.candidate_config(TRAINING_PRESETS["paper-small"].candidate, 1000, role),
                             paper_budget("paper-small", role)).to_dict()
    for d in (ours, frozen):
        d.pop("preset"), d.pop("num_threads")
    assert ours == frozen


def test_a_sweep_runs_whole_seeds_first():
    """Jobs come seed-major (a sweep spanning sessions holds whole seeds), and within a seed in
    the plan's own order."""
    from posenc.reproduction.plan import ReproductionPlan

    plan = ReproductionPlan.for_command("paper-small", 3, roles=["nope", "rope"])
    labels = [j.label for j in plan.jobs()]
    assert labels == [f"distance/{r}/s{s}" for s in range(3) for r in ("nope", "rope")]


def test_paper_small_notes_state_the_presets_own_numbers():
    """The notes cannot go stale: each number they give for paper-small is the preset's."""
    from posenc.empirical.config import preset
    from posenc.empirical.paper_specs import paper_budget

    c = preset("paper-small", "distance", "rope", 0)
    t, m = c.task, c.model
    n_train = round(t.n_samples * t.train_frac)
    n_val = round(n_train * c.val_frac)
    note = TRAINING_PRESETS["paper-small"].notes

    def rate(x: float) -> str:          # as the note writes a small rate: 3e-3, 1e-5
        return f"{x:.0e}".replace("e-0", "e-")

    for text in (f"width {m.d_model}", f"{m.n_heads} heads of dim {m.head_dim}",
                 f"{m.n_layers} layers", f"d_ff {m.d_ff}", f"dropout {m.dropout:g}",
                 f"{t.n_samples:,} examples", f"{n_train - n_val:,} train / {n_val:,} validation / "
                 f"{t.n_samples - n_train:,} test", f"{c.epochs} epochs of batch {c.batch_size}",
                 f"peak rate {rate(c.lr)}", f"clipping {c.grad_clip:g}",
                 f"weight decay {rate(c.weight_decay)}"):
        assert text in note, text
    mla = preset("paper-small", "distance", "mla", 0, **paper_budget("paper-small", "mla"))
    assert f"MLA {mla.epochs} of batch {mla.batch_size}" in note


def test_paper_small_dynamics_are_sized_for_the_store():
    """Refrozen at 3x the steps, paper-small records dynamics every 100 steps (about 120 records),
    so that a seed set's committed store stays under 5 MB (at 75 it measured 5.3
    MB); quick keeps the recorder's default interval (its run ids unchanged)."""
    import math

    from posenc.empirical.analysis.dynamics import DynamicsConfig
    from posenc.reproduction.plan import ReproductionPlan

    def records(preset: str) -> tuple[int, int]:
        exp = next(e for e in ReproductionPlan.for_command(preset).experiments() if e.dynamics)
        t = exp.train
        steps = t.epochs * math.ceil(round(t.task.n_samples * t.task.train_frac
                                           * (1 - t.val_frac)) / t.batch_size)
        return exp.dynamics["every"], steps // exp.dynamics["every"]

    every, n = records("paper-small")
    assert every == 100 and 110 <= n <= 125, (every, n)
    assert records("quick")[0] == DynamicsConfig().every == 25


def _entry_points():
    """Every place a preset name enters, each called with ``name``."""
    from posenc.api import experiments as api
    from posenc.empirical.config import preset
    from posenc.empirical.paper_specs import paper_budget
    from posenc.reproduction.plan import ReproductionPlan

    return {
        "config": lambda name: preset(name),
        "plan": lambda name: ReproductionPlan(preset=name),
        "plan for the command": lambda name: ReproductionPlan.for_command(name),
        "plan of some tasks": lambda name: ReproductionPlan.select(name, 1),
        "budget": lambda name: paper_budget(name, "mla"),
        "api.train": lambda name: api.train(preset=name),
        "api.reproduce": lambda name: api.reproduce(preset=name),
        "api.import_checkpoint": lambda name: api.import_checkpoint("x.pt", "rope", "distance",
                                                                    "out", preset=name),
    }


@pytest.mark.parametrize("where", sorted(_entry_points()))
@pytest.mark.parametrize("name", ["quik", "paper_small", "", ["quick"]])
def test_an_unknown_preset_is_one_line_from_every_entry_point(where, name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written, here least of all
    with pytest.raises(PosencError) as info:
        _entry_points()[where](name)
    assert str(info.value) == f"unknown preset {name!r}; known: {', '.join(PRESET_NAMES)}"
    assert list(tmp_path.iterdir()) == []


def _record(**changes):
    fields = dict(name="x", summary="a preset", task={"distance": {}, "count": {}}, model={},
                  train={}, seeds=1, ablation_examples=1, probe_examples=1)
    return TrainingPreset(**{**fields, **changes})


@pytest.mark.parametrize("changes,match", [
    ({"task": {"distance": {}}}, "task fields for exactly"),
    ({"tasks": ("distance", "copy")}, "tasks within"),
    ({"tasks": ()}, "tasks within"),
    ({"seeds": 0}, "seeds >= 1"),
    ({"probe_examples": True}, "probe_examples >= 1"),
    ({"dynamics_every": 0}, "dynamics_every >= 1"),
    ({"train": {"seed": 3}}, "name no task, model, seed or preset"),
    ({"model": {"pe": "rope"}}, "the PE and the task name"),
    ({"task": {"distance": {"name": "count"}, "count": {}}}, "the PE and the task name"),
    ({"summary": " "}, "a summary"),
    ({"ablation_modes": ("mean", "zero")}, "zero first"),
    ({"ablation_modes": ("zero", "mean", "zero")}, "distinct modes"),
    ({"ablation_modes": ["zero"]}, "ablation_modes"),
])
def test_a_bad_record_is_refused_when_it_is_made(changes, match):
    assert _record().seeds == 1
    with pytest.raises(ValueError, match=match):
        _record(**changes)


def test_a_record_is_read_only():
    record = TRAINING_PRESETS["quick"]
    with pytest.raises(TypeError):
        record.train["epochs"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        record.task["distance"]["n_samples"] = 1  # type: ignore[index]


def test_a_plan_ablates_in_its_presets_modes_unless_told(monkeypatch):
    """The sweep's ablation modes are the preset record's (MLA's latent columns on MLA runs
    only); a plan that names its own keeps them."""
    from dataclasses import replace

    from posenc.reproduction import plan as plan_module

    record = replace(TRAINING_PRESETS["smoke"], ablation_modes=("zero", "mean", "latent-columns"))
    monkeypatch.setattr(plan_module, "training_preset", lambda name: record)
    exps = plan_module.ReproductionPlan("smoke", seeds=1, distance_roles=("rope", "mla"),
                                        count_roles=()).experiments()
    assert {e.tags["role"]: e.ablation_modes for e in exps} == {
        "rope": ("zero", "mean"), "mla": ("zero", "mean", "latent-columns")}
    told = plan_module.ReproductionPlan("smoke", seeds=1, ablation_modes=("zero",))
    assert {e.ablation_modes for e in told.experiments()} == {("zero",)}
    assert TRAINING_PRESETS["quick"].ablation_modes == ("zero",)


@pytest.mark.parametrize("modes", [(), ("zero", "zero"), ("zero", "average"), ["zero"]])
def test_a_plan_refuses_ablation_modes_that_are_not_distinct_known_modes(modes):
    from posenc.reproduction.plan import ReproductionPlan

    with pytest.raises(PosencError, match="ablation modes must be"):
        ReproductionPlan("smoke", seeds=1, ablation_modes=modes)


def test_every_presets_ablation_modes_are_modes_the_ablation_knows():
    """The record checks zero first and distinct without importing torch; the names themselves
    are the ablation's (posenc.empirical.analysis.ablation.MODES)."""
    from posenc.empirical.analysis.ablation import MODES

    for record in TRAINING_PRESETS.values():
        assert set(record.ablation_modes) <= set(MODES), record.name
