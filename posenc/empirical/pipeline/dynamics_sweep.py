"""The sweep side of training dynamics: :func:`dynamics_worker` (train with dynamics on, ablate,
summarise) and :func:`dynamics_jobs` (its jobs for :func:`~posenc.empirical.pipeline.sweep.run_jobs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ...errors import PosencError
from ..analysis.dynamics_summary import summarize
from ..analysis.ablation import ablate
from ..config import config_from_dict, check_overrides, preset
from ..analysis.dynamics import DynamicsConfig, read_dynamics_file, dynamics_file
from ..training.runs import load_run, CHECKPOINT, RESULT
from ..training.train import resolve_device, train
from .sweep import Job


def dynamics_worker(config: dict[str, Any], folder: str, threads: int) -> dict[str, Any]:
    """Sweep worker (:mod:`.sweep`): train with dynamics on, ablate, summarise.

    ``config`` is a :meth:`TrainConfig.to_dict`, or ``{"train": ..., "dynamics": {...},
    "ablation_examples": 1000, "tags": {...}}``.  Returns ``summary`` (task, pe, seed, preset,
    test_acc, ..., tags with ``role`` -- the PE family unless given -- and ``dynamics: True``),
    ``dynamics`` (:func:`summarize`), ``ablation`` ({"zero": table}) and ``metrics``.
    """
    if "train" in config:
        known = {"train", "dynamics", "ablation_examples", "tags"}
        if set(config) - known:
            raise PosencError(f"unknown dynamics job key(s): {', '.join(sorted(set(config) - known))}")
        cfg = config_from_dict(config["train"])
        dyn = DynamicsConfig.from_dict(config.get("dynamics", {}))
        n_ablate, tags = int(config.get("ablation_examples", 1000)), dict(config.get("tags", {}))
    else:
        cfg, dyn, n_ablate, tags = config_from_dict(config), DynamicsConfig(), 1000, {}
    tags.setdefault("role", cfg.model.spec.family)
    tags["dynamics"] = True
    if threads > 0:
        cfg = cfg.replace(num_threads=threads)
    folder_p = Path(folder)
    check_recordable(folder_p)
    res = train(cfg, folder, progress=False, dynamics=dyn)
    header, records = read_dynamics_file(folder_p)
    if header.get("dynamics") != dyn.to_dict():
        raise PosencError(f"{folder} was recorded with other dynamics settings "
                          f"{header.get('dynamics')}; choose another folder")
    if res.skipped and (not records or not records[-1].get("final")):
        res = train(cfg, folder, progress=False, resume=False, dynamics=dyn)
        header, records = read_dynamics_file(folder_p)
    run = load_run(folder, device=resolve_device(cfg.device), expected=cfg)  # ablate where the run trained
    test = run.data().test
    table = ablate(run.model, test.subset(slice(0, min(n_ablate, len(test)))), "zero",
                   seed=cfg.seed, distances=False)
    table.save(folder_p / "ablation_zero.json")
    summary = {"task": cfg.task.name, "pe": cfg.model.pe, "seed": cfg.seed, "preset": cfg.preset,
               "test_acc": res.final_test_acc, "best_test_acc": res.best_test_acc,
               "n_test": len(test), "epochs": len(res.metrics), "seconds": res.seconds,
               "n_params": res.n_params, "n_layers": cfg.model.n_layers,
               "n_heads": cfg.model.n_heads, "tags": tags}
    return {"summary": summary, "dynamics": summarize(header, records, ablation=table.to_dict()),
            "ablation": {"zero": table.to_dict()}, "metrics": list(res.metrics)}


def check_recordable(folder: Path) -> None:
    """Refuse a folder whose run trained without dynamics recording (finished or not).

    Records start at step 0, so such a run could only be recorded by training it again, which
    would replace its checkpoint and results; it is left as it is, and the message says how to
    record the same run elsewhere."""
    if dynamics_file(folder) is not None or not ((folder / RESULT).is_file()
                                             or (folder / CHECKPOINT).is_file()):
        return
    state = "finished" if (folder / RESULT).is_file() else "partly trained"
    raise PosencError(f"{folder} holds a {state} run trained without dynamics recording, which "
                      f"starts at step 0; the run is left as it is -- record one into a new folder "
                      f"(posenc dynamics NEW_DIR --record, with the same options)")


WORKER = "posenc.empirical.pipeline.dynamics_sweep:dynamics_worker"


def dynamics_jobs(preset_name: str = "quick", seeds: int = 2,
                  roles: Optional[dict[str, str]] = None, task: str = "distance",
                  overrides: Optional[dict[str, Any]] = None, dynamics: Optional[dict] = None,
                  ablation_examples: int = 1000, device: Optional[str] = None) -> list:
    """Sweep jobs (:class:`~posenc.empirical.pipeline.sweep.Job`, kind ``dynamics``, worker
    :data:`WORKER`) for ``roles`` (role -> PE spec; default RoPE and ALiBi) x seeds, ready for
    :func:`~posenc.empirical.pipeline.sweep.run_jobs`; their results feed
    :func:`posenc.verdicts.dynamics.evaluate_dynamics`."""
    roles = roles or {"rope": "rope", "alibi": "alibi"}
    overrides = check_overrides(overrides or {}, "overrides")
    dyn = DynamicsConfig.from_dict(dynamics or {}).to_dict()
    jobs = []
    for role, spec in roles.items():
        for seed in range(seeds):
            cfg = preset(preset_name, task=task, pe=spec, seed=seed, **(overrides or {}))
            if device is not None:
                cfg = cfg.replace(device=device)
            jobs.append(Job(config={"train": cfg.to_dict(), "dynamics": dyn,
                                    "ablation_examples": ablation_examples,
                                    "tags": {"role": role}},
                            kind="dynamics", label=f"dynamics/{task}/{role}/s{seed}",
                            wants_cuda=cfg.device == "cuda"))
    return jobs
