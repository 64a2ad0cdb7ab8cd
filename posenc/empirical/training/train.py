"""Training: AdamW with linear warm-up then cosine decay, deterministic on CPU, resumable.

``train(config, out_dir)`` runs (or resumes, or skips when finished) one run
and returns a :class:`RunResult`.  Determinism: the model is initialised after
``torch.manual_seed(seed)``, the data come from ``make_split(task, seed)``, the
order of epoch e from a generator seeded with ``(seed, e)``, and the global RNG
(dropout) is saved with every checkpoint, so on CPU two runs of one config --
or a run resumed after a kill -- give the same metrics bit for bit (for a
fixed ``num_threads``).  ``metrics.jsonl`` holds only such reproducible
numbers; wall-clock times go to ``train_summary.json``.  Bit-for-bit holds within one version of
the step's arithmetic: a change that only reorders float operations (2026-11-30: packed forwards
and the fused AdamW, now :mod:`posenc.empirical.fast`) changes the rounding, and over thousands
of steps training amplifies it into different per-seed numbers of the same distribution.

``config.step`` chooses the step: ``fast`` (default) runs the training and evaluation forwards
through :func:`posenc.empirical.fast.forward` (packed on a CPU; it falls back to the model's own
forward, with a logged reason, where it does not cover the case) and steps with torch's fused
AdamW (``fused=True``); ``reference`` runs ``model(tokens)`` -- the readable
forward of :mod:`.model` -- and torch's default AdamW.

Early stopping (``config.patience`` set, see :class:`~posenc.empirical.config.TrainConfig`):
a validation split carved from the training split (:func:`~posenc.empirical.tasks.carve_validation`)
is evaluated after every epoch; :func:`should_stop` ends training once ``patience`` evaluations
have not beaten the best one (with ``stop_on = "accuracy_or_loss"``: have raised neither the
best accuracy nor lowered the best loss; at once when the best is a perfect validation accuracy,
which nothing can beat), and the best-validation weights (earliest on ties) become the run's
final model -- the finished checkpoint holds them, and the run's test accuracy is theirs.  The
decision reads validation accuracies only, never the test split, and the test split is
evaluated once, for the kept weights, after the last epoch (its accuracy and loss go into the
kept epoch's metrics record; the other records hold validation numbers only): a per-epoch test
pass would cost about a sixth of the training and decide nothing.  The best weights travel in
every checkpoint, so a resumed run stops at the same epoch with the same weights.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import torch
import torch.nn.functional as F

from ...errors import PosencError
from ...limits import check_memory
from ..analysis.dynamics import DynamicsConfig, DynamicsRecorder
from ..config import TrainConfig, config_from_dict, memory_estimate
from ..model.transformer import Transformer
from ..fast import forward as fast_forward
from .run_state import RunState
from .runs import (CHECKPOINT, CONFIG, METRICS, RESULT, atomic_write_text, check_checkpoint,
                   check_resumable, check_summary, dataset_for, model_for,
                   read_checkpoint, read_config, read_metrics, read_summary, same_run,
                   stored_without_checkpoint, write_metrics)
from .trace import TRACE, TraceRecorder, grad_norm
from .schedule import OptimizerSchedule
from ..tasks import TaskData, carve_validation


@dataclass(frozen=True)
class RunResult:
    run_dir: str
    config: TrainConfig
    metrics: tuple[dict[str, Any], ...]
    final_test_acc: float
    best_test_acc: float
    n_params: int
    seconds: float
    device: str
    skipped: bool = False
    early_stopping: Optional[dict[str, Any]] = None  # see _early_stopping_summary; None when off
    dynamics_seconds: float = 0.0  # of ``seconds``: the dynamics recording's share
    resumed: Optional[dict[str, Any]] = None  # {from_epoch, earlier_seconds}: see _resumed

    def to_dict(self) -> dict[str, Any]:
        return {"run_dir": self.run_dir, "config": self.config.to_dict(), "metrics": list(self.metrics),
                "final_test_acc": self.final_test_acc, "best_test_acc": self.best_test_acc,
                "n_params": self.n_params, "seconds": self.seconds, "device": self.device,
                "skipped": self.skipped, "early_stopping": self.early_stopping}


def resolve_device(name: str) -> torch.device:
    if not isinstance(name, str) or not (name in ("auto", "cpu", "cuda") or
                                         (name.startswith("cuda:") and name[5:].isdigit())):
        raise PosencError(f"device must be auto, cpu, cuda or cuda:N; got {name!r}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise PosencError("device cuda was asked for but torch sees no CUDA device")
    return torch.device(name)


def step_forward(step: str) -> Callable[[Transformer, torch.Tensor], torch.Tensor]:
    """The forward of ``TrainConfig.step``: ``fast`` -> :func:`posenc.empirical.fast.forward`,
    ``reference`` -> the model's own forward."""
    return fast_forward if step == "fast" else Transformer.__call__


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with the config's lr, betas and weight decay: with ``step='fast'``, torch's fused
    kernel (``torch.optim.AdamW(fused=True)``: one pass over all parameters) for float32
    parameters on a CPU or CUDA device, else (and with ``step='reference'``) its default
    implementation.
    The fused kernel computes the same update as torch's default (a for-loop over the parameters
    on a CPU) up to float rounding -- a test compares them over training steps.  posenc's own
    variant of it (a shared step count per group, ``FusedAdamW``) was removed: its optimiser
    step was 1.65x faster but the whole quick step only 0.96-1.04x (interleaved A/B,
    benchmarks/results/optimizer_ab_cpu_2026-12-02.txt; benchmarks/optimizer_ab.py now compares
    the fused AdamW with the default one), below the 3% that would keep a second implementation."""
    params = list(model.parameters())
    kw = dict(lr=config.lr, betas=config.betas, weight_decay=config.weight_decay)
    if config.step == "fast" and all(p.dtype == torch.float32 and p.device.type in ("cpu", "cuda")
                                     for p in params):
        return torch.optim.AdamW(params, fused=True, **kw)
    return torch.optim.AdamW(params, **kw)


def best_index(val_accs: Sequence[float]) -> int:
    """Index of the best validation accuracy; only a strictly higher one counts as better, so
    the earliest of tied evaluations wins."""
    best = 0
    for i, v in enumerate(val_accs):
        if v > val_accs[best]:
            best = i
    return best


def should_stop(val_accs: Sequence[float], patience: int,
                val_losses: Optional[Sequence[float]] = None) -> bool:
    """True once the last ``patience`` evaluations have not improved on the best before them, or
    as soon as the best is a perfect 1.0: only a strictly higher accuracy counts as better, so
    nothing can replace that epoch's weights -- the ``patience`` more epochs would keep the same
    model and the same test accuracy, and only cost compute.

    With ``val_losses`` (``stop_on = "accuracy_or_loss"``) an evaluation that lowered the best
    validation loss also counts as progress: training stops once ``patience`` evaluations have
    raised neither the best accuracy nor the lowest loss.  On a small validation split the
    accuracy of a model still learning is noisy, and its loss keeps falling (the calibration of
    the quick preset, docs/reproduction.md); the kept weights are still the best-accuracy ones."""
    if not val_accs:
        return False
    best = best_index(val_accs)
    if val_accs[best] >= 1.0:
        return True
    since = len(val_accs) - 1 - best
    if val_losses is not None:
        # a non-finite loss is no progress (and never the best: a NaN first loss must not
        # switch the loss arm off for the rest of the run)
        finite = [-v if math.isfinite(v) else -math.inf for v in val_losses]
        if any(math.isfinite(v) for v in finite):
            since = min(since, len(finite) - 1 - best_index(finite))
    return since >= patience


def stop_now(config: TrainConfig, metrics: Sequence[dict[str, Any]]) -> bool:
    """:func:`should_stop` on a run's validation history with the config's rule (``patience``,
    ``stop_on``)."""
    losses = [m["val_loss"] for m in metrics] if config.stop_on == "accuracy_or_loss" else None
    return should_stop([m["val_acc"] for m in metrics], config.patience, losses)


def autocast(precision: str, device: torch.device) -> torch.autocast:
    """The forward-pass context of a run's ``precision`` (a no-op at float32)."""
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16,
                          enabled=precision == "bfloat16")


