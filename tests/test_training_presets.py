"""The training presets (posenc.training_presets) are one list: every command's --preset help,
``posenc encodings`` and the config layer name the same presets, and the ``paper-small`` preset
is what its calibration froze (scripts/regime_calibration.py)."""

import json
import subprocess
import sys

import pytest

from posenc.training_presets import PAPER_CODE_PRESETS, PRESET_NAMES, TRAINING_PRESETS
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
    assert json.loads(proc.stdout)["training_presets"] == TRAINING_PRESETS
    assert set(PAPER_CODE_PRESETS) <= set(PRESET_NAMES)


@pytest.mark.parametrize("name", PRESET_NAMES)
@pytest.mark.parametrize("task", ["distance", "count"])
def test_the_config_layer_builds_every_preset(name, task):
    from posenc.api.experiments import PRESETS
    from posenc.empirical.config import preset
    from posenc.empirical.pipeline.reproduction import DEFAULT_SEEDS

    assert preset(name, task, "rope", 0).preset == name
    assert set(DEFAULT_SEEDS) == set(PRESETS) == set(PRESET_NAMES)


def test_paper_small_runs_the_paper_codes_distance_task_by_default():
    from posenc.empirical.paper_specs import PAPER_CODE_LENGTH
    from posenc.empirical.pipeline.reproduction import DISTANCE_ROLES, ReproductionPlan

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
    from posenc.empirical.paper_specs import PAPER_BUDGETS, paper_budget

    base, paper = preset("paper-small"), preset("paper")
    code = PAPER_BUDGETS["mla"]
    want = math.ceil(base.epochs * code["epochs"] / paper.epochs)
    assert paper_budget("paper-small", "mla") == {
        "epochs": want, "batch_size": base.batch_size * code["batch_size"] // paper.batch_size,
        "patience": want}
    assert paper_budget("paper-small", "rope") == {} and paper_budget("quick", "mla") == {}


@pytest.mark.parametrize("role", ["rope", "alibi", "mla", "absolute+rope"])
def test_paper_small_is_the_frozen_calibration_candidate(monkeypatch, role):
    """The preset holds the candidate its calibration froze (on seeds 1000+, before the report's
    seeds ran): the same config field for field, bar the preset's name and the thread count."""
    from posenc.empirical.config import PAPER_SMALL_CANDIDATE, apply_overrides
    from posenc.empirical.paper_specs import paper_budget
    from posenc.empirical.pipeline.reproduction import ReproductionPlan

    cal = load_script(monkeypatch, "regime_calibration")
    plan = ReproductionPlan.select("paper-small", 1, roles=[role], tasks=["distance"],
                                   first_seed=1000)
    ours = plan.experiments()[0].train.to_dict()
    # (MLA on the code's MLA budget at this scale: the calibration docs/methods.md names)
    frozen = apply_overrides(cal.candidate_config(PAPER_SMALL_CANDIDATE, 1000, role),
                             paper_budget("paper-small", role)).to_dict()
    for d in (ours, frozen):
        d.pop("preset"), d.pop("num_threads")
    assert ours == frozen


def test_a_sweep_runs_whole_seeds_first():
    """Jobs come seed-major (a sweep spanning sessions holds whole seeds), and within a seed in
    the plan's own order."""
    from posenc.empirical.pipeline.reproduction import ReproductionPlan

    plan = ReproductionPlan.for_command("paper-small", 3, roles=["nope", "rope"])
    labels = [j.label for j in plan.jobs()]
    assert labels == [f"distance/{r}/s{s}" for s in range(3) for r in ("nope", "rope")]


def test_paper_small_notes_state_the_presets_own_numbers():
    """The notes cannot go stale: each number they give for paper-small is the preset's."""
    from posenc.empirical.config import preset
    from posenc.empirical.paper_specs import paper_budget
    from posenc.training_presets import PRESET_NOTES

    c = preset("paper-small", "distance", "rope", 0)
    t, m = c.task, c.model
    n_train = round(t.n_samples * t.train_frac)
    n_val = round(n_train * c.val_frac)
    note = PRESET_NOTES["paper-small"]

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
    from posenc.empirical.pipeline.reproduction import ReproductionPlan

    def records(preset: str) -> tuple[int, int]:
        exp = next(e for e in ReproductionPlan.for_command(preset).experiments() if e.dynamics)
        t = exp.train
        steps = t.epochs * math.ceil(round(t.task.n_samples * t.task.train_frac
                                           * (1 - t.val_frac)) / t.batch_size)
        return exp.dynamics["every"], steps // exp.dynamics["every"]

    every, n = records("paper-small")
    assert every == 100 and 110 <= n <= 125, (every, n)
    assert records("quick")[0] == DynamicsConfig().every == 25
