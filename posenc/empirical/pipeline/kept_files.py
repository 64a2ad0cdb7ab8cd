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
figure from these files, so a run draws none of its own.  An experiment run folder that lacks
one of them -- ``result.json`` (or one that does not read back as its config's result),
``config.json``, ``run.json`` or a kept file -- is incomplete (:func:`incomplete_runs`): a sweep
and the report refuse it in one line naming the folder and the file (:func:`incomplete_run`),
before anything runs or is written; only a sweep asked to (``posenc reproduce
--retrain-incomplete``) trains it again, replacing its folder -- never behind the user's back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ...errors import PosencError
from ..analysis.dynamics import DYNAMICS, dynamics_file
from ..training.runs import CONFIG, METRICS, RESULT, CHECKPOINT
from .store import RESULT_FILE, CONFIG_FILE, META_FILE, run_id
from ..training.trace import TRACE
from .experiment_result import ExperimentResult

#: the flag of ``posenc reproduce`` that trains incomplete runs of its plan again
RETRAIN_FLAG = "--retrain-incomplete"


def kept_files(result: dict[str, Any]) -> list[str]:
    """The files a finished experiment run's folder holds, given its ``result.json`` (a dict)."""
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
    return (CHECKPOINT, TRACE)


def missing_file(folder: Path, result: dict[str, Any]) -> Optional[str]:
    """The first of :func:`kept_files` that ``folder`` lacks (None: it holds them all); the
    dynamics file counts in either form (:func:`~posenc.empirical.analysis.dynamics.dynamics_file`),
    every other file only as it is named."""
    def holds(name: str) -> bool:
        return dynamics_file(folder) is not None if name == DYNAMICS else (folder / name).is_file()
    return next((name for name in kept_files(result) if not holds(name)), None)


def has_checkpoint(folder: Path) -> bool:
    return (folder / CHECKPOINT).is_file()


@dataclass(frozen=True)
class Incomplete:
    """An experiment run folder of a store that lacks what a finished run keeps."""

    id: str  # the folder's name: the run id its config hashes to
    label: str  # from run.json or the index; the folder's name when neither says
    folder: Path
    missing: str  # the first file it lacks, as the refusal names it


def incomplete_runs(store: Any) -> list[Incomplete]:
    """Every experiment run folder of ``store`` (a
    :class:`~posenc.empirical.pipeline.store.RunStore`) that lacks ``config.json`` (or holds one
    that is not its run's), ``run.json``, ``result.json`` (or one that does not read back as the
    result of its config) or a file of :func:`kept_files`; in folder order.  A folder whose run
    is known (from its run.json, the index or its config) to be of another kind than
    ``experiment`` is not checked: such runs keep the store's rule (one without its result is
    redone)."""
    known = {rec.id: rec for rec in store.records()}
    out = []
    try:
        folders = sorted(p for p in store.runs_dir.iterdir() if p.is_dir())
    except OSError:
        return out
    for folder in folders:
        rid, rec = folder.name, known.get(folder.name)
        config, meta = _read_json(folder / CONFIG_FILE), _read_json(folder / META_FILE)
        kind = meta.get("kind") if isinstance(meta, dict) else None
        kind = kind or (rec.kind if rec is not None else None) or (
            ("experiment" if {"train", "ablation_modes"} <= set(config) else "other")
            if isinstance(config, dict) else None)
        if kind not in (None, "experiment"):
            continue
        label = meta.get("label") if isinstance(meta, dict) and isinstance(meta.get("label"), str) \
            else rec.label if rec is not None else rid
        missing: Optional[str] = None
        if not (folder / CONFIG_FILE).is_file():
            missing = CONFIG_FILE
        elif not isinstance(config, dict) or run_id(config) != rid:
            missing = f"a {CONFIG_FILE} of its run id (its own does not read back or is another run's)"
        elif not (folder / META_FILE).is_file():
            missing = META_FILE
        elif not isinstance(meta, dict):
            missing = f"a readable {META_FILE}"
        elif not (folder / RESULT_FILE).is_file():
            missing = RESULT_FILE
        else:
            try:
                res = ExperimentResult.from_store(store, rid, config)
            except PosencError as exc:
                missing = f"a readable {RESULT_FILE} of its config ({exc})"
            else:
                missing = missing_file(folder, res.to_stored())
        if missing is not None:
            out.append(Incomplete(rid, label, folder, missing))
    return out


def _read_json(path: Path) -> Any:
    """The JSON in ``path``; None when it is missing or does not read back."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def incomplete_run(label: str, folder: Path, missing: str, store_root: Path,
                   more: int = 0, outcome: str = "nothing was run") -> PosencError:
    """The one line refusing a run folder that lacks ``missing``, a file a finished run keeps
    (``more``: how many other run folders of the store are incomplete)."""
    others = f" (and {more} more incomplete run folder{'s' if more > 1 else ''} in {store_root})" \
        if more else ""
    return PosencError(f"run {label} ({folder}) lacks {missing}, which a finished run keeps{others}; "
                       f"a sweep of its plan with {RETRAIN_FLAG} (posenc reproduce --out {store_root} "
                       f"... {RETRAIN_FLAG}) trains it again, replacing the folder; {outcome}")


def refuse_incomplete(found: list[Incomplete], store_root: Path,
                      outcome: str = "nothing was run") -> None:
    """One PosencError naming the first of ``found`` (and how many more), if any."""
    if found:
        first = found[0]
        raise incomplete_run(first.label, first.folder, first.missing, store_root, len(found) - 1,
                             outcome)
