"""One experiment of a reproduction sweep: train, then ablate and analyse.

:func:`experiment_worker` is the sweep worker (see :mod:`posenc.empirical.pipeline.sweep`)
of ``posenc reproduce``.  Its config is an :class:`ExperimentConfig` as a dict:
the training config plus what to measure afterwards.  It writes into the run
folder the training files (:mod:`posenc.empirical.training.runs`), one
``ablation_<mode>.json`` table per ablation mode (no strip plot: the report draws each PE's
over its seeds from the results) and ``probe.json``; it returns a JSON result that the report
reads without loading any model:

``summary``   task, pe, seed, test accuracy (fraction), epochs, seconds, params (and, for a run
              with early stopping, where it stopped: see :mod:`posenc.empirical.training.train`)
``ablation``  {mode: AblationTable.to_dict()} on the first ``ablation_examples`` examples of
              ``ablation_data``: ``test`` (the test split) or ``all`` (train then test split:
              the whole data set, as the paper code's ``*vis.py`` scripts ablate)
``probe``     position probe R^2 and positional energy per residual site
``metrics``   per-epoch training metrics
``table_mean`` for a model with learned per-offset relative tables: the test accuracy with
              each head's table replaced by its mean over offsets, and as trained
              (:func:`~posenc.empirical.analysis.table_mean.mean_table_accuracy`; its time is in
              the ablation phase); absent for other PEs and for runs measured before it existed
``trace``     the training trace's statistics (:func:`~posenc.empirical.training.trace.summarize_trace`:
              gradient-norm jitter, loss spikes, steps to 90% accuracy, relative-table
              magnitudes); absent for a run trained before the trace was recorded
``dynamics``  only when the config asks for it (``dynamics``: a
              :class:`~posenc.empirical.analysis.dynamics.DynamicsConfig` as a dict): the run's
              training-dynamics summary (:func:`~posenc.empirical.analysis.dynamics_summary.summarize`,
              deposit head from the zero-ablation table), recorded in the same training run
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from ...encodings import MLA
from ...errors import PosencError
from ..analysis.latent_ablation import MODE as LATENT_MODE
from ..config import TrainConfig, stored_config
import torch
from ..tasks import TaskData
from ..analysis.dynamics import DynamicsConfig, dynamics_file, read_dynamics_file
from ..training.train import train, evaluate, resolve_device
from ..analysis.ablation import ablate
from ..bayes_ceiling import length_only_rate, recorded_ceiling
from ..analysis.probe import position_probe
from ..analysis.table_mean import mean_table_accuracy
from ..training.schedule import OptimizerSchedule
from ..training.runs import load_run
from ..training.trace import read_trace, summarize_trace
from ..analysis.dynamics_summary import summarize


#: what a run's head ablation reads: its test split, or the whole data set (train then test)
ABLATION_DATA = ("test", "all")


def ablation_source(split: Any, which: str) -> Any:
    """The examples ``which`` (:data:`ABLATION_DATA`) names, from a run's train/test ``split``."""
    if which == "test":
        return split.test
    tr, te = split.train, split.test
    return TaskData(torch.cat([tr.tokens, te.tokens]), torch.cat([tr.labels, te.labels]),
                    torch.cat([tr.lengths, te.lengths]), te.n_classes)


