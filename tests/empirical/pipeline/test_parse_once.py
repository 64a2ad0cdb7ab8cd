"""Specs travel parsed: a spec string is parsed where it enters -- a preset, a
config dict read back -- and the parsed :class:`~posenc.encodings.PESpec` is passed down from
there: overrides keep the config's parse, a reproduction plan parses each role's string once, and
the API and paper-code mode hand the spec on instead of a string to parse again.  No parse is
cached: a string given twice is parsed twice.  The real parser is counted wherever posenc holds
it."""

from __future__ import annotations

import sys
from collections import Counter

import pytest

from posenc.empirical.config import ModelConfig, apply_overrides, config_from_dict, preset
from posenc.reproduction.plan import ReproductionPlan
from posenc.encodings import RoPE, spec_parsing


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


@pytest.mark.parametrize("paper_code", [False, True], ids=["standard", "paper-code"])
def test_a_plan_stores_each_roles_string_as_before(paper_code):
    """The plan hands each role's parsed spec to its configs, which store ``spec.to_string()``:
    that is the string a config made from the role's string stores (the roles' strings are
    canonical, and a preset name is stored resolved), so stored run ids are unchanged."""
    plan = ReproductionPlan.for_command("quick", 1, paper_code=paper_code)
    for exp in plan.experiments():
        assert exp.train.model.pe == ModelConfig(pe=plan.pes[exp.tags["role"]]).pe


def test_overrides_keep_the_parse_and_a_dict_is_parsed_afresh(parses):
    pe = "rope:heads=2,base=5000"                         # not the catalogue's own order
    cfg = preset("smoke", pe=pe)
    for epochs in (2, 3, 4):
        cfg = apply_overrides(cfg, {"epochs": epochs, "model.dropout": 0.1})
    assert parses == Counter({pe: 1}) and cfg.model.pe == pe and cfg.epochs == 4
    again = config_from_dict(cfg.to_dict())             # a dict read back: its string is parsed
    assert parses == Counter({pe: 2}) and again == cfg and again.model.spec == cfg.model.spec
    other = apply_overrides(cfg, {"model.pe": "alibi"})   # a new PE is parsed, not the old kept
    assert parses["alibi"] == 1 and other.model.spec == spec_parsing.parse_spec("alibi")


def test_a_spec_object_is_stored_as_its_string_and_not_parsed(parses):
    spec = RoPE(heads=2, base=5000.0)
    cfg = apply_overrides(preset("smoke", pe=spec), {"epochs": 2})
    assert cfg.model.spec is spec and cfg.model.pe == spec.to_string() == "rope:base=5000,heads=2"
    assert parses == Counter()


def test_a_preset_name_and_its_resolved_string_share_one_parse(parses):
    cfg = preset("smoke", pe="paper-rope")
    assert cfg.model.pe != "paper-rope"                 # the config records the resolved spec
    cfg = apply_overrides(cfg, {"epochs": 2})
    assert parses == Counter({"paper-rope": 1})


@pytest.mark.parametrize("pe", ["paper-alibi", RoPE(heads=2)], ids=["string", "PESpec"])
def test_the_api_train_path_in_paper_code_mode_parses_at_most_once(parses, api_train_configs,
                                                                    tmp_path, pe):
    import posenc

    made = api_train_configs
    with pytest.raises(made.stopped):
        posenc.train("distance", pe, preset="smoke", paper_code=True, epochs=1,
                     out=tmp_path / "run")
    (cfg,) = made
    assert cfg.model.code == "paper" and cfg.epochs == 1
    if isinstance(pe, str):
        assert parses == Counter({pe: 1})
    else:
        assert parses == Counter() and cfg.model.spec is pe and cfg.model.pe == "rope:heads=2"


def test_a_bad_spec_is_refused_every_time_with_the_same_line(parses):
    from posenc.errors import PosencError

    messages = set()
    for _ in range(2):
        with pytest.raises(PosencError) as err:
            preset("smoke", pe="rope:bogus=1")
        messages.add(str(err.value))
    assert len(messages) == 1 and "unknown parameter 'bogus'" in messages.pop()
    assert parses == Counter({"rope:bogus=1": 2})
