"""Run folders: atomic writes, checkpoints loaded with ``weights_only=True``, :func:`load_run`.

A run folder holds ``train_config.json`` (the resolved :class:`TrainConfig`),
``metrics.jsonl`` (one JSON object per finished epoch), ``checkpoint.pt``
(model, optimiser and RNG state after the last finished epoch; the source of
truth for resuming) and, once training has finished, ``train_summary.json``.  A finished run
may be stored without its checkpoint (``posenc reproduce`` drops it after the run's analysis:
:mod:`posenc.empirical.pipeline.kept_files`): its results stay, and whatever needs its weights
says so in one line (:func:`check_weights_kept`).
The names leave ``config.json`` and ``result.json`` to the results store
(:mod:`posenc.empirical.pipeline.store`), which may own the same folder.  Every
file is written to a temporary name in the same folder and moved into place
with :func:`os.replace`, so a killed process never leaves a half-written file.

Safe loading.  A checkpoint carries the config it was trained with; every load compares it with
the folder's ``train_config.json`` and with the config the caller asked for
(:func:`check_checkpoint`), so an edited or swapped config is refused in one line instead of
giving another run's weights under its name.  Damaged files (a truncated ``metrics.jsonl``, a
corrupt ``train_summary.json``, a non-UTF-8 config, a checkpoint without optimiser or RNG state)
are one :class:`~posenc.errors.PosencError` line each.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from ...errors import PosencError
from ...atomic import atomic_write, atomic_write_text  # noqa: F401 (re-exported)
from ..config import TrainConfig, stored_config
from ..model.transformer import Transformer, build_model
from ..tasks import Split, make_split

CONFIG, METRICS, CHECKPOINT, RESULT = ("train_config.json", "metrics.jsonl", "checkpoint.pt",
                                      "train_summary.json")
FORMAT = 1


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    """``torch.save`` through :func:`~posenc.atomic.atomic_write`: serialised in memory first and
    then written, so a full disk is the file system's error naming the file ("No space left on
    device"), not torch's writer's ("[enforce fail at inline_container.cc ...]")."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write(path, lambda fh: fh.write(buf.getbuffer()))


