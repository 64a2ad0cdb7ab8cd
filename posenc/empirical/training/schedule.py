"""A run's optimiser and learning-rate schedule as plain numbers (no torch): what the training
loop (:mod:`.train`) steps with, and what RA's drift null (:mod:`posenc.verdicts.drift_null`)
replays on a table of pure noise.

The schedule: AdamW (torch's, ``eps`` its default 1e-8, which :func:`.train.make_optimizer`
keeps) at a peak rate ``lr``, linear warm-up over ``warmup = round(warmup_frac * total)``
steps, then cosine to 0 at ``total = steps_per_epoch * epochs`` (:func:`lr_factor`).  A run that
stops early (early stopping) has trained fewer steps than ``total`` of the same schedule.

A run's result records it as ``summary["schedule"]`` (:meth:`OptimizerSchedule.to_dict`); a
result stored before it was recorded gets it from the run's config and per-epoch metrics when
read from its store (:meth:`~posenc.empirical.pipeline.experiment_result.ExperimentResult.from_stored`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Optional

from ...errors import PosencError


def lr_factor(step: int, total: int, warmup: int) -> float:
    """Linear warm-up from 0 over ``warmup`` steps, then cosine from 1 to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


@dataclass(frozen=True)
class OptimizerSchedule:
    """AdamW's settings and the learning-rate schedule of one run (see the module doc)."""

    lr: float
    betas: tuple[float, float]
    weight_decay: float
    warmup_frac: float
    epochs: int
    steps_per_epoch: int

    @property
    def total(self) -> int:
        return self.steps_per_epoch * self.epochs

    @property
    def warmup(self) -> int:
        return int(round(self.warmup_frac * self.total))

    def rate(self, step: int) -> float:
        """The learning rate of update ``step`` (0-based)."""
        return self.lr * lr_factor(step, self.total, self.warmup)

    @classmethod
    def of(cls, config: Any, steps_per_epoch: int) -> "OptimizerSchedule":
        """The schedule of a :class:`~posenc.empirical.config.TrainConfig`."""
        return cls(lr=float(config.lr), betas=(float(config.betas[0]), float(config.betas[1])),
                   weight_decay=float(config.weight_decay),
                   warmup_frac=float(config.warmup_frac), epochs=int(config.epochs),
                   steps_per_epoch=int(steps_per_epoch))

    @classmethod
    def of_run(cls, config: Any, metrics: Any) -> Optional["OptimizerSchedule"]:
        """The schedule of a stored run from its TrainConfig and per-epoch ``metrics`` (the
        first epoch's ``step`` is the steps per epoch); None without them."""
        first = metrics[0] if isinstance(metrics, list) and metrics else None
        step = first.get("step") if isinstance(first, dict) else None
        if not isinstance(step, int) or isinstance(step, bool) or step <= 0:
            return None
        return cls.of(config, step)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["betas"] = list(self.betas)
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "a schedule") -> "OptimizerSchedule":
        """Read :meth:`to_dict`'s form; a malformed one is a PosencError naming ``where``."""
        try:
            out = cls(lr=float(data["lr"]), betas=(float(data["betas"][0]),
                                                   float(data["betas"][1])),
                      weight_decay=float(data["weight_decay"]),
                      warmup_frac=float(data["warmup_frac"]), epochs=int(data["epochs"]),
                      steps_per_epoch=int(data["steps_per_epoch"]))
        except (KeyError, IndexError, TypeError, ValueError):
            raise PosencError(f"{where}: its optimiser schedule is malformed ({data!r})") from None
        ok = (math.isfinite(out.lr) and out.lr > 0 and all(0 <= b < 1 for b in out.betas)
              and math.isfinite(out.weight_decay) and out.weight_decay >= 0
              and 0 <= out.warmup_frac < 1 and out.epochs > 0 and out.steps_per_epoch > 0)
        if not ok:
            raise PosencError(f"{where}: its optimiser schedule is out of range ({data!r})")
        return out