@dataclass(frozen=True)
class ExperimentConfig:
    train: TrainConfig
    ablation_modes: tuple[str, ...] = ("zero",)
    ablation_examples: int = 1000
    ablation_data: str = "test"  # ABLATION_DATA
    probe: bool = True
    probe_examples: int = 600
    tags: dict[str, Any] = field(default_factory=dict)
    dynamics: Optional[dict[str, Any]] = None  # DynamicsConfig.to_dict(); None: not recorded

    def __post_init__(self) -> None:
        if LATENT_MODE in self.ablation_modes and not isinstance(self.train.model.spec, MLA):
            raise PosencError(f"the {LATENT_MODE} ablation is for MLA models; PE "
                              f"{self.train.model.pe!r} has no latent")
        if self.ablation_data not in ABLATION_DATA:
            raise PosencError(f"ablation_data must be one of {', '.join(ABLATION_DATA)}; "
                              f"got {self.ablation_data!r}")
        if self.dynamics is not None:
            DynamicsConfig.from_dict(self.dynamics)  # validates
            if "zero" not in self.ablation_modes:
                raise PosencError("dynamics needs the zero ablation (it names the deposit head)")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["train"] = self.train.to_dict()
        data["ablation_modes"] = list(self.ablation_modes)
        if self.dynamics is None:  # absent, not null: run ids of runs without dynamics unchanged
            del data["dynamics"]
        if self.ablation_data == "test":  # (as dynamics)
            del data["ablation_data"]
        return data

    def replace(self, **changes: Any) -> "ExperimentConfig":
        return replace(self, **changes)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExperimentConfig":
        known = {"train", "ablation_modes", "ablation_examples", "ablation_data", "probe",
                 "probe_examples", "tags", "dynamics"}
        unknown = set(data) - known
        if unknown:
            raise PosencError(f"unknown experiment key(s): {', '.join(sorted(unknown))}")
        return cls(train=stored_config(data["train"], "an experiment config"),
                   ablation_modes=tuple(data.get("ablation_modes", ("zero",))),
                   ablation_examples=int(data.get("ablation_examples", 1000)),
                   ablation_data=str(data.get("ablation_data", "test")),
                   probe=bool(data.get("probe", True)),
                   probe_examples=int(data.get("probe_examples", 600)),
                   tags=dict(data.get("tags", {})), dynamics=data.get("dynamics"))


def _dynamics_complete(folder: Path, dyn: Any) -> bool:
    if dynamics_file(folder) is None:
        return False
    try:
        header, records = read_dynamics_file(folder)
    except PosencError:
        return False
    return header.get("dynamics") == dyn.to_dict() and bool(records) and bool(records[-1].get("final"))


def chance_rate(data: Any) -> float:
    """The accuracy of always answering the most frequent label of ``data`` (a TaskData): the
    task's chance rate as the verdicts use it (a PE within a few points of it learned nothing)."""
    return float(torch.bincount(data.labels).max()) / max(1, len(data))


def experiment_worker(config: dict[str, Any], folder: str, threads: int) -> dict[str, Any]:
    """Train, ablate every head in every layer, probe position; see the module doc."""
    cpu_start = time.process_time()
    exp = ExperimentConfig.from_dict(config)
    cfg = exp.train.replace(num_threads=threads) if threads > 0 else exp.train
    dyn = None
    if exp.dynamics is not None:
        dyn = DynamicsConfig.from_dict(exp.dynamics)
        # a finished run whose dynamics file is missing or incomplete cannot be re-recorded by
        # resuming: start over (the sweep's run folder belongs to this config alone)
        res = train(cfg, folder, progress=False, dynamics=dyn)
        if res.skipped and not _dynamics_complete(Path(folder), dyn):
            res = train(cfg, folder, progress=False, resume=False, dynamics=dyn)
    else:
        res = train(cfg, folder, progress=False)
    return measure(exp, cfg, folder, res, dyn, cpu_start=cpu_start)


