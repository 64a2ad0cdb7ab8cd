"""Run folders: atomic writes, checkpoints loaded with ``weights_only=True``, :func:`load_run`.

A run folder holds ``train_config.json`` (the resolved :class:`TrainConfig`),
``metrics.jsonl`` (one JSON object per finished epoch), ``checkpoint.pt``
(model, optimiser and RNG state after the last finished epoch; the source of
truth for resuming) and, once training has finished, ``train_summary.json``.
The names leave ``config.json`` and ``result.json`` to the results store
(:mod:`posenc.empirical.store`), which may own the same folder.  Every
file is written to a temporary name in the same folder and moved into place
with :func:`os.replace`, so a killed process never leaves a half-written file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from ..errors import PosencError
from ..atomic import atomic_write, atomic_write_text  # noqa: F401 (re-exported)
from .config import TrainConfig, config_from_dict
from .model import Transformer, build_model
from .tasks import Split, make_split

CONFIG, METRICS, CHECKPOINT, RESULT = ("train_config.json", "metrics.jsonl", "checkpoint.pt",
                                      "train_summary.json")
FORMAT = 1


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    atomic_write(path, lambda fh: torch.save(obj, fh))


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


def read_config(run_dir: str | Path) -> TrainConfig:
    path = Path(run_dir) / CONFIG
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PosencError(f"{run_dir} has no {CONFIG}; is it a run folder?") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise PosencError(f"cannot read {path}: {exc}") from None
    return config_from_dict(data)


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / METRICS
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


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

    def data(self) -> Split:
        """The run's train/test split, regenerated deterministically from its config."""
        return dataset_for(self.config)


def dataset_for(config: TrainConfig) -> Split:
    return make_split(config.task, config.seed)


def model_for(config: TrainConfig) -> Transformer:
    t = config.task
    return build_model(config.model, t.vocab_size, t.n_classes, t.length)


def load_run(run_dir: str | Path, device: str | torch.device = "cpu") -> Run:
    """Load a run folder (one clear PosencError if it is missing or damaged)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise PosencError(f"run folder {run_dir} does not exist")
    config = read_config(run_dir)
    ckpt = read_checkpoint(run_dir / CHECKPOINT, device)
    model = model_for(config)
    try:
        model.load_state_dict(ckpt["model"])
    except (RuntimeError, TypeError) as exc:
        raise PosencError(f"checkpoint in {run_dir} does not match its config "
                          f"({str(exc).splitlines()[0][:120]})") from None
    model.to(device).eval()
    result = None
    if (run_dir / RESULT).is_file():
        result = json.loads((run_dir / RESULT).read_text(encoding="utf-8"))
    return Run(run_dir, config, model, list(ckpt.get("metrics", [])), int(ckpt.get("epoch", 0)), result)
