"""Run a list of jobs into a :class:`~posenc.empirical.pipeline.store.RunStore`, resumably.

Two backends behind one function, :func:`run_jobs`:

* ``local`` -- in this process (``workers=1``) or a process pool of
  ``workers`` single-purpose processes (spawned, each with ``threads`` torch
  threads; CALIBRATION.md: two 1-thread workers beat one 2-thread run);
* ``ray`` -- the same jobs as Ray tasks on a cluster (``ray_address``) or on a
  local Ray runtime when no address is given; a job that wants CUDA asks Ray
  for a GPU.  Ray is an optional extra (``pip install .[cluster]``).

A job is ``worker(config, folder, threads) -> result``, where ``worker`` is an
import path ``"module:function"`` (so it pickles to any process or node).
The worker writes its files into ``folder``, a private staging folder; when it
returns, this process moves the staging folder into ``runs/<id>`` and commits
the result (see :mod:`~posenc.empirical.pipeline.store`).  Ray workers run in a temp
folder on their node and send the files back with the result, so no shared
file system is needed.  Finished runs are skipped; unfinished and failed ones
are redone, and so is a finished run of a kind other than ``experiment`` whose ``result.json``
is damaged.  ``drop`` names files removed from each run's staging folder before it is committed
(``posenc reproduce`` drops the checkpoint once the run's analysis is done:
:mod:`~posenc.empirical.pipeline.kept_files`); an experiment run folder that lacks a file a
finished run keeps (its ``result.json`` among them) is refused in one line before anything runs,
and trained again only with ``retrain_incomplete``.
``resume_from`` names the file a worker resumes from (``posenc reproduce``: the training
checkpoint): a staging folder that holds it, left by a sweep that ended before that run
finished, becomes the run's folder again on the local backend, so a sweep stopped mid-run
loses at most the work since that file was written (training resumes bit for bit:
:func:`~posenc.empirical.training.train.train`).  Such a folder of a run outside the sweep's jobs
that the store holds and has not finished is kept for the plan that has it (two plans share a store: a
sweep of one must not cost the other its run in progress); every other staging folder is removed.

One writer per store: :func:`run_jobs` holds the store's lock
(:mod:`~posenc.empirical.pipeline.store_lock`) from start to end; a second sweep into the same store
gets one line naming the holder (or waits, ``wait=True``).  Local pool workers die with the
sweep process (:func:`_die_with_parent`), so a SIGKILLed sweep leaves no orphans.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
import uuid
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ...errors import PosencError
from . import interrupt as stopping
from .interrupt import SigintGuard, SweepInterrupted, running, signal_processes, worker_signals
from .store import RunStore, run_id
import torch
from ..config import check_threads
from .kept_files import incomplete_runs, refuse_incomplete

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Job:
    """One run of a sweep: a resolved config and how to execute it."""

    config: dict[str, Any]
    kind: str
    label: str
    wants_cuda: bool = False


@dataclass
class SweepSummary:
    total: int = 0
    skipped: int = 0
    completed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    resumed: list[str] = field(default_factory=list)  # handed an earlier attempt's folder


def resolve_worker(path: str) -> Callable[[dict, str, int], dict]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _call_worker(worker: str, config: dict, folder: str, threads: int) -> dict:
    if threads > 0:
        torch.set_num_threads(threads)
    return resolve_worker(worker)(config, folder, threads)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 1.0


def _die_with_parent(parent: int) -> None:
    """Pool-worker initializer: end this worker when the sweep process ``parent`` dies.

    On Linux the kernel sends SIGKILL on the parent's death (``prctl(PR_SET_PDEATHSIG)``);
    everywhere a daemon thread also polls ``os.getppid()`` (re-parenting means the parent is
    gone), which covers other systems and the race of a parent dying before the prctl call.
    The workers' end also ends multiprocessing's resource tracker (it exits on EOF of the
    pipe the workers hold open)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the polling thread still covers it
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            if os.getppid() != parent:
                os._exit(1)
    threading.Thread(target=watch, name="posenc-parent-watch", daemon=True).start()


def _ray_task(worker: str, config: dict, threads: int) -> tuple[dict, dict[str, bytes]]:
    with tempfile.TemporaryDirectory(prefix="posenc-ray-") as tmp:
        result = _call_worker(worker, config, tmp, threads)
        files = {}
        for path in Path(tmp).rglob("*"):
            if path.is_file():
                files[str(path.relative_to(tmp))] = path.read_bytes()
    return result, files


