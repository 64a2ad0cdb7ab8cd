"""The options of one reproduction: one value, built and checked once where a call enters.

``posenc reproduce`` (:func:`ReproduceOptions.from_command`) and :func:`posenc.reproduce`
(keyword arguments named as the fields) each build a :class:`ReproduceOptions`; everything below
them (:func:`posenc.reproduction.run.reproduce`, the plan, the sweep) takes it whole.  Every
check of a value's kind, and of which options go together, is made here, when the value is made
(the seed range and the roles are the plan's, checked next), so a refusal comes before any store
is read or written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional

from .. import arguments as arg
from ..empirical.pipeline.sweep import BACKENDS
from ..errors import PosencError
from ..limits import MAX_SEEDS, check_int
from ..training_presets import training_preset
from .rounds import check_round_sizes

#: seeds ``--until-decided`` adds to a configuration per round when not told
DEFAULT_SEED_BATCH = 2


def _count(name: str, value: Any) -> Optional[int]:
    """None, or a seed count within the limit."""
    return None if value is None else check_int(name, value, MAX_SEEDS,
                                                why="seeds per configuration")


@dataclass(frozen=True)
class ReproduceOptions:
    """What one ``posenc reproduce`` is asked to do (the flags of ``posenc reproduce --help``;
    :func:`posenc.reproduce` documents each)."""

    preset: str = "quick"
    out: Optional[str] = None                    # the store (None: posenc-out/PRESET[-paper-code])
    backend: str = "local"
    seeds: Optional[int] = None                  # per (task, PE); None: the preset's
    count_seeds: Optional[int] = None            # of the count task alone; None: ``seeds``
    workers: int = 2
    threads: int = 1
    ray_address: Optional[str] = None
    device: Optional[str] = None
    roles: Optional[tuple[str, ...]] = None      # None: the preset's roles
    tasks: Optional[tuple[str, ...]] = None      # None: the preset's tasks
    overrides: Mapping[str, Any] = field(default_factory=dict)  # --set KEY=VALUE
    theory: bool = True                          # the report's theory-claims table
    wait: bool = False                           # wait for another writer of the store
    until_decided: bool = False
    max_seeds: Optional[int] = None              # with until_decided
    seed_batch: Optional[int] = None             # with until_decided (None: 2)
    first_seed: int = 0
    paper_code: Optional[bool] = None            # None: the preset's default
    replicate: bool = False
    replicate_first_seed: Optional[int] = None   # with replicate (None: first_seed + 2000)
    keep_checkpoints: bool = False
    retrain_incomplete: bool = False
    progress: Optional[bool] = None              # a tqdm bar (None: on a terminal)

    def __post_init__(self) -> None:
        training_preset(self.preset)
        if self.backend not in BACKENDS:
            raise PosencError(f"unknown backend {self.backend!r}; known: {', '.join(BACKENDS)}")
        if arg.path("out", self.out, optional=True) is not None:
            object.__setattr__(self, "out", os.fspath(self.out))
        for name in ("workers", "threads"):
            check_int(name, getattr(self, name), 1024)
        for name in ("seeds", "count_seeds"):
            _count(f"--{name.replace('_', '-')}", getattr(self, name))
        for name in ("roles", "tasks"):
            listed = arg.names(name, getattr(self, name))
            object.__setattr__(self, name, None if listed is None else tuple(listed))
        object.__setattr__(self, "overrides", arg.mapping("overrides", self.overrides))
        for name in ("theory", "wait", "until_decided", "replicate", "keep_checkpoints",
                     "retrain_incomplete"):
            arg.flag(name, getattr(self, name))
        for name in ("paper_code", "progress"):
            arg.flag(name, getattr(self, name), optional=True)
        self._check_together()

    def _check_together(self) -> None:
        """The options that go only with another one, or not with it."""
        if not self.until_decided and (self.max_seeds is not None or self.seed_batch is not None):
            raise PosencError("--max-seeds and --seed-batch go with --until-decided")
        if self.until_decided:
            if self.max_seeds is None:
                raise PosencError("--until-decided needs --max-seeds N")
            check_round_sizes(self.max_seeds, self.batch)
        if self.replicate and self.until_decided:
            raise PosencError("--replicate and --until-decided do not go together: a replication "
                              "runs the same seed counts on other seeds")
        if not self.replicate and self.replicate_first_seed is not None:
            raise PosencError("--replicate-first-seed goes with --replicate")

    @property
    def batch(self) -> int:
        """The seeds ``--until-decided`` adds per round."""
        return DEFAULT_SEED_BATCH if self.seed_batch is None else self.seed_batch

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The options, in the order of the fields."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_command(cls, args: Any, overrides: Mapping[str, Any]) -> "ReproduceOptions":
        """The options of a parsed ``posenc reproduce`` command line: each flag's value under
        the field of its name; ``overrides`` its ``--set`` values parsed, ``--no-theory`` the
        theory table left out (the command has no ``progress`` flag: a bar on a terminal)."""
        given = {name: getattr(args, name) for name in cls.names()
                 if name not in ("overrides", "theory", "progress")}
        return cls(**given, overrides=overrides, theory=not args.no_theory)
