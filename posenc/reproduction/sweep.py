"""One plan's runs, into one results store: :func:`run_plan`."""

from __future__ import annotations

import time
from typing import Any, Callable, Optional
from ..empirical.pipeline.store import run_id
from ..empirical.pipeline.sweep import run_jobs
from ..empirical.pipeline.kept_files import dropped_files
from ..empirical.training.runs import CHECKPOINT
from .progress import SweepProgress, want_bar
from .plan import WORKER
from ..empirical.pipeline.experiment_result import ExperimentResult


def run_plan(plan: Any, store: Any, backend: str = "local", workers: int = 2, threads: int = 1,
             ray_address: Optional[str] = None, device: Optional[str] = None,
             log: Callable[[str], None] = print, wait: bool = False,
             failed: Optional[dict[str, str]] = None,
             total: Optional[list[int]] = None,
             keep_checkpoints: bool = False, retrain_incomplete: bool = False,
             bar: Optional[bool] = None) -> list[Any]:
    """Run (or skip the finished runs of) a plan into ``store``; returns the results of its
    finished runs (:class:`~posenc.empirical.pipeline.experiment_result.ExperimentResult`, each checked
    against its job's config: a result that is not the run's is a PosencError).  Failures are
    logged and added to ``failed`` (run id -> message), the number
    of runs to ``total[0]``.
    ``keep_checkpoints``: keep each run's checkpoint and trace (default: dropped once its
    analysis is done).  ``retrain_incomplete``: train again the plan's runs whose folder lacks a
    file a finished run keeps (default: such a folder is one PosencError before anything runs).
    Progress (:mod:`.progress`): ``bar`` a tqdm bar over the runs (None: where ``log`` is
    ``print`` and stdout a terminal), else a line per finished run with runs done of N, the
    elapsed time, the ETA and the runs in flight.  Ctrl-C: a
    :class:`~posenc.empirical.pipeline.interrupt.SweepInterrupted` after the runs in flight
    stopped (:mod:`posenc.empirical.pipeline.interrupt`)."""
    jobs = plan.jobs(device=device)
    t0 = time.time()
    progress = SweepProgress(log, bar=want_bar(log) if bar is None else bar)

    counts = set(plan.seed_counts().values())
    seeds_txt = (f"{plan.seeds} seed(s)" if plan.n_count_seeds == plan.seeds else
                 f"{plan.seeds} seed(s) on distance, {plan.n_count_seeds} on count") \
        if not plan.config_seeds else f"{min(counts)}" + (f"-{max(counts)}" if len(counts) > 1
                                                             else "") + " seed(s) per configuration"
    log(f"posenc reproduce: {len(jobs)} runs ({plan.preset} preset, {seeds_txt}) "
        f"into {store.root} [{backend}, {workers if backend == 'local' else 'ray'} worker(s)]")
    try:
        summary = run_jobs(store, jobs, WORKER, backend=backend, workers=workers, threads=threads,
                           ray_address=ray_address, wait=wait,
                           on_wait=lambda who: log(f"waiting for the writer holding {store.root} "
                                                   f"({who})"),
                           drop=() if keep_checkpoints else dropped_files(), resume_from=CHECKPOINT,
                           retrain_incomplete=retrain_incomplete, on_plan=progress.plan,
                           on_start=progress.start, on_done=progress.done)
    finally:
        progress.close()
    resumed = (f" ({len(summary.resumed)} resumed from the checkpoint of a sweep that ended "
               f"mid-run)") if summary.resumed else ""
    log(f"ran {len(summary.completed)}{resumed}, skipped {summary.skipped} finished, "
        f"failed {len(summary.failed)} in {time.time() - t0:.0f} s")
    for rid, msg in summary.failed.items():
        log(f"  failed {rid}: {msg}")
    if failed is not None:
        failed.update(summary.failed)
    if total is not None:
        total[0] += summary.total
    out = []
    for job in jobs:  # each result checked against the config its run was asked for
        rid = run_id(job.config)
        if store.is_done(rid):
            out.append(ExperimentResult.from_store(store, rid, job.config))
    return out
