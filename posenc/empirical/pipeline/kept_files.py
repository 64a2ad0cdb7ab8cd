"""What a finished experiment run keeps in its folder, and what it drops.

``posenc reproduce`` drops a run's working files (:func:`dropped_files`: ``checkpoint.pt`` and
the per-step training trace ``trace.jsonl``) once the run's analysis (ablation, probe, dynamics)
is complete, unless asked to keep them (``--keep-checkpoints``): a store of finished runs then
travels (it can be committed, shared and resumed, and its report rebuilt) at a small fraction of
its size.  What such a run keeps, and what a report or a resumed sweep needs of it:

* ``result.json`` -- the store's commit record (:mod:`.store`), read by the report; it holds the
  trace's statistics (``trace``: gradient-norm jitter, loss spikes, steps to 90%), measured from
  the trace before it is dropped, and every other number the report prints;
* ``train_config.json``, ``train_summary.json``, ``metrics.jsonl`` -- the training's config,
  outcome and per-epoch metrics (:mod:`posenc.empirical.training.runs`);
* ``ablation_<mode>.json`` for each mode its result holds, ``probe.json`` when it has a probe,
  ``dynamics.jsonl`` when it has a dynamics summary (:mod:`.experiment`; a run that diverged to
  non-finite weights has no ablation and no probe) -- kept gzip-compressed as
  ``dynamics.jsonl.gz`` (:mod:`posenc.compressed`; a run stored before holds the plain file,
  and either counts), which the report's dynamics figure reads.

The store's ``config.json`` and ``run.json`` stay too (:mod:`.store`).  The report draws every
figure from these files, so a run draws none of its own.  A finished run that lacks a kept file
is incomplete: with its checkpoint a sweep redoes it; without, nothing can redo it short of
training it again, so it is refused in one line (:func:`incomplete_run`) -- never re-trained
behind the user's back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ...errors import PosencError


def kept_files(result: dict[str, Any]) -> list[str]:
    """The files a finished experiment run's folder holds, given its ``result.json`` (a dict)."""
    from ..analysis.dynamics import DYNAMICS
    from ..training.runs import CONFIG, METRICS, RESULT
    from .store import RESULT_FILE

    names = [RESULT_FILE, CONFIG, RESULT, METRICS]
    names += [f"ablation_{mode}.json" for mode in sorted(result.get("ablation") or {})]
    if result.get("probe") is not None:
        names.append("probe.json")
    if result.get("dynamics"):
        names.append(DYNAMICS)
    return names


def dropped_files() -> tuple[str, ...]:
    """The working files ``posenc reproduce`` removes from a run's folder before its commit
    (unless ``--keep-checkpoints``): the checkpoint, and the per-step trace, whose statistics
    the result holds (a finished run is never resumed, so neither is read again)."""
    from ..training.runs import CHECKPOINT
    from ..training.trace import TRACE
    return (CHECKPOINT, TRACE)


def missing_file(folder: Path, result: dict[str, Any]) -> Optional[str]:
    """The first of :func:`kept_files` that ``folder`` lacks (None: it holds them all); the
    dynamics file counts in either form (:func:`~posenc.empirical.analysis.dynamics.dynamics_file`),
    every other file only as it is named."""
    from ..analysis.dynamics import DYNAMICS, dynamics_file

    def holds(name: str) -> bool:
        return dynamics_file(folder) is not None if name == DYNAMICS else (folder / name).is_file()
    return next((name for name in kept_files(result) if not holds(name)), None)


def has_checkpoint(folder: Path) -> bool:
    from ..training.runs import CHECKPOINT
    return (folder / CHECKPOINT).is_file()


def incomplete_run(label: str, folder: Path, missing: str, store_root: Path) -> PosencError:
    """The one line refusing a finished run whose folder lacks ``missing``: without its
    checkpoint, deleting the folder is the only way to train it again; with its checkpoint,
    ``posenc reproduce`` redoes it."""
    if has_checkpoint(folder):
        return PosencError(f"run {label} ({folder}) lacks {missing}, which a finished run keeps; "
                           f"a sweep of its plan (posenc reproduce --out {store_root}) redoes the "
                           f"run from scratch")
    return PosencError(f"run {label} ({folder}) lacks {missing}, which a finished run keeps, and "
                       f"was stored without its checkpoint, so nothing can redo it; delete the "
                       f"folder to train the run again")
