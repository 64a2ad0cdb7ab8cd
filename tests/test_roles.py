"""The role table (posenc.roles) is the one list of the reproduction's PE roles: the sweep's role
lists derive from it, and every role a verdict judges is in it and run by some sweep."""

import pytest

from posenc import roles
from posenc.encodings import parse_spec
from posenc.verdicts import evaluate, evaluate_dynamics


def _verdict_configs():
    """(task, role) of every part of every empirical verdict (judged on no runs: each part still
    names the runs it needs)."""
    out = set()
    for v in evaluate([]) + evaluate_dynamics([]):
        for p in v.parts:
            out |= {(p["task"], r) for r in p["roles"]}
            out |= {tuple(c) for c in p.get("configs", [])}
    return out


def test_every_role_a_verdict_uses_is_in_the_table_and_run_by_a_sweep():
    used = _verdict_configs()
    assert {"rope", "alibi", "nope", "mla", "learned", "rope-1head"} <= {r for _, r in used}
    for task, role in sorted(used):
        assert role in roles.BY_NAME, f"a verdict uses role {role!r}, which the table lacks"
        assert task in (roles.DISTANCE, roles.COUNT)
        assert role in roles.default_roles(task) or role in roles.EXTRA, \
            f"no sweep runs {task}/{role}, which a verdict needs"


def test_the_sweeps_role_lists_derive_from_the_table():
    from posenc.reproduction import plan as rp
    names = [r.name for r in roles.ROLES]
    assert list(rp.CLEAN_PES) == names == list(rp.PAPER_CODE_PES)
    assert len(set(names)) == len(names)
    assert set(rp.DISTANCE_ROLES) | set(rp.COUNT_ROLES) | set(rp.EXTRA_ROLES) == set(names)
    assert not set(rp.EXTRA_ROLES) & (set(rp.DISTANCE_ROLES) | set(rp.COUNT_ROLES))
    assert set(rp.DYNAMICS_ROLES) <= set(rp.DISTANCE_ROLES)
    assert rp.ReproductionPlan("smoke", seeds=1).distance_roles == rp.DISTANCE_ROLES
    assert not hasattr(rp, "ADDITIVE_ROLES")
    assert roles.ADDITIVE == ("absolute", "relative", "alibi")
    assert [k for k, _ in roles.PARTIAL_ROPE] == [1, 2]


@pytest.mark.parametrize("role", roles.ROLES, ids=lambda r: r.name)
def test_every_roles_spec_is_in_the_catalogue(role):
    spec = parse_spec(role.spec)
    if role.rope_heads:  # partial RoPE: RoPE on exactly that many heads
        assert spec.heads == role.rope_heads
    if role.additive:
        assert spec.family.startswith("additive")


def test_alibi_with_the_paper_codes_slopes_is_an_extra_role():
    """The standard model's `alibi` has Press's slopes; `alibi-exp0` has the paper code's
    exp(-h/H), h = 0..H-1, in both modes, and runs only when named (not in the default sweep)."""
    role = roles.BY_NAME["alibi-exp0"]
    assert parse_spec(role.spec).slopes == "exp0" and parse_spec(role.paper_spec).slopes == "exp0"
    assert parse_spec(roles.BY_NAME["alibi"].spec).slopes == "press"
    assert "alibi-exp0" in roles.EXTRA and not role.additive
    assert all("alibi-exp0" not in roles.default_roles(t) for t in (roles.DISTANCE, roles.COUNT))


def test_named_roles_run_on_every_task_of_the_plan():
    """--roles names the roles of each task: trans.py's rope (distance-only by default) runs on
    count when named, in the table's order; unnamed, each task keeps its default roles."""
    from posenc.reproduction.plan import COUNT_ROLES, DISTANCE_ROLES, ReproductionPlan

    plan = ReproductionPlan.select("paper-small", 1, roles=["mla", "absolute+rope", "rope"],
                                   tasks=["count"])
    assert plan.count_roles == ("rope", "mla", "absolute+rope") and plan.distance_roles == ()
    assert {e.tags["role"] for e in plan.experiments()} == {"rope", "mla", "absolute+rope"}
    assert {e.train.task.name for e in plan.experiments()} == {"count"}
    both = ReproductionPlan.select("quick", 1, roles=["rope-1head", "xpos"])
    assert both.distance_roles == both.count_roles == ("rope-1head", "xpos")
    plain = ReproductionPlan.select("quick", 1)
    assert (plain.distance_roles, plain.count_roles) == (DISTANCE_ROLES, COUNT_ROLES)
    assert "absolute+rope" not in COUNT_ROLES