def measure(exp: ExperimentConfig, cfg: TrainConfig, folder: str, res: Any,
            dyn: Any = None, cpu_start: Optional[float] = None) -> dict[str, Any]:
    """Ablate and probe the run trained into ``folder`` (``res``: its
    :class:`~posenc.empirical.training.train.RunResult`); the worker's result (module doc).
    ``cpu_start``: the worker process's ``time.process_time()`` when the call began; the
    summary's ``cpu_seconds`` is then the CPU time of the whole call (training, ablation,
    probe; every thread of the process: with one torch thread, the run's own cost whatever
    the machine's load), plus, for a run resumed part-way, its earlier calls' training CPU time
    as its checkpoint kept it (``resumed.earlier_cpu_seconds``; where that is None, a checkpoint
    written before posenc kept it, ``cpu_seconds`` counts the last call only and
    ``cpu_seconds_complete`` is False)."""
    # ablate and probe where it trained; the checkpoint must be of the config just trained
    run = load_run(folder, device=resolve_device(cfg.device), expected=cfg)
    split = run.data()
    test, source = split.test, ablation_source(split, exp.ablation_data)
    sub = source.subset(slice(0, min(exp.ablation_examples, len(source))))
    # a run that diverged to non-finite weights is a result (its accuracy, where it diverged)
    # with nothing to ablate or probe: its tables would be noise
    broken = bool(run.diverged) and not run.diverged.get("kept_finite")
    t_ablation = time.perf_counter()
    ablations = {}
    for mode in () if broken else exp.ablation_modes:
        table = ablate(run.model, sub, mode, seed=cfg.seed)
        table.save(Path(folder) / f"ablation_{mode}.json")
        ablations[mode] = table.to_dict()
    table_mean = None if broken else mean_table_accuracy(
        run.model, test, int(split.train.tokens.shape[1]), evaluate, batch_size=cfg.eval_batch_size,
        device=next(run.model.parameters()).device, precision=cfg.precision, step=cfg.step)
    t_probe = time.perf_counter()
    probe = position_probe(run.model, test, exp.probe_examples) if exp.probe and not broken \
        else None
    t_end = time.perf_counter()
    if probe is not None:
        (Path(folder) / "probe.json").write_text(json.dumps(probe, indent=2) + "\n")
    summary = {"task": cfg.task.name, "pe": cfg.model.pe, "seed": cfg.seed, "preset": cfg.preset,
               "code": cfg.model.code,
               "test_acc": res.final_test_acc, "best_test_acc": res.best_test_acc,
               "n_test": len(test), "chance": chance_rate(test), "length_rate": length_only_rate(cfg.task),
               "bayes_ceiling": recorded_ceiling(cfg.task),
               "epochs": len(res.metrics), "batch_size": cfg.batch_size, "seconds": res.seconds,
               "n_params": res.n_params, "n_layers": cfg.model.n_layers,
               "n_heads": cfg.model.n_heads, "tags": exp.tags,
               # wall time per phase of this worker call (training: the run's own, validation
               # included, the dynamics recording apart; 0 when it was found finished)
               "phase_seconds": {"training": 0.0 if res.skipped else
                                 round(res.seconds - res.dynamics_seconds, 3),
                                 "dynamics": round(res.dynamics_seconds, 3),
                                 "ablation": round(t_probe - t_ablation, 3),
                                 "probe": round(t_end - t_probe, 3)}}
    if cpu_start is not None:
        # (a resumed record without the field is one of a posenc that did not keep it: unknown)
        earlier = res.resumed.get("earlier_cpu_seconds") if res.resumed else 0.0
        summary["cpu_seconds"] = round(time.process_time() - cpu_start + (earlier or 0.0), 1)
        if earlier is None:
            summary["cpu_seconds_complete"] = False
    schedule = OptimizerSchedule.of_run(cfg, list(res.metrics))
    if schedule is not None:  # RA's drift null replays it (posenc.verdicts.drift_null)
        summary["schedule"] = schedule.to_dict()
    if res.early_stopping is not None:  # stopping epoch/step and best validation accuracy
        summary["early_stopping"] = res.early_stopping
    if res.resumed is not None:  # trained in more than one go: its seconds say how complete
        summary["resumed"] = res.resumed
    if run.diverged:
        summary["diverged"] = run.diverged
    out = {"summary": summary, "ablation": ablations, "probe": probe, "metrics": list(res.metrics)}
    if table_mean is not None:
        out["table_mean"] = table_mean
    trace = read_trace(folder, cfg.run_id())
    if trace is not None:  # under early stopping: up to the kept epoch (summarize_trace)
        kept = None if res.early_stopping is None else int(res.early_stopping["best_epoch"])
        out["trace"] = summarize_trace(*trace, kept_epoch=kept)
    if dyn is not None and not broken:
        header, records = read_dynamics_file(Path(folder))
        out["dynamics"] = summarize(header, records, ablation=ablations["zero"])
    return out