def read_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint with ``weights_only=True``; anything unreadable is a PosencError."""
    path = Path(path)
    if not path.is_file():
        raise PosencError(f"no checkpoint at {path}")
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # the loader raises many types on damaged files; all mean the same
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PosencError(f"checkpoint {path} is corrupt or unreadable ({first[:120]})") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT or "model" not in ckpt:
        raise PosencError(f"checkpoint {path} is not a posenc checkpoint (format {FORMAT})")
    return ckpt


def same_run(a: TrainConfig, b: TrainConfig) -> bool:
    """Whether two configs train the same run (device, threads, eval batch size aside)."""
    strip = dict(device="auto", num_threads=None, eval_batch_size=1)
    return a.replace(**strip) == b.replace(**strip)


def config_diff(a: TrainConfig, b: TrainConfig, limit: int = 3) -> str:
    """The first dotted keys where two configs differ, as ``key a -> b`` (for one-line errors)."""
    def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
        return out
    fa, fb = flat(a.to_dict()), flat(b.to_dict())
    keys = [k for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)
            and k not in ("device", "num_threads", "eval_batch_size")]
    return ", ".join(f"{k} {fa.get(k)!r} -> {fb.get(k)!r}" for k in keys[:limit]) + \
        (", ..." if len(keys) > limit else "")


def check_checkpoint(ckpt: dict[str, Any], path: str | Path, config: TrainConfig,
                     against: str) -> None:
    """Refuse a checkpoint whose own config is not ``config`` (``against`` names where that
    came from, e.g. the folder's train_config.json)."""
    data = ckpt.get("config")
    try:
        own = stored_config(data, str(path))
    except PosencError as exc:
        if "named specs version" in str(exc):
            raise

        raise PosencError(f"checkpoint {path} does not record a valid config, so it cannot be "
                          f"checked against {against}") from None
    if not same_run(own, config):
        raise PosencError(f"checkpoint {path} was trained with another config than {against} "
                          f"({config_diff(own, config)}); refusing to use it")


def check_resumable(ckpt: dict[str, Any], path: str | Path) -> None:
    """A checkpoint to resume from needs optimiser state, a CPU RNG state, epoch and metrics."""
    opt, rng = ckpt.get("optimizer"), ckpt.get("rng")
    epoch, metrics = ckpt.get("epoch"), ckpt.get("metrics")
    if not (isinstance(opt, dict) and isinstance(opt.get("state"), dict)
            and isinstance(opt.get("param_groups"), list)):
        why = "no optimizer state"
    elif not (isinstance(rng, torch.Tensor) and rng.dtype == torch.uint8 and rng.dim() == 1
              and rng.numel() == torch.get_rng_state().numel()):
        why = "a bad RNG state"
    elif not (isinstance(epoch, int) and isinstance(metrics, list) and len(metrics) == epoch
              and all(isinstance(m, dict) for m in metrics)):
        why = "bad epoch/metrics records"
    else:
        return
    raise PosencError(f"checkpoint {path} has {why}; it cannot be resumed (start over with --restart)")


def stored_without_checkpoint(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a finished run (``train_summary.json``) without ``checkpoint.pt``."""
    run_dir = Path(run_dir)
    return (run_dir / RESULT).is_file() and not (run_dir / CHECKPOINT).is_file()


def check_weights_kept(run_dir: str | Path) -> None:
    """One line refusing what needs the weights of a finished run stored without them."""
    if stored_without_checkpoint(run_dir):
        raise PosencError(f"run {run_dir} was stored without its checkpoint (posenc reproduce "
                          f"drops it after the analysis; --keep-checkpoints keeps it): its results "
                          f"are there, its weights are not")


def read_config(run_dir: str | Path) -> TrainConfig:
    path = Path(run_dir) / CONFIG
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PosencError(f"{run_dir} has no {CONFIG}; is it a run folder?") from None
    except UnicodeDecodeError:
        raise PosencError(f"cannot read {path}: not UTF-8 text") from None
    except (OSError, ValueError) as exc:
        raise PosencError(f"cannot read {path}: {exc}") from None
    return stored_config(data, str(path))


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """``metrics.jsonl`` (missing: none); a damaged file is one PosencError line."""
    path = Path(run_dir) / METRICS
    if not path.is_file():
        return []
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    except (OSError, ValueError):
        raise PosencError(f"{path} is damaged (not JSON lines); the checkpoint still holds the "
                          f"metrics") from None
    if not all(isinstance(r, dict) for r in rows):
        raise PosencError(f"{path} is damaged (a line is not a JSON object)")
    return rows


SUMMARY_KEYS = ("final", "best_test_acc", "n_params", "seconds", "device")


def read_summary(run_dir: str | Path) -> Optional[dict[str, Any]]:
    """``train_summary.json`` of a finished run (None if absent); corrupt or incomplete: one line."""
    path = Path(run_dir) / RESULT
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if not (isinstance(data, dict) and all(k in data for k in SUMMARY_KEYS)
            and isinstance(data["final"], dict) and "test_acc" in data["final"]):
        raise PosencError(f"{path} is corrupt or incomplete; delete it to finish the run again "
                          f"from its checkpoint")
    return data


def write_metrics(run_dir: str | Path, metrics: list[dict[str, Any]]) -> None:
    atomic_write_text(Path(run_dir) / METRICS, "".join(json.dumps(m) + "\n" for m in metrics))


@dataclass
class Run:
    """A loaded run: its config, the model with trained weights, metrics and result."""

    run_dir: Path
    config: TrainConfig
    model: Transformer
    metrics: list[dict[str, Any]]
    epoch: int
    result: Optional[dict[str, Any]]
    training: Optional[Any] = None  # the RunResult of the train() call that produced it, if any

    @property
    def diverged(self) -> Optional[dict[str, Any]]:
        """{step, epoch, kept_finite} when the run's training loss became non-finite (training
        stopped there; ``kept_finite``: the kept model has finite weights and test loss), else
        None (see :mod:`posenc.empirical.training.train`)."""
        return (self.result or {}).get("diverged")

    def check_not_diverged(self, what: str) -> None:
        """One line refusing ``what`` (e.g. "ablate") on a run that diverged and kept a model that
        is not finite: any analysis of it is noise.  (A run whose early stopping kept the sound
        weights from before the divergence is analysed as usual.)"""
        d = self.diverged
        if d and not d.get("kept_finite"):
            raise PosencError(f"{self.run_dir} diverged (non-finite training loss at step "
                              f"{d['step']}, epoch {d['epoch']}): its model is not finite, so "
                              f"there is nothing to {what}; retrain with a smaller lr or with "
                              f"grad_clip")

    def data(self) -> Split:
        """The run's train/test split, regenerated deterministically from its config."""
        return dataset_for(self.config)


def dataset_for(config: TrainConfig) -> Split:
    return make_split(config.task, config.seed)


def model_for(config: TrainConfig, device: str | torch.device = "cpu") -> Transformer:
    """The run's model, its attention kernel chosen for ``device`` (still to be moved there)."""
    t = config.task
    return build_model(config.model, t.vocab_size, t.n_classes, t.length, device)


def load_run(run_dir: str | Path, device: str | torch.device = "cpu",
             expected: Optional[TrainConfig] = None) -> Run:
    """Load a run folder (one clear PosencError if it is missing or damaged).

    The checkpoint's own config must be the folder's ``train_config.json`` and, when given,
    ``expected`` (the config the caller trained or asked for)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise PosencError(f"run folder {run_dir} does not exist")
    config = read_config(run_dir)
    if expected is not None and not same_run(config, expected):
        raise PosencError(f"{run_dir / CONFIG} is not the config asked for "
                          f"({config_diff(config, expected)})")
    check_weights_kept(run_dir)
    ckpt = read_checkpoint(run_dir / CHECKPOINT, device)
    check_checkpoint(ckpt, run_dir / CHECKPOINT, config, f"its {CONFIG}")
    model = model_for(config, device)
    try:
        model.load_state_dict(ckpt["model"])
    except (RuntimeError, TypeError) as exc:
        raise PosencError(f"checkpoint in {run_dir} does not match its config "
                          f"({str(exc).splitlines()[0][:120]})") from None
    model.to(device).eval()
    metrics, epoch = ckpt.get("metrics", []), ckpt.get("epoch", 0)
    if not (isinstance(metrics, list) and isinstance(epoch, int)):
        raise PosencError(f"checkpoint {run_dir / CHECKPOINT} has bad epoch/metrics records")
    summary = read_summary(run_dir)
    check_summary(summary, metrics, run_dir / RESULT)
    return Run(run_dir, config, model, list(metrics), epoch, summary)


def check_summary(summary: Optional[dict[str, Any]], metrics: list[dict[str, Any]],
                  path: Path) -> None:
    """The checkpoint is the source of truth: a summary whose accuracies are not those of the
    checkpoint's metrics (edited, or left from another run) is refused, never reported."""
    if not summary or not metrics:
        return
    final, best = summary.get("final"), summary.get("best_test_acc")
    # records compared as JSON text: a diverged run's NaN losses equal themselves there, not as
    # floats (NaN != NaN); accuracies are never NaN
    records = {json.dumps(m, sort_keys=True) for m in metrics if isinstance(m, dict)}
    tests = [m.get("test_acc") for m in metrics if isinstance(m, dict)]
    if (final is not None and json.dumps(final, sort_keys=True) not in records) or \
            (best is not None and tests and best != max(t for t in tests if t is not None)):
        raise PosencError(f"{path} disagrees with the checkpoint's metrics (edited, or from "
                          f"another run); delete it and run posenc train again to rewrite it")
