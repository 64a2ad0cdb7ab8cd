"""A PE spec string is parsed once (issue 24): the config's own parse happens once per distinct
string, however many configs are made from it (``apply_overrides``, ``config_from_dict``,
``dataclasses.replace``), and the paper-code paths use the typed spec the config holds instead of
parsing the string again.  The real parser is counted wherever posenc holds it."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter

import pytest

import posenc.empirical.config as config_module
from posenc.empirical.config import apply_overrides, config_from_dict, preset
from posenc.empirical.pipeline.reproduction import ReproductionPlan
from posenc.encodings import spec_parsing


@pytest.fixture
def parses(monkeypatch) -> Counter:
    """spec string -> how often the real parser ran on it during the test."""
    real = spec_parsing.parse_spec
    calls: Counter = Counter()

    def counting(text):
        calls[text] += 1
        return real(text)

    for name, module in list(sys.modules.items()):
        if (name == "posenc" or name.startswith("posenc.")) and \
                getattr(module, "parse_spec", None) is real:
            monkeypatch.setattr(module, "parse_spec", counting)
    specs = getattr(config_module, "_SPECS", None)   # start with nothing parsed
    if specs is not None:
        monkeypatch.setattr(config_module, "_SPECS", {})
    return calls


@pytest.mark.parametrize("paper_code", [False, True], ids=["standard", "paper-code"])
def test_a_reproduction_plan_parses_each_role_string_once(parses, paper_code):
    # (an explicit vocabulary: paper-code mode would otherwise raise it to the class count)
    plan = ReproductionPlan.for_command("quick", 2, paper_code=paper_code,
                                       overrides={"epochs": 3, "task.vocab_size": 64})
    experiments = plan.experiments()
    assert len(experiments) > len(plan.pes)            # several configs per role string
    used = {plan.pes[e.tags["role"]] for e in experiments}
    assert set(parses) == used
    assert all(n == 1 for n in parses.values()), parses
    for exp in experiments:
        model = exp.train.model
        assert model.spec == spec_parsing.parse_spec(model.pe)
        assert (model.code == "paper") == paper_code
        assert exp.train.epochs == 3


def test_preset_then_overrides_parse_the_string_once(parses):
    pe = "rope:base=5000,heads=2"
    cfg = preset("smoke", pe=pe)
    for epochs in (2, 3, 4):
        cfg = apply_overrides(cfg, {"epochs": epochs, "model.dropout": 0.1})
    cfg = config_from_dict(cfg.to_dict())
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, n_layers=1))
    assert parses == Counter({pe: 1})
    assert cfg.model.spec == spec_parsing.parse_spec(pe) and cfg.epochs == 4


def test_a_preset_name_and_its_resolved_string_share_one_parse(parses):
    cfg = preset("smoke", pe="paper-rope")
    assert cfg.model.pe != "paper-rope"                 # the config records the resolved spec
    cfg = apply_overrides(cfg, {"epochs": 2})
    assert parses == Counter({"paper-rope": 1})


def test_the_api_train_path_in_paper_code_mode_parses_once(parses, api_train_configs, tmp_path):
    import posenc

    made = api_train_configs
    with pytest.raises(made.stopped):
        posenc.train("distance", "paper-alibi", preset="smoke", paper_code=True, epochs=1,
                     out=tmp_path / "run")
    (cfg,) = made
    assert cfg.model.code == "paper" and cfg.epochs == 1
    assert parses == Counter({"paper-alibi": 1})


def test_a_bad_spec_is_refused_every_time_with_the_same_line(parses):
    from posenc.errors import PosencError

    messages = set()
    for _ in range(2):
        with pytest.raises(PosencError) as err:
            preset("smoke", pe="rope:bogus=1")
        messages.add(str(err.value))
    assert len(messages) == 1 and "unknown parameter 'bogus'" in messages.pop()
    assert parses == Counter({"rope:bogus=1": 2})       # an error is not kept
