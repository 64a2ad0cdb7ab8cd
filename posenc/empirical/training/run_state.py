"""A run between two epochs: the value :func:`~.train.train` carries through its loop, saved as
the run's checkpoint after every epoch and read back to resume it.

:class:`RunState` holds the model, the optimiser, the epochs' metrics records, the number of
epochs done, the best-validation weights (early stopping) and the run's clock; the global RNG
is saved with it and restored on resume, so a resumed run goes on bit for bit.
:class:`RunClock` keeps the wall and CPU seconds of all the run's epochs across resumes: the
earlier calls' (from the checkpoint) plus this call's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import torch

from ...errors import PosencError
from ..config import TrainConfig
from .runs import FORMAT, atomic_torch_save, read_checkpoint


@dataclass
class RunClock:
    """The wall and CPU seconds of a run's epochs: ``earlier`` (and the dynamics recording's
    share ``earlier_dynamics``, and ``earlier_cpu``: this process's CPU time, every thread) from
    the checkpoint it resumed from, ``epoch_seconds`` of every epoch, and this call's time since
    :meth:`start`.  ``known`` is False for a run resumed from a checkpoint that held no times
    (written before posenc kept them, 2026-12-06): its epochs count 0 seconds, and every later
    checkpoint of the run says so; ``earlier_cpu`` is None, and stays None, for a run resumed
    from a checkpoint that held no CPU time (written before 2026-12-07)."""

    earlier: float = 0.0
    earlier_dynamics: float = 0.0
    epoch_seconds: list[float] = field(default_factory=list)
    known: bool = True
    earlier_cpu: Optional[float] = 0.0
    started: float = field(default_factory=time.perf_counter)
    started_cpu: float = field(default_factory=time.process_time)

    @classmethod
    def of_checkpoint(cls, ckpt: dict[str, Any]) -> RunClock:
        cpu = ckpt.get("cpu_seconds")
        return cls(earlier=float(ckpt.get("seconds", 0.0)),
                   earlier_dynamics=float(ckpt.get("dynamics_seconds", 0.0)),
                   epoch_seconds=[float(x) for x in ckpt.get("epoch_seconds", [])],
                   known="seconds" in ckpt and bool(ckpt.get("seconds_known", True)),
                   earlier_cpu=None if cpu is None else float(cpu))

    def start(self) -> None:
        """This call's time counts from now."""
        self.started, self.started_cpu = time.perf_counter(), time.process_time()

    def so_far(self, dynamics_seconds: float = 0.0) -> dict[str, Any]:
        """The run's times over all its epochs (``dynamics_seconds``: this call's recording), as
        the checkpoint stores them."""
        cpu = None if self.earlier_cpu is None else \
            self.earlier_cpu + time.process_time() - self.started_cpu
        return {"seconds": self.earlier + time.perf_counter() - self.started,
                "epoch_seconds": list(self.epoch_seconds),
                "dynamics_seconds": self.earlier_dynamics + dynamics_seconds,
                "seconds_known": self.known, "cpu_seconds": cpu}

    def resumed(self, from_epoch: int) -> Optional[dict[str, Any]]:
        """{from_epoch, earlier_seconds, earlier_cpu_seconds} of a run resumed at ``from_epoch``
        (None: trained in one go); the earlier times None when the checkpoint did not hold them."""
        if from_epoch == 0:
            return None
        return {"from_epoch": from_epoch,
                "earlier_seconds": round(self.earlier, 3) if self.known else None,
                "earlier_cpu_seconds": None if self.earlier_cpu is None else
                round(self.earlier_cpu, 3)}


@dataclass
class RunState:
    """A run after ``epoch`` epochs: its model and optimiser, a metrics record per epoch, the
    weights of the best validation epoch (None without early stopping), its clock."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    metrics: list[dict[str, Any]] = field(default_factory=list)
    epoch: int = 0
    best: Optional[dict[str, torch.Tensor]] = None
    clock: RunClock = field(default_factory=RunClock)

    def resume(self, path: Path, device: torch.device) -> None:
        """Load the checkpoint at ``path`` (checked by the caller to be this config's) into the
        model, the optimiser and the global RNG, and take its epochs, metrics and times."""
        ckpt = read_checkpoint(path, device)
        try:
            self.model.load_state_dict(ckpt["model"])
            self.optimizer.load_state_dict(ckpt["optimizer"])
            torch.set_rng_state(ckpt["rng"].cpu())
            if device.type == "cuda" and "cuda_rng" in ckpt:
                torch.cuda.set_rng_state(ckpt["cuda_rng"].cpu(), device)
        except (RuntimeError, ValueError, TypeError, KeyError, AttributeError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
            raise PosencError(f"checkpoint {path} cannot be resumed ({first}); "
                              f"start over with --restart") from None
        self.metrics, self.epoch = list(ckpt["metrics"]), int(ckpt["epoch"])
        self.best = ckpt.get("best_model")
        self.clock = RunClock.of_checkpoint(ckpt)

    def save(self, path: Path, config: TrainConfig, device: torch.device,
             dynamics_seconds: float = 0.0) -> None:
        """The checkpoint: weights, optimiser, RNG, epochs, metrics, best weights, times, config."""
        atomic_torch_save({"format": FORMAT, "model": self.model.state_dict(),
                           "optimizer": self.optimizer.state_dict(), "rng": torch.get_rng_state(),
                           **({"cuda_rng": torch.cuda.get_rng_state(device)}
                              if device.type == "cuda" else {}),
                           "epoch": self.epoch, "metrics": self.metrics,
                           **({"best_model": self.best} if self.best is not None else {}),
                           **self.clock.so_far(dynamics_seconds),
                           "config": config.to_dict()}, path)

    def use_best(self) -> None:
        """Early stopping's end: the best-validation weights become the model."""
        self.model.load_state_dict(self.best)

    def save_kept(self, path: Path, device: torch.device, best_epoch: int) -> None:
        """The checkpoint at ``path`` rewritten with the kept (best-validation) weights, the
        ``best_epoch`` and the metrics (the kept epoch's record now with its test numbers)."""
        ckpt = read_checkpoint(path, device)
        ckpt.update(model=self.best, best_epoch=best_epoch, metrics=self.metrics)
        atomic_torch_save(ckpt, path)

    def snapshot_best(self) -> None:
        """The current weights as the best validation epoch's."""
        self.best = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    @property
    def diverged(self) -> bool:
        """Whether the last epoch ended at a non-finite training loss."""
        return bool(self.metrics) and "diverged_step" in self.metrics[-1]