def check_ray_address(address: str | None) -> None:
    """Fail fast, with one line, on an address nothing listens on."""
    if not address or address == "auto":
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise PosencError(f"a Ray address is HOST:PORT (or ray://HOST:PORT); got {address!r}")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=3):
            pass
    except (OSError, ValueError) as exc:
        raise PosencError(f"cannot reach the Ray cluster at {address}: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None


def run_jobs(store: RunStore, jobs: Iterable[Job], worker: str, backend: str = "local",
             workers: int = 1, threads: int = 1, ray_address: str | None = None,
             on_done: Callable[[str, Job, dict | None], None] | None = None,
             wait: bool = False, on_wait: Callable[[str], None] | None = None,
             drop: tuple[str, ...] = (), resume_from: str | None = None,
             retrain_incomplete: bool = False,
             on_start: Callable[[str, Job], None] | None = None,
             on_plan: Callable[[SweepSummary], None] | None = None) -> SweepSummary:
    """Execute every unfinished job; returns what was skipped, completed, failed and resumed.

    ``drop``: file names removed from each job's folder before it is committed (a finished run
    then never holds them; one interrupted between the two redoes the job).
    ``resume_from``: a file name; an unfinished job whose leftover staging folder holds it is
    handed that folder (local backend; module doc).
    ``retrain_incomplete``: train again the jobs whose experiment run folder lacks what a finished
    run keeps (:func:`~.kept_files.incomplete_runs`); without it any such folder of the store is
    one PosencError before anything runs, and so is one of a run outside ``jobs`` with it.

    ``on_start(run id, job)``: told as each job starts (``on_done(run id, job, result or None)``
    as it ends); ``on_plan(summary)``: told once the finished runs are counted, before any job
    starts (``summary.total``, ``summary.skipped``).
    Ctrl-C (SIGINT) stops the sweep within seconds and starts no further job: the finished runs
    stay committed, the runs in progress resume at the next sweep, and a
    :class:`~.interrupt.SweepInterrupted` (a KeyboardInterrupt) says how far it got
    (:mod:`.interrupt`); a second Ctrl-C exits at once.

    Holds the store's writer lock throughout: another writer means one PosencError naming
    its PID, or (``wait=True``) waiting for it (``on_wait(holder)`` is told first)."""
    if backend not in BACKENDS:
        raise PosencError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if workers < 1:
        raise PosencError(f"--workers must be at least 1; got {workers}")
    check_threads(threads)
    own = not store.lock.held
    if own:
        store.lock.acquire(wait=wait, on_wait=on_wait)
    try:
        return _run_jobs(store, jobs, worker, backend, workers, threads, ray_address, on_done,
                         drop, resume_from, retrain_incomplete, on_start, on_plan)
    finally:
        if own:
            store.lock.release()


def _run_jobs(store: RunStore, jobs: Iterable[Job], worker: str, backend: str, workers: int,
              threads: int, ray_address: str | None,
              on_done: Callable[[str, Job, dict | None], None] | None,
              drop: tuple[str, ...] = (), resume_from: str | None = None,
              retrain_incomplete: bool = False,
              on_start: Callable[[str, Job], None] | None = None,
              on_plan: Callable[[SweepSummary], None] | None = None) -> SweepSummary:
    """The plan's unfinished jobs (the rest counted as skipped), the earlier sweeps' staging
    folders resumed or removed, then the jobs run by the backend."""
    store.heal()
    summary = SweepSummary()
    todo = _todo(store, list(jobs), summary, retrain_incomplete)
    staging_root = store.root / "staging"
    # (we hold the writer lock: every staging folder is an ended sweep's)
    mine = {rid for rid, _ in todo}
    earlier = _resumable(staging_root, mine.__contains__, resume_from) \
        if backend == "local" else {}
    others = set(_resumable(staging_root, lambda rid: rid not in mine and _pending(store, rid),
                            resume_from).values())
    _clear_staging(staging_root, keep=set(earlier.values()) | others)
    if on_plan:
        on_plan(summary)
    sweep = _Sweep(store, summary, staging_root, earlier, drop, on_done, on_start)
    if backend == "ray":
        with SigintGuard(raise_now=True) as guard:
            try:
                _run_ray(store, todo, worker, threads, ray_address, sweep.new_staging,
                         sweep.commit, sweep.failed, on_start)
            except KeyboardInterrupt:
                guard.exit_on_next()
                raise sweep.interrupted([]) from None
    elif workers == 1:
        _run_serial(todo, worker, threads, sweep)
    else:
        _run_pool(todo, worker, workers, threads, sweep.started, sweep.commit, sweep.failed,
                  sweep.interrupted)
    if others:
        _clear_staging(staging_root, keep=others)
    else:
        shutil.rmtree(staging_root, ignore_errors=True)
    return summary


def _todo(store: RunStore, jobs: list[Job], summary: SweepSummary,
          retrain_incomplete: bool) -> list[tuple[str, Job]]:
    """(run id, job) of each job to run, each run once; the finished and intact ones are counted
    in ``summary`` as skipped.  An experiment run folder that lacks what a finished run keeps is
    refused before any training, unless the plan's own are to be trained again (kept_files)."""
    planned = {run_id(job.config) for job in jobs}
    found = incomplete_runs(store)
    refuse_incomplete([i for i in found if not (retrain_incomplete and i.id in planned)], store.root)
    incomplete = {i.id for i in found}
    todo: list[tuple[str, Job]] = []
    for job in jobs:
        summary.total += 1
        rid = store.add(job.config, job.kind, job.label)
        if rid not in incomplete and store.is_done(rid) and _intact(store, rid, job):
            summary.skipped += 1
        elif rid not in {r for r, _ in todo}:
            todo.append((rid, job))
    return todo


def _pending(store: RunStore, rid: str) -> bool:
    """Whether ``rid`` is a run the store holds and has not finished (a plan added it)."""
    try:
        store.get(rid)
    except PosencError:
        return False
    return not store.is_done(rid)


def _clear_staging(staging_root: Path, keep: set[Path]) -> None:
    """Every staging folder (and stray file) of an ended sweep removed but those in ``keep``
    (to be resumed); the folder itself there afterwards."""
    if staging_root.exists():
        for path in staging_root.iterdir():
            if path in keep:
                continue
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink()
    staging_root.mkdir(exist_ok=True)


@dataclass
class _Sweep:
    """What a backend calls as runs start and end: staging folders (an earlier attempt's
    resumed), commits into the store, failures, and the interruption's summary."""

    store: RunStore
    summary: SweepSummary
    staging_root: Path
    earlier: dict[str, Path]
    drop: tuple[str, ...]
    on_done: Callable[[str, Job, dict | None], None] | None
    on_start: Callable[[str, Job], None] | None

    def commit(self, rid: str, job: Job, staging: Path, result: dict) -> None:
        for name in self.drop:
            (staging / name).unlink(missing_ok=True)
        self.store.commit(rid, staging, result)
        self.summary.completed.append(rid)
        if self.on_done:
            self.on_done(rid, job, result)

    def failed(self, rid: str, job: Job, message: str) -> None:
        self.store.fail(rid, message)
        self.summary.failed[rid] = message
        if self.on_done:
            self.on_done(rid, job, None)

    def new_staging(self, rid: str) -> Path:
        path = self.staging_root / f"{rid}.{uuid.uuid4().hex[:8]}"
        if rid in self.earlier:  # the earlier attempt's files, under a name of this sweep's
            os.replace(self.earlier.pop(rid), path)
            for tmp in path.rglob(".*.tmp"):  # an atomic write a kill cut short (posenc.atomic)
                tmp.unlink(missing_ok=True)
            self.summary.resumed.append(rid)
        else:
            path.mkdir()
        self.store.stage(rid, path)
        return path

    def started(self, rid: str, job: Job) -> Path:
        staging = self.new_staging(rid)
        self.store._set_state(rid, "running")
        if self.on_start:
            self.on_start(rid, job)
        return staging

    def interrupted(self, stopped: list[str]) -> SweepInterrupted:
        for rid in stopped:  # their staging folders stay: the next sweep resumes them
            self.store._set_state(rid, "pending")
        return SweepInterrupted(self.summary.skipped + len(self.summary.completed),
                                self.summary.total, self.store.root, len(stopped))


def _run_serial(todo: list[tuple[str, Job]], worker: str, threads: int, sweep: _Sweep) -> None:
    """The jobs one after another in this process; Ctrl-C stops between (or inside) runs."""
    with SigintGuard(raise_now=True) as guard:
        for rid, job in todo:
            if guard.requested:
                raise sweep.interrupted([])
            staging = sweep.started(rid, job)
            try:
                result = _call_worker(worker, job.config, str(staging), threads)
            except PosencError:
                raise
            except KeyboardInterrupt:
                guard.exit_on_next()
                raise sweep.interrupted([rid]) from None
            except Exception as exc:  # a bug in one run must not lose the others
                with guard.shielded():
                    sweep.failed(rid, job, _describe(exc))
                continue
            with guard.shielded():
                sweep.commit(rid, job, staging, result)
        if guard.requested:
            raise sweep.interrupted([])


#: seconds between two looks of a pool sweep at its runs and at SIGINT
POLL_S = 0.2


def _run_pool(todo, worker, workers, threads, started, commit, failed, interrupted) -> None:
    """The jobs on a pool of ``workers`` processes, at most one job per worker submitted at a time
    (a queued job never starts after Ctrl-C); SIGINT stops them (:mod:`.interrupt`)."""
    queue = list(todo)
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                             initializer=_init_pool_worker, initargs=(os.getpid(),)) as pool:
        def kill() -> None:
            signal_processes(getattr(pool, "_processes", {}).values(), signal.SIGKILL)

        with SigintGuard(raise_now=False, on_exit=kill) as guard:
            pending: dict[Any, tuple[str, Job, Path]] = {}
            while (queue or pending) and not guard.requested:
                while queue and len(pending) < workers and not guard.requested:
                    rid, job = queue.pop(0)
                    staging = started(rid, job)
                    pending[pool.submit(_call_pool_worker, worker, job.config, str(staging),
                                        threads)] = (rid, job, staging)
                done, _ = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
                for fut in done:
                    rid, job, staging = pending.pop(fut)
                    exc = fut.exception()
                    if exc is not None:
                        failed(rid, job, _describe(exc))
                    else:
                        commit(rid, job, staging, fut.result())
            if not guard.requested:
                return
            guard.exit_on_next()  # a second Ctrl-C from here on exits at once
            stopped = _stop_pool(pool, pending, commit, kill)
            pool.shutdown(wait=True, cancel_futures=True)
            raise interrupted(stopped)


