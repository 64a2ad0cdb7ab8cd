"""A seed of a seed-batched group (:func:`~.seed_group.train_group`) as an ordinary run folder.

:func:`write_group_run` writes what :func:`posenc.empirical.training.train.train` writes for a
finished run -- ``train_config.json``, ``checkpoint.pt`` (the kept weights, the seed's AdamW state
as torch's ``AdamW.state_dict()``, an RNG state, the epoch and metrics), ``metrics.jsonl`` and
``train_summary.json`` with the same keys -- so that ``train()`` on the folder finds the run
finished (and :func:`~.runs.load_run`, the ablation, the probe and the report read it as any
other).  The training trace (``trace.jsonl``) is written by ``train_group`` itself
(``trace_dirs``).  Added to the summary: ``seed_group`` -- the group's size, its members' seeds
and wall seconds; ``seconds`` is the seed's share of them, in proportion to its optimiser steps
(a seed that stopped early trained for fewer of the group's steps).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .runs import (CHECKPOINT, CONFIG, FORMAT, atomic_torch_save, atomic_write_text, model_for,
                   write_metrics)
from .seed_group import GroupRun
from .train import RunResult, make_optimizer, write_summary


def optimizer_state(run: GroupRun) -> dict[str, Any]:
    """The seed's AdamW state as ``torch.optim.AdamW(...).state_dict()`` of its single model:
    the group's rows of the moments split by parameter (``named_parameters`` order, the group's
    layout), the step count and the last learning rate."""
    model = model_for(run.config)
    opt = make_optimizer(model, run.config)
    st = run.optimizer
    off = 0
    for _, p in model.named_parameters():
        size = p.numel()
        opt.state[p] = {"step": torch.tensor(float(st["steps"]), dtype=torch.float32),
                        "exp_avg": st["exp_avg"][off:off + size].view(p.shape).clone(),
                        "exp_avg_sq": st["exp_avg_sq"][off:off + size].view(p.shape).clone()}
        off += size
    if off != st["exp_avg"].numel():
        raise ValueError(f"the group's optimizer rows hold {st['exp_avg'].numel()} values, the "
                         f"model {off}")
    for group in opt.param_groups:
        group["lr"] = st["lr"]
    return opt.state_dict()


def group_shares(runs: list[GroupRun], group_seconds: float) -> list[float]:
    """Each seed's share of the group's wall seconds, in proportion to its optimiser steps."""
    steps = [max(0, int(r.optimizer.get("steps", 0))) for r in runs]
    total = sum(steps)
    if total == 0:
        return [group_seconds / len(runs)] * len(runs)
    return [group_seconds * k / total for k in steps]


def write_group_run(run: GroupRun, out: str | Path, group_seconds: float, members: list[int],
                    seconds: float, device: str = "cpu") -> RunResult:
    """Write ``run`` into ``out`` as train.py's finished run (module doc): ``members`` are the
    seeds of its group, ``seconds`` its share of the group's ``group_seconds``
    (:func:`group_shares`); returns the :class:`~.runs.RunResult` that ``train()`` would have
    returned."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config, metrics = run.config, list(run.metrics)
    atomic_write_text(out / CONFIG, config.to_json() + "\n")
    stop = run.early_stopping
    ckpt = {"format": FORMAT, "model": run.state_dict, "optimizer": optimizer_state(run),
            "rng": torch.get_rng_state(), "epoch": len(metrics), "metrics": metrics,
            "config": config.to_dict()}
    if stop is not None:
        ckpt.update(best_model=run.state_dict, best_epoch=stop["best_epoch"])
    atomic_torch_save(ckpt, out / CHECKPOINT)
    write_metrics(out, metrics)
    final = run.final
    result = write_summary(out, config, metrics, final, n_params=run.n_params, seconds=seconds,
                           epoch_seconds=[], device=device, n_train=run.n_train,
                           n_test=run.n_test, stop=stop, diverged=run.diverged,
                           extra={"seed_group": {"seeds": len(members), "members": list(members),
                                                 "seconds": group_seconds}})
    return RunResult(str(out), config, tuple(metrics), final["test_acc"], result["best_test_acc"],
                     run.n_params, seconds, device, early_stopping=stop)