@torch.inference_mode()
def evaluate(model: Transformer, data: TaskData, batch_size: int = 512,
             device: torch.device | str = "cpu", precision: str = "float32",
             step: str = "fast") -> tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` on ``data`` (forward under ``precision``, by
    ``step``'s forward: :func:`step_forward`)."""
    forward = step_forward(step)
    was_training = model.training
    model.eval()
    loss_sum, correct = 0.0, 0
    for s in range(0, len(data), batch_size):
        tok = data.tokens[s:s + batch_size].to(device)
        y = data.labels[s:s + batch_size].to(device)
        with autocast(precision, tok.device):
            logits = forward(model, tok).float()
        loss_sum += float(F.cross_entropy(logits, y, reduction="sum"))
        correct += int((logits.argmax(-1) == y).sum())
    model.train(was_training)
    return loss_sum / len(data), correct / len(data)


def train(config: TrainConfig, out_dir: str | Path | None = None, *, progress: Optional[bool] = None,
          resume: bool = True, on_step: Optional[Callable[[int, float], None]] = None,
          dynamics: Optional[DynamicsConfig] = None) -> RunResult:
    """Train (or resume, or skip a finished) run into ``out_dir`` (default ``runs/<run_id>``).

    ``progress``: show a tqdm bar (None: only on a TTY; elsewhere a line per epoch on stderr
    when the training split has :data:`LONG_EPOCH_EXAMPLES` examples or more).  ``resume=False``
    starts over even if the folder holds a finished or partial run of the same
    config.  A finished run stored without its checkpoint (``posenc reproduce`` drops it) is
    finished: it is returned as found (its metrics from ``metrics.jsonl``), never re-trained.
    ``on_step(step, loss)`` is called after every optimiser step.
    ``dynamics``: a :class:`~posenc.empirical.analysis.dynamics.DynamicsConfig` records positional
    gradient signals and head importance into ``dynamics.jsonl`` (None: nothing runs; it is not
    part of the config, so it changes neither the run id nor the training).
    """
    check_memory(memory_estimate(config), f"training {config.model.pe} on {config.task.name}")
    resolve_device(config.device)  # a device that is not there is refused before any file is written
    out = Path(out_dir) if out_dir is not None else Path("runs") / config.run_id()
    if out.exists() and not out.is_dir():
        raise PosencError(f"{out} exists and is not a folder")
    if (out / CONFIG).is_file() and not same_run(read_config(out), config):
        raise PosencError(f"{out} holds a run of a different config; choose another --out")
    if resume and (out / CHECKPOINT).is_file():  # never resume (or skip) another run's weights
        ckpt = read_checkpoint(out / CHECKPOINT)
        check_checkpoint(ckpt, out / CHECKPOINT, config, "the config asked for")
        check_resumable(ckpt, out / CHECKPOINT)
        if (out / CONFIG).is_file() and (out / RESULT).is_file():
            return _finished(out, config, ckpt["metrics"])
    elif resume and (out / CONFIG).is_file() and stored_without_checkpoint(out):
        # finished, its checkpoint dropped (posenc reproduce): finished still, never re-trained
        metrics = read_metrics(out)
        if not metrics:
            raise PosencError(f"run {out} was stored without its checkpoint and has no {METRICS}: "
                              f"it cannot be read back; delete the folder to train it again")
        check_summary(read_summary(out), metrics, out / RESULT)
        return _finished(out, config, metrics)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PosencError(f"cannot create the run folder {out}: {exc.strerror or exc}") from None
    if not resume:  # starting over: no file of the previous attempt may survive to mislead
        for name in (RESULT, CHECKPOINT, METRICS, TRACE):
            (out / name).unlink(missing_ok=True)
    atomic_write_text(out / CONFIG, config.to_json() + "\n")
    threads = torch.get_num_threads()
    if config.num_threads is not None:
        torch.set_num_threads(config.num_threads)
    try:
        return _train(config, out, progress, resume, on_step, dynamics)
    finally:
        torch.set_num_threads(threads)


#: Training splits from which an epoch takes minutes (~3 ms per example on one CPU thread at
#: the quick sizes; docs/reliability.md): where no progress bar shows (stderr is not a
#: terminal), each epoch is then a line on stderr.
LONG_EPOCH_EXAMPLES = 100_000


def _epoch_line(config: TrainConfig, record: dict[str, Any], seconds: float) -> str:
    accs = ", ".join(f"{k} {record[k]:.4f}" for k in ("val_acc", "test_acc") if k in record)
    return (f"posenc: train {config.task.name} {config.model.pe}: epoch {record['epoch']} of at "
            f"most {config.epochs} in {seconds:,.0f} s" + (f" ({accs})" if accs else ""))


def _train(config: TrainConfig, out: Path, progress: Optional[bool], resume: bool,
           on_step: Optional[Callable[[int, float], None]],
           dynamics: Optional[DynamicsConfig] = None) -> RunResult:
    """Set up (the splits, the model, its state resumed from the checkpoint), then for each
    epoch: train, evaluate, save; then finish (the kept weights, the summary)."""
    from tqdm.auto import tqdm

    device = resolve_device(config.device)
    data = _Splits.of(config)
    torch.manual_seed(config.seed)
    model = model_for(config, device).to(device)
    state = RunState(model, make_optimizer(model, config))
    if resume and (out / CHECKPOINT).is_file():
        state.resume(out / CHECKPOINT, device)
    start_epoch = state.epoch
    loop = _EpochLoop.of(config, device, data, out, state, on_step, dynamics)
    bar = tqdm(total=loop.schedule.total, initial=start_epoch * loop.steps_per_epoch,
               disable=None if progress is None else not progress,
               desc=f"{config.task.name} {config.model.pe}", leave=False)
    state.clock.start()
    try:
        while state.epoch < config.epochs and not _stopped(config, state, data):
            t0 = time.perf_counter()
            record = loop.train_epoch(state, bar)
            loop.evaluate_epoch(state, record, data)
            if loop.recorder is not None:  # before the checkpoint: a resume re-records past it
                loop.recorder.flush()
            loop.trace.end_epoch(state.epoch, model)
            state.clock.epoch_seconds.append(time.perf_counter() - t0)
            state.save(out / CHECKPOINT, config, device, loop.dynamics_seconds())
            write_metrics(out, state.metrics)
            if bar.disable and progress is None and len(data.train) >= LONG_EPOCH_EXAMPLES:
                print(_epoch_line(config, record, state.clock.epoch_seconds[-1]),
                      file=sys.stderr, flush=True)
            bar.set_postfix({k: f"{record[k]:.3f}" for k in ("test_acc", "val_acc") if k in record})
    finally:
        bar.close()
    return _finish(config, out, device, data, state, loop, start_epoch)


@dataclass(frozen=True)
class _Splits:
    """The run's data: the training split, the validation split carved from it (early stopping
    only, else None) and the test split."""

    train: TaskData
    val: Optional[TaskData]
    test: TaskData

    @classmethod
    def of(cls, config: TrainConfig) -> _Splits:
        split = dataset_for(config)
        if not config.early_stopping:
            return cls(split.train, None, split.test)
        data_seed = config.task.data_seed if config.task.data_seed is not None else config.seed
        train_data, val_data = carve_validation(split.train, config.val_frac, data_seed)
        return cls(train_data, val_data, split.test)


def _stopped(config: TrainConfig, state: RunState, data: _Splits) -> bool:
    """Whether training ends before the next epoch: the last one diverged, or early stopping's
    rule fired on the validation history."""
    return state.diverged or (data.val is not None and stop_now(config, state.metrics))


@dataclass
class _EpochLoop:
    """What every epoch uses: the step's forward, the training tensors on the device, the
    learning-rate schedule, the trace and the dynamics recorder (None: not asked for)."""

    config: TrainConfig
    device: torch.device
    forward: Callable[[Transformer, torch.Tensor], torch.Tensor]
    tokens: torch.Tensor
    labels: torch.Tensor
    steps_per_epoch: int
    schedule: OptimizerSchedule
    trace: TraceRecorder
    recorder: Optional[DynamicsRecorder]
    on_step: Optional[Callable[[int, float], None]]

    @classmethod
    def of(cls, config: TrainConfig, device: torch.device, data: _Splits, out: Path,
           state: RunState, on_step: Optional[Callable[[int, float], None]],
           dynamics: Optional[DynamicsConfig]) -> _EpochLoop:
        steps_per_epoch = math.ceil(len(data.train) / config.batch_size)
        schedule = OptimizerSchedule.of(config, steps_per_epoch)
        recorder = None
        if dynamics is not None:
            recorder = DynamicsRecorder(dynamics, out, config, data.train, data.test,
                                        schedule.total, steps_per_epoch)
            recorder.start(state.model, state.epoch * steps_per_epoch)
        trace = TraceRecorder(out, config.run_id(), steps_per_epoch, int(data.train.tokens.shape[1]))
        trace.start(state.model, state.epoch)
        return cls(config, device, step_forward(config.step), data.train.tokens.to(device),
                   data.train.labels.to(device), steps_per_epoch, schedule, trace, recorder,
                   on_step)

    def dynamics_seconds(self) -> float:
        return self.recorder.seconds if self.recorder is not None else 0.0

    def train_epoch(self, state: RunState, bar: Any) -> dict[str, Any]:
        """One epoch of optimiser steps in the epoch's seeded order; its metrics record, appended
        to ``state.metrics`` (at a non-finite loss the epoch ends there, its sums NaN)."""
        config, model, opt, epoch = self.config, state.model, state.optimizer, state.epoch
        n = len(self.labels)
        model.train()
        order = torch.randperm(n, generator=torch.Generator().manual_seed(
            config.seed * 1_000_003 + epoch)).to(self.device)
        loss_sum, correct, diverged_step = 0.0, 0, None
        for b in range(self.steps_per_epoch):
            step = epoch * self.steps_per_epoch + b
            if self.recorder is not None and self.recorder.due(step):
                self.recorder.record(step, model)  # before update `step`: step 0 = initialisation
            for group in opt.param_groups:
                group["lr"] = self.schedule.rate(step)
            idx = order[b * config.batch_size:(b + 1) * config.batch_size]
            with autocast(config.precision, self.device):
                logits = self.forward(model, self.tokens[idx]).float()
            loss = F.cross_entropy(logits, self.labels[idx])
            loss_value = float(loss.detach())
            if not math.isfinite(loss_value):  # diverged: record it, update nothing more
                diverged_step = step
                break
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip is not None:  # the norm before clipping
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            else:
                norm = grad_norm(model.parameters())
            opt.step()
            loss_sum += loss_value * len(idx)
            hits = int((logits.argmax(-1) == self.labels[idx]).sum())
            correct += hits
            self.trace.step(loss, norm, hits / len(idx))
            bar.update(1)
            if self.on_step is not None:
                self.on_step(step, loss_value)
        state.epoch += 1
        record = {"epoch": state.epoch, "step": state.epoch * self.steps_per_epoch,
                  "lr": opt.param_groups[0]["lr"], "train_loss": loss_sum / n,
                  "train_acc": correct / n}
        if diverged_step is not None:  # the epoch's sums are partial: say so with NaN
            record.update(step=diverged_step, train_loss=math.nan, train_acc=math.nan,
                          diverged_step=diverged_step)
        state.metrics.append(record)
        return record

    def evaluate_epoch(self, state: RunState, record: dict[str, Any], data: _Splits) -> None:
        """The epoch's evaluation into its record: the test split without early stopping (every
        epoch's model is a final one); with it the validation split, keeping the weights of the
        best epoch (the test split is evaluated once, for the kept weights: :func:`_finish`)."""
        config = self.config
        if data.val is None:
            test_loss, test_acc = evaluate(state.model, data.test, config.eval_batch_size,
                                           self.device, config.precision, config.step)
            record.update(test_loss=test_loss, test_acc=test_acc)
            return
        val_loss, val_acc = evaluate(state.model, data.val, config.eval_batch_size, self.device,
                                     config.precision, config.step)
        record.update(val_loss=val_loss, val_acc=val_acc)
        if best_index([m["val_acc"] for m in state.metrics]) == len(state.metrics) - 1:
            state.snapshot_best()


def _finish(config: TrainConfig, out: Path, device: torch.device, data: _Splits,
            state: RunState, loop: _EpochLoop, start_epoch: int) -> RunResult:
    """The kept model (with early stopping the best-validation one, its test split evaluated
    and the checkpoint rewritten to hold it), the last dynamics record, the summary."""
    metrics, model = state.metrics, state.model
    final, stop = metrics[-1], None
    if data.val is not None:
        stop = _early_stopping_summary(config, metrics, len(data.val))
        final = metrics[stop["best_epoch"] - 1]
        state.use_best()
        if "test_acc" not in final:  # (a resumed finished run has it already)
            test_loss, test_acc = evaluate(model, data.test, config.eval_batch_size, device,
                                           config.precision, config.step)
            final.update(test_loss=test_loss, test_acc=test_acc)
        state.save_kept(out / CHECKPOINT, device, stop["best_epoch"])
        write_metrics(out, metrics)
    if loop.recorder is not None:
        loop.recorder.record(len(metrics) * loop.steps_per_epoch if stop else loop.schedule.total,
                             model, final=True)
        loop.recorder.flush()
    seconds = state.clock.so_far(loop.dynamics_seconds())
    result = write_summary(out, config, metrics, final, n_params=model.n_params,
                           seconds=seconds["seconds"], resumed=state.clock.resumed(start_epoch),
                           epoch_seconds=seconds["epoch_seconds"], device=str(device),
                           n_train=len(data.train), n_test=len(data.test), stop=stop,
                           diverged=_divergence(metrics, final, model.parameters()))
    return RunResult(str(out), config, tuple(metrics), final["test_acc"],
                     result["best_test_acc"], model.n_params, seconds["seconds"], str(device),
                     early_stopping=stop, dynamics_seconds=seconds["dynamics_seconds"],
                     resumed=result.get("resumed"))


def write_summary(out: Path, config: TrainConfig, metrics: Sequence[dict[str, Any]],
                  final: dict[str, Any], *, n_params: int, seconds: float,
                  epoch_seconds: list[float], device: str, n_train: int, n_test: int,
                  stop: Optional[dict[str, Any]], diverged: Optional[dict[str, Any]],
                  resumed: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Write a finished run's ``train_summary.json`` into ``out`` and return it: the kept
    epoch's record (``final``), the best test accuracy of any epoch, sizes, times (of all the
    run's epochs, a resumed run's too: ``resumed`` says from which), the device and torch, the
    early-stopping summary (``stop``) and the divergence record when there is one."""
    result = {"status": "finished", "run_id": config.run_id(), "final": final,
              "best_test_acc": max(m["test_acc"] for m in metrics if "test_acc" in m),
              "n_params": n_params,
              "seconds": seconds, "epoch_seconds": epoch_seconds, "device": device,
              "threads": torch.get_num_threads(), "torch": torch.__version__,
              "train_examples": n_train, "test_examples": n_test,
              **({"early_stopping": stop} if stop else {}),
              **({"resumed": resumed} if resumed else {})}
    if diverged is not None:
        result["diverged"] = diverged
    atomic_write_text(out / RESULT, json.dumps(result, indent=2) + "\n")
    return result


def _divergence(metrics: list[dict[str, Any]], final: dict[str, Any],
                params: Iterable[torch.Tensor]) -> Optional[dict[str, Any]]:
    """{step, epoch, kept_finite} of a run whose training loss became non-finite (None when it
    never did): training stopped at that step.  ``kept_finite``: whether the kept model (the
    last one, or with early stopping the best-validation one, perhaps from before the
    divergence) is sound -- finite parameters and a finite test loss; analyses refuse one that
    is not (:meth:`~posenc.empirical.training.runs.Run.check_not_diverged`).  ``params``: the
    kept model's parameters."""
    for m in metrics:
        if "diverged_step" in m:
            finite = all(bool(torch.isfinite(p).all()) for p in params) and \
                math.isfinite(final["test_loss"])
            return {"step": m["diverged_step"], "epoch": m["epoch"], "kept_finite": finite}
    return None


def _early_stopping_summary(config: TrainConfig, metrics: list[dict[str, Any]],
                            n_val: int) -> dict[str, Any]:
    """Where training stopped and which epoch's weights it kept (from the validation history)."""
    vals = [m["val_acc"] for m in metrics]
    best = best_index(vals)
    fired = stop_now(config, metrics)
    return {"patience": config.patience, "val_frac": config.val_frac, "val_examples": n_val,
            **({"stop_on": config.stop_on} if config.stop_on != "accuracy" else {}),
            "max_epochs": config.epochs, "stopped_epoch": len(metrics),
            "stopped_step": metrics[-1]["step"], "fired": fired,
            "stopped_early": fired and len(metrics) < config.epochs, "best_epoch": best + 1,
            "best_step": metrics[best]["step"], "best_val_acc": vals[best]}


def _finished(out: Path, config: TrainConfig, metrics: list[dict[str, Any]]) -> RunResult:
    """A finished run, read back: the summary checked, the metrics from its checkpoint (or, when
    it was stored without one, from ``metrics.jsonl``)."""
    result = read_summary(out)
    return RunResult(str(out), config, tuple(metrics), result["final"]["test_acc"],
                     result["best_test_acc"], result["n_params"], result["seconds"],
                     result["device"], skipped=True, early_stopping=result.get("early_stopping"),
                     resumed=result.get("resumed"))


def train_worker(config: dict[str, Any], folder: str, threads: int) -> dict[str, Any]:
    """A sweep worker (:func:`posenc.empirical.pipeline.sweep.run_jobs`): ``config`` is a
    :meth:`TrainConfig.to_dict`; trains into ``folder`` with ``threads`` torch threads."""
    cfg = config_from_dict(config).replace(num_threads=threads)
    res = train(cfg, folder, progress=False)
    return {"summary": {"final_test_acc": res.final_test_acc, "best_test_acc": res.best_test_acc,
                        "epochs": len(res.metrics), "seconds": res.seconds, "n_params": res.n_params,
                        **({"early_stopping": res.early_stopping} if res.early_stopping else {})},
            "metrics": list(res.metrics)}