def _stop_pool(pool: ProcessPoolExecutor, pending: dict, commit: Callable, kill: Callable) -> list[str]:
    """Ask every worker to stop its run (SIGTERM), wait up to STOP_GRACE_S, then kill those left;
    a run that finished meanwhile is committed.  Returns the ids of the runs stopped."""
    signal_processes(getattr(pool, "_processes", {}).values(), signal.SIGTERM)
    done, left = wait(pending, timeout=stopping.STOP_GRACE_S)
    if left:
        kill()
    stopped = []
    for fut, (rid, job, staging) in pending.items():
        if fut in done and not fut.cancelled() and fut.exception() is None:
            commit(rid, job, staging, fut.result())
        else:
            stopped.append(rid)
    return stopped


def _init_pool_worker(parent: int) -> None:
    _die_with_parent(parent)
    worker_signals()


def _call_pool_worker(worker: str, config: dict, folder: str, threads: int) -> dict:
    with running():
        return _call_worker(worker, config, folder, threads)


def _resumable(staging_root: Path, wanted: Callable[[str], bool],
               name: str | None) -> dict[str, Path]:
    """Run id -> the staging folder an ended sweep left for it that holds the file ``name``, for
    each ``wanted`` run id (several: the one whose file was written last).  Folders are named
    ``<run id>.<suffix>``."""
    found: dict[str, Path] = {}
    if name is None or not staging_root.is_dir():
        return found
    for path in staging_root.iterdir():
        rid = path.name.partition(".")[0]
        if wanted(rid) and (path / name).is_file() and (
                rid not in found or (path / name).stat().st_mtime_ns >
                (found[rid] / name).stat().st_mtime_ns):
            found[rid] = path
    return found


