"""The sweep behind ``posenc reproduce``: which runs reproduce which claim.

A :class:`ReproductionPlan` expands to one :class:`~posenc.empirical.pipeline.sweep.Job`
per (task, PE, seed).  The PE lists follow the paper's Fig. 2 / Fig. 4 / Fig. 6
(Gu et al., arXiv 2505.13027):

* ``distance`` (position-sensitive): NoPE, sinusoidal absolute, per-offset
  relative bias, ALiBi, RoPE, MLA, Absolute+RoPE, and partial RoPE on 1 and
  2 heads (Fig. 6); the learned absolute PE (the paper code's "random" PE) is an extra role
  (``--roles``), and one line, :data:`posenc.roles.LEARNED_IN_DEFAULT`, puts it in the default;
* ``count`` (position-agnostic): NoPE, sinusoidal, relative, ALiBi, RoPE, MLA.

The distance runs of RoPE and ALiBi also record their training dynamics
(:mod:`posenc.empirical.analysis.dynamics`, default settings) for the Sec. 6 verdicts
(:mod:`posenc.verdicts.dynamics`): in the same training run, so they cost
the recording's overhead (about 5% of those runs), not extra runs.

The sweep runs in one of two modes.  *Standard* (the ``smoke`` and ``quick``
default): posenc's model with the catalogue's clean encodings (:data:`CLEAN_PES`).
*Paper-code* (``paper_code=True``, ``posenc reproduce --paper-code``; the default
of the ``paper`` preset): the models of the paper's public code, exactly
(``code='paper'``, :mod:`.paper_specs`), with the PE of each role as that code
has it (:data:`PAPER_CODE_PES`, from the role table :data:`posenc.roles.ROLES`): its
``rope`` model of ``dis_gen/trans.py`` (a cat[sin, cos] table added to the input) is the
absolute+rope role, and ``count_gen/partialrope.py`` with K = all, 1, 2 heads is the rope,
rope-1head and rope-2heads roles.  The mode is part of every run's config, so the two never
share a run; their default stores differ too (``posenc-out/PRESET`` and
``posenc-out/PRESET-paper-code``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional

from ..coerce import is_int
from ..encodings import MLA, PESpec, parse_spec
from ..errors import PosencError
from ..limits import MAX_SEED, MAX_SEEDS, check_int
from ..roles import COUNT, DISTANCE, DYNAMICS, EXTRA, ROLES, default_roles
from ..training_presets import training_preset
from ..empirical.config import apply_overrides, check_overrides, paper_code_task_fields_for, \
    preset as train_preset
from ..empirical.paper_specs import paper_budget, paper_code_fields
from ..empirical.pipeline.experiment import LATENT_MODE, ExperimentConfig
from ..empirical.pipeline.sweep import Job
from ..empirical.analysis.ablation import MODES
from ..empirical.analysis.dynamics import DynamicsConfig

#: role -> spec, per model-code mode (the roles and their specs: :data:`posenc.roles.ROLES`)
CLEAN_PES = {r.name: r.spec for r in ROLES}
PAPER_CODE_PES = {r.name: r.paper_spec for r in ROLES}
#: Roles a sweep runs only when asked for by name (--roles): not in the default reproduction.
EXTRA_ROLES = EXTRA
DISTANCE_ROLES = default_roles(DISTANCE)
COUNT_ROLES = default_roles(COUNT)
#: distance-task roles whose runs record training dynamics (Prop. 6.1 / 6.2, Thm. 6.1)
DYNAMICS_ROLES = DYNAMICS


def _check_seeds(flag: str, n: Any) -> None:
    check_int(flag, n, MAX_SEEDS, why="seeds per configuration")


def _check_modes(modes: Any) -> None:
    if not (isinstance(modes, tuple) and modes and len(set(modes)) == len(modes)
            and set(modes) <= set(MODES)):
        raise PosencError(f"ablation modes must be distinct modes of {', '.join(MODES)}; "
                          f"got {modes!r}")


@dataclass(frozen=True)
class ReproductionPlan:
    preset: str = "quick"
    seeds: int = training_preset("quick").seeds
    distance_roles: tuple[str, ...] = DISTANCE_ROLES
    count_roles: tuple[str, ...] = COUNT_ROLES
    #: the modes each run's heads are ablated in (None: the preset record's ``ablation_modes``;
    #: a plan without ``zero`` records no dynamics); resolved to a tuple when the plan is made
    ablation_modes: Optional[tuple[str, ...]] = None
    overrides: dict[str, Any] = field(default_factory=dict)
    dynamics_roles: tuple[str, ...] = DYNAMICS_ROLES
    count_seeds: Optional[int] = None  # seeds of the count task (None: ``seeds``)
    #: seeds of single configurations, ``{"task/role": n}`` (``--until-decided`` adds to them);
    #: a configuration not named has its task's seeds
    config_seeds: dict[str, int] = field(default_factory=dict)
    #: the first seed: a plan runs seeds first_seed, first_seed + 1, ... (calibration uses seeds
    #: the report never runs, e.g. 1000-1002; see docs/reproduction.md)
    first_seed: int = 0
    #: the paper code's models (None: the default of the preset -- on for ``paper`` only)
    paper_code: Optional[bool] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "overrides", check_overrides(self.overrides))
        for role in self.distance_roles + self.count_roles:
            if role not in CLEAN_PES:
                raise PosencError(f"unknown PE role {role!r}; known: {', '.join(CLEAN_PES)}")
        record = training_preset(self.preset)
        if self.ablation_modes is None:
            object.__setattr__(self, "ablation_modes", record.ablation_modes)
        _check_modes(self.ablation_modes)
        _check_seeds("--seeds", self.seeds)
        if self.count_seeds is not None:
            _check_seeds("--count-seeds", self.count_seeds)
        for key, n in self.config_seeds.items():
            _check_seeds(f"seeds of {key}", n)
        if not is_int(self.first_seed) or not 0 <= self.first_seed <= MAX_SEED:
            raise PosencError(f"--first-seed must be an integer in 0..{MAX_SEED}; "
                              f"got {self.first_seed!r}")
        most = max(self.seed_counts().values(), default=0)
        if self.first_seed + most - 1 > MAX_SEED:
            raise PosencError(f"--first-seed {self.first_seed} with {most} seeds runs seeds past "
                              f"{MAX_SEED}; lower --first-seed")

    @classmethod
    def select(cls, preset: str, seeds: int, roles: Optional[list[str]] = None,
               tasks: Optional[list[str]] = None, **kwargs: Any) -> "ReproductionPlan":
        """A plan restricted to some roles and/or tasks (all by default).  Named ``roles`` run on
        every task of the plan, a role the default sweep runs on one task only (trans.py's
        rope, partial RoPE: distance) among them -- ``--roles absolute+rope --tasks count`` is
        the paper code's rope model on count; unnamed, each task runs its default roles."""
        tasks = list(tasks) if tasks else list(training_preset(preset).tasks)
        for t in tasks:
            if t not in ("distance", "count"):
                raise PosencError(f"unknown task {t!r}; known: distance, count")
        for r in roles or []:
            if r not in CLEAN_PES:
                raise PosencError(f"unknown PE role {r!r}; known: {', '.join(CLEAN_PES)}")
        def keep(rs: tuple[str, ...]) -> tuple[str, ...]:
            if roles is None:
                return rs
            return tuple(r.name for r in ROLES if r.name in roles)  # the table's order
        return cls(preset=preset, seeds=seeds,
                   distance_roles=keep(DISTANCE_ROLES) if "distance" in tasks else (),
                   count_roles=keep(COUNT_ROLES) if "count" in tasks else (), **kwargs)

    @classmethod
    def for_command(cls, preset: str, seeds: Optional[int] = None,
                    count_seeds: Optional[int] = None, **kwargs: Any) -> "ReproductionPlan":
        """The plan of ``posenc reproduce``: ``seeds`` per (task, PE) (default: the preset's,
        its record's ``seeds``), and ``count_seeds`` for the count task alone (default: ``seeds``)."""
        record = training_preset(preset)
        return cls.select(preset, record.seeds if seeds is None else seeds,
                          count_seeds=count_seeds, **kwargs)

    @property
    def n_count_seeds(self) -> int:
        """Seeds of the count task: ``count_seeds``, or ``seeds`` when that is None."""
        return self.seeds if self.count_seeds is None else self.count_seeds

    def seed_counts(self) -> dict[tuple[str, str], int]:
        """(task, role) -> how many seeds (0, 1, ...) the plan runs of that configuration."""
        out = {}
        for task, roles, n in (("distance", self.distance_roles, self.seeds),
                               ("count", self.count_roles, self.n_count_seeds)):
            for role in roles:
                out[(task, role)] = self.config_seeds.get(f"{task}/{role}", n)
        return out

    def with_seed_counts(self, counts: dict[tuple[str, str], int]) -> "ReproductionPlan":
        """The same plan with these per-configuration seed counts."""
        return replace(self, config_seeds={**self.config_seeds,
                                           **{f"{t}/{r}": n for (t, r), n in counts.items()}})

    @property
    def in_paper_code(self) -> bool:
        """Whether the sweep runs the paper code's models (the ``paper`` preset's default)."""
        if self.paper_code is None:
            return training_preset(self.preset).paper_code
        return bool(self.paper_code)

    @property
    def mode(self) -> str:
        return "paper-code" if self.in_paper_code else "standard"

    @property
    def pes(self) -> dict[str, str]:
        return PAPER_CODE_PES if self.in_paper_code else CLEAN_PES

    def _config(self, task: str, role: str, spec: PESpec, seed: int):
        """The run config of ``role`` (its PE parsed: ``spec``) on ``task`` at ``seed``."""
        budget = paper_budget(self.preset, role)  # the paper code's budget for MLA
        if not self.in_paper_code:
            return train_preset(self.preset, task=task, pe=spec, seed=seed,
                                **{**budget, **self.overrides})
        cfg = train_preset(self.preset, task=task, pe=spec, seed=seed)
        fields = {**paper_code_fields(spec),
                  **paper_code_task_fields_for(self.preset, cfg, self.overrides)}
        return apply_overrides(cfg, {**budget, **fields, **self.overrides})

    def experiments(self) -> list[ExperimentConfig]:
        out = []
        record = training_preset(self.preset)
        # test examples of each run's head ablation (every head of every layer, one at a time)
        size = record.ablation_examples
        counts = self.seed_counts()
        dynamics = DynamicsConfig(every=record.dynamics_every or DynamicsConfig.every).to_dict()
        # paper-code mode ablates over the whole data set, as the code's *vis.py do, unless the
        # preset says otherwise (then on ``size`` test examples)
        whole = self.in_paper_code and record.paper_code_ablates_whole_set
        # each role's spec string parsed once; a config stores it as spec.to_string(), which is
        # the role's string (the catalogue's strings and resolved named specs are canonical: tested)
        specs = {role: parse_spec(self.pes[role])
                 for role in dict.fromkeys(self.distance_roles + self.count_roles)}  # each once
        for task, roles in (("distance", self.distance_roles), ("count", self.count_roles)):
            for role in roles:
                for seed in range(self.first_seed, self.first_seed + counts[(task, role)]):
                    cfg = self._config(task, role, specs[role], seed)
                    # the latent-columns ablation only where there is a latent: MLA
                    modes = tuple(m for m in self.ablation_modes or ()
                                  if m != LATENT_MODE or isinstance(specs[role], MLA))
                    out.append(ExperimentConfig(
                        train=cfg, ablation_modes=modes,
                        ablation_examples=cfg.task.n_samples if whole else size,
                        ablation_data="all" if whole else "test",
                        probe=True, probe_examples=record.probe_examples, tags={"role": role},
                        dynamics=dynamics if task == "distance"
                        and role in self.dynamics_roles and "zero" in modes
                        else None))
        return out

    def jobs(self, device: Optional[str] = None) -> list[Job]:
        """One job per experiment, seed-major: a sweep stopped part-way (or one resumed
        later) holds whole seeds -- every configuration of its first seeds -- rather
        than every seed of its first configurations."""
        jobs = []
        for exp in sorted(self.experiments(), key=lambda e: e.train.seed):  # (stable)
            if device is not None:
                exp = exp.replace(train=exp.train.replace(device=device))
            t = exp.train
            label = f"{t.task.name}/{exp.tags['role']}/s{t.seed}"
            jobs.append(Job(config=exp.to_dict(), kind="experiment", label=label,
                            wants_cuda=t.device == "cuda"))
        return jobs


WORKER = "posenc.empirical.pipeline.experiment:experiment_worker"


#: how far the replication's seeds lie from the first seed set by default (seeds 0-5 -> 2000-2005)
REPLICA_OFFSET = 2000


def replica_of(plan: Any, first_seed: Optional[int] = None) -> Any:
    """The plan on the replication's seeds: the same configurations and seed counts from
    ``first_seed`` (default: the plan's first seed + :data:`REPLICA_OFFSET`); refused when the two
    seed sets overlap."""
    start = plan.first_seed + REPLICA_OFFSET if first_seed is None else first_seed
    out = replace(plan, first_seed=start)  # validates the seed
    n = max(plan.seed_counts().values(), default=0)
    if start < plan.first_seed + n and plan.first_seed < start + n:
        raise PosencError(f"the replication's seeds {start}..{start + n - 1} overlap the first "
                          f"seeds {plan.first_seed}..{plan.first_seed + n - 1}: a replication "
                          "needs a disjoint seed set")
    return out
