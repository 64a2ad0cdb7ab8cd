"""The reproduction's PE roles: the names the claims, the sweep and the report use for PEs.

A *role* is what a claim refers to ("rope", "alibi", the additive PEs, partial RoPE on one
head); each has a catalogue spec in each model-code mode (standard: the catalogue's clean
encodings; paper-code: the models of the paper's public code, :mod:`posenc.empirical.paper_specs`)
and the tasks of the default reproduction sweep that run it (none: an extra role, run when named
with ``--roles``).  :data:`ROLES` is the one table; every role list of the sweep
(:mod:`posenc.reproduction.plan`), the verdicts (:mod:`posenc.verdicts`) and the
report derives from it.  Pure data: importing it loads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

DISTANCE, COUNT = "distance", "count"
#: the learned absolute PE (negative control NC3) in the default distance sweep: False -- the
#: default, since its 6 more runs would take the quick reproduce past its 30-minute budget on
#: 2 cores -- leaves it to ``--roles`` as an extra role; True puts it in the default
LEARNED_IN_DEFAULT = False


@dataclass(frozen=True)
class Role:
    name: str
    spec: str  # the catalogue spec in standard mode
    paper_spec: str  # ... in paper-code mode (xPos and KERPLE are not in the paper's code:
    #                  paper-code mode refuses them with one line, paper_specs)
    tasks: tuple[str, ...] = ()  # tasks of the default sweep that run it; (): an extra role
    additive: bool = False  # one of the additive PEs the claims set against RoPE
    dynamics: bool = False  # its distance runs record training dynamics (Sec. 6)
    probe: bool = False  # the report shows its position probe (Absolute+RoPE section)
    rope_heads: int = 0  # partial RoPE (Fig. 6, claim E14): RoPE on this many heads, NoPE on the rest


_BOTH = (DISTANCE, COUNT)
ROLES = (
    Role("nope", "nope", "paper-nope", _BOTH),
    Role("absolute", "sinusoidal", "paper-absolute", _BOTH, additive=True, probe=True),
    Role("relative", "relative_bias:mode=table", "paper-relative", _BOTH, additive=True),
    Role("alibi", "alibi", "paper-alibi", _BOTH, additive=True, dynamics=True),
    Role("rope", "rope", "rope", _BOTH, dynamics=True, probe=True),
    Role("mla", "mla", "paper-mla", _BOTH),
    # the paper code's "rope" model (dis_gen/trans.py) adds a sinusoidal table to the input
    Role("absolute+rope", "hybrid:additive=sinusoidal", "paper-rope", (DISTANCE,), probe=True),
    Role("rope-1head", "rope:heads=1", "rope:heads=1", (DISTANCE,), rope_heads=1),
    Role("rope-2heads", "rope:heads=2", "rope:heads=2", (DISTANCE,), rope_heads=2),
    # the paper code's "random" PE: a learned table
    Role("learned", "learned_absolute", "paper-random", (DISTANCE,) if LEARNED_IN_DEFAULT else ()),
    Role("xpos", "xpos", "xpos"),
    # ALiBi with the paper code's slopes exp(-h/H), h = 0..H-1 (the default role has Press's
    # slopes in standard mode); paper-code mode runs these slopes for `alibi` already
    Role("alibi-exp0", "alibi:slopes=exp0", "paper-alibi"),
    Role("kerple", "kerple_log", "kerple_log"),
)
BY_NAME = {r.name: r for r in ROLES}


def roles_where(**flags: object) -> tuple[str, ...]:
    """Names of the roles (in table order) whose fields equal ``flags``, e.g. ``additive=True``."""
    return tuple(r.name for r in ROLES if all(getattr(r, k) == v for k, v in flags.items()))


def default_roles(task: str) -> tuple[str, ...]:
    """The roles the default sweep runs on ``task``."""
    return tuple(r.name for r in ROLES if task in r.tasks)


#: the additive PEs of the claims (E10, E12, S): absolute, relative, alibi
ADDITIVE = roles_where(additive=True)
#: distance-task roles whose runs record training dynamics (Prop. 6.1 / 6.2, Thm. 6.1)
DYNAMICS = roles_where(dynamics=True)
#: roles a sweep runs only when asked for by name (--roles)
EXTRA = roles_where(tasks=())
#: the paper code's own ``rope`` model (dis_gen/trans.py: RoPE in attention plus its cat[sin, cos]
#: table on the embeddings; the model its transvis.py ablates head by head), posenc's
#: ``absolute+rope`` role in paper-code mode
CODE_ROPE = "absolute+rope"
#: (k, role) of the partial-RoPE roles, k = heads with RoPE
PARTIAL_ROPE = tuple((r.rope_heads, r.name) for r in ROLES if r.rope_heads)