def _run_ray(store, todo, worker, threads, address, new_staging, commit, failed,
             on_start=None) -> None:
    try:
        import ray
    except ImportError:
        raise PosencError("the ray backend needs Ray: pip install 'posenc[cluster]'") from None
    check_ray_address(address)
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        except Exception as exc:  # ConnectionError, RuntimeError, ...
            raise PosencError(f"cannot start or reach Ray at {address or 'a local runtime'}: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    refs = {}
    for rid, job in todo:
        task = ray.remote(num_cpus=max(1, threads), num_gpus=1 if job.wants_cuda else 0,
                          max_retries=0)(_ray_task)
        store._set_state(rid, "running")
        refs[task.remote(worker, job.config, threads)] = (rid, job)
        if on_start:
            on_start(rid, job)
    while refs:
        try:
            ready, _ = ray.wait(list(refs), num_returns=1)
        except KeyboardInterrupt:  # Ctrl-C: no task goes on (the sweep says what resumes)
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
        rid, job = refs.pop(ready[0])
        try:
            result, files = ray.get(ready[0])
        except Exception as exc:
            failed(rid, job, _describe(exc))
            continue
        staging = new_staging(rid)
        for rel, data in files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        commit(rid, job, staging, result)


def _intact(store: RunStore, rid: str, job: Job) -> bool:
    """Whether a finished run's result.json reads back (an experiment run's folder is checked
    whole before: :func:`~.kept_files.incomplete_runs`); a damaged one of another kind is
    redone."""
    if job.kind == "experiment":
        return True
    try:
        store.result(rid)
    except PosencError:
        return False
    return True


def _describe(exc: BaseException) -> str:
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return last[:500]
