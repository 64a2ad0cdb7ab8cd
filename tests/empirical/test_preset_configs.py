"""Every stored run id stays what it was: the config each training preset builds, for every task
and PE, and the experiments of each preset's default reproduction plan (both model codes), equal
the ones recorded in preset_configs.json.

The file was written by :func:`fingerprints` below run against the tree before the presets became
records (posenc.training_presets), so a preset value, a plan default or a config field that
changed shows here as the (preset, task, PE) or plan it changed.  Regenerate it only for a change
that is meant to make new runs: ``python tests/empirical/test_preset_configs.py > FILE``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

GOLDEN = Path(__file__).with_name("preset_configs.json")
PRESETS = ("smoke", "quick", "paper", "paper-small")
TASKS = ("distance", "count")
#: the catalogue's defaults, the paper code's named specs (as users type them) and every role's
#: spec in both model codes
PES = ("nope", "sinusoidal", "learned_absolute", "relative_bias", "relative_bias:mode=table", "alibi",
       "alibi:slopes=exp0", "rope", "rope:heads=1", "rope:heads=2", "rope:pairing=half,fraction=0.5",
       "mla", "hybrid:additive=sinusoidal", "custom:kernel=exp(-abs(k)/4)", "xpos", "kerple_log",
       "paper-nope", "paper-absolute", "paper-random", "paper-rope", "paper-alibi", "paper-relative",
       "paper-mla", "paper-absolute-rope")


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def fingerprints() -> dict:
    from posenc.empirical.config import preset
    from posenc.reproduction.plan import ReproductionPlan
    from posenc.errors import PosencError

    configs, run_ids, plans = {}, {}, {}
    for name in PRESETS:
        for task in TASKS:
            configs[f"{name}/{task}"] = preset(name, task=task, pe="rope", seed=3).to_dict()
            for pe in PES:
                try:
                    run_ids[f"{name}/{task}/{pe}"] = preset(name, task=task, pe=pe, seed=3).run_id()
                except PosencError as exc:
                    run_ids[f"{name}/{task}/{pe}"] = f"error: {exc}"
        for paper_code in (False, True):
            plan = ReproductionPlan.for_command(name, paper_code=paper_code)
            exps = [e.to_dict() for e in plan.experiments()]
            plans[f"{name}/{'paper-code' if paper_code else 'standard'}"] = \
                {"experiments": len(exps), "digest": _digest(exps),
                 "seeds": plan.seeds, "tasks": sorted({e["train"]["task"]["name"] for e in exps})}
        plans[f"{name}/default mode"] = ReproductionPlan.for_command(name).mode
    return {"configs": configs, "run_ids": run_ids, "plans": plans}


@pytest.fixture(scope="module")
def now():
    return json.loads(json.dumps(fingerprints()))  # tuples as the file holds them: lists


@pytest.fixture(scope="module")
def before():
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("section", ["configs", "run_ids", "plans"])
def test_presets_build_what_they_built(section, now, before):
    changed = {k: (before[section].get(k), v) for k, v in now[section].items()
               if before[section].get(k) != v}
    assert set(now[section]) == set(before[section])
    assert not changed, changed


if __name__ == "__main__":
    print(json.dumps(fingerprints(), indent=1, sort_keys=True))
