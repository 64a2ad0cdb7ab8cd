"""``posenc reproduce``: run (or resume) the reproduction sweep, then write its report.

:func:`reproduce` expands a :class:`~posenc.empirical.pipeline.reproduction.ReproductionPlan`,
runs it into a results store (resumably: finished runs are skipped; one store holds runs of
one model-code mode, :func:`check_store_mode`) and calls
:func:`~posenc.report.build.build_report`.  With ``--until-decided`` the rounds of
:mod:`posenc.report.decide` add seeds where a claim is undecided.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import PosencError
from .build import build_report
from .replication import check_same_plan


def reproduce(preset: str = "quick", backend: str = "local", out: Optional[str] = None,
              seeds: Optional[int] = None, count_seeds: Optional[int] = None,
              workers: int = 2, threads: int = 1,
              ray_address: Optional[str] = None, device: Optional[str] = None,
              overrides: Optional[dict[str, Any]] = None,
              roles: Optional[list[str]] = None, tasks: Optional[list[str]] = None,
              theory: bool = True, log: Callable[[str], None] = print, wait: bool = False,
              until_decided: bool = False, max_seeds: Optional[int] = None,
              seed_batch: Optional[int] = None, first_seed: int = 0,
              paper_code: Optional[bool] = None, replicate: bool = False,
              replicate_first_seed: Optional[int] = None,
              keep_checkpoints: bool = False, retrain_incomplete: bool = False,
              bar: Optional[bool] = None) -> Path:
    """Run (or resume) the reproduction sweep and write its report; returns report.md's path.

    A run's checkpoint and per-step trace are dropped once its analysis is done (its results,
    metrics, ablation, probe and dynamics stay: :mod:`posenc.empirical.pipeline.kept_files`),
    unless ``keep_checkpoints``; those of a run finished before are left as they are.

    ``paper_code``: run the paper code's models (None: on for the ``paper`` preset only); the
    default store is then ``posenc-out/PRESET-paper-code``, and a store that holds runs of the
    other mode is refused.

    One writer per store: another sweep running into ``out`` is a PosencError naming its PID,
    or (``wait=True``) waited for.  If any run failed, the report of the finished runs is still
    written and the failures are logged, then a PosencError says how many failed.
    ``until_decided``: then add ``seed_batch`` (default 2) seeds at a time to the configurations
    of undecided claims until each is decided or has ``max_seeds`` seeds
    (:mod:`posenc.report.decide`).
    ``replicate``: then run the same plan on a disjoint seed set (``replicate_first_seed``,
    default ``first_seed`` + :data:`REPLICA_OFFSET`) into its own store, ``OUT-replicate``, with
    its own report, and show both verdicts per claim side by side in the first report
    (:mod:`.replication`: a claim is decided only where both agree).
    ``retrain_incomplete``: train again the runs whose folder lacks a file a finished run keeps
    (default: refused in one line before anything runs).  ``bar``: the sweep's progress as a
    tqdm bar (None: on a terminal; :func:`run_plan`); the report phase is announced in ``log``.
    Ctrl-C stops the sweep: a :class:`~posenc.empirical.pipeline.interrupt.SweepInterrupted`."""
    from ..empirical.config import check_threads
    from ..empirical.pipeline.reproduction import ReproductionPlan
    from ..empirical.pipeline.store import RunStore

    check_threads(threads)
    plan = ReproductionPlan.for_command(preset, seeds, count_seeds, roles=roles, tasks=tasks,
                                        overrides=dict(overrides or {}), first_seed=first_seed,
                                        paper_code=paper_code)
    if not until_decided and (max_seeds is not None or seed_batch is not None):
        raise PosencError("--max-seeds and --seed-batch go with --until-decided")
    seed_batch = 2 if seed_batch is None else seed_batch
    if until_decided:
        from .decide import check_limits
        if max_seeds is None:
            raise PosencError("--until-decided needs --max-seeds N")
        check_limits(plan.seed_counts(), max_seeds, seed_batch)
    replica_plan = None
    if replicate:
        if until_decided:
            raise PosencError("--replicate and --until-decided do not go together: a replication "
                              "runs the same seed counts on other seeds")
        replica_plan = replica_of(plan, replicate_first_seed)
    elif replicate_first_seed is not None:
        raise PosencError("--replicate-first-seed goes with --replicate")
    jobs = plan.jobs(device=device)  # validates every config before anything is written
    root = Path(out or f"posenc-out/{preset}" + ("-paper-code" if plan.in_paper_code else ""))
    # every check reads the stores as they are, before either is created: a refusal writes nothing
    stored = _stored_records(root)
    _check_mode(stored, root, plan.mode)
    if replica_plan is not None:
        replica_dir = replica_root(root)
        replica_stored = _stored_records(replica_dir)
        _check_mode(replica_stored, replica_dir, plan.mode)
        check_disjoint_stores(root, plan, stored, replica_dir, replica_plan, replica_stored)
        check_same_plan(_done_configs(stored) + [j.config for j in jobs],
                        _done_configs(replica_stored)
                        + [j.config for j in replica_plan.jobs(device=device)], str(replica_dir))
    store = RunStore(root)
    replica = None if replica_plan is None else RunStore(replica_dir)
    failed: dict[str, str] = {}
    total = [0]
    run = dict(backend=backend, workers=workers, threads=threads, ray_address=ray_address,
               device=device, log=log, wait=wait, failed=failed, total=total,
               keep_checkpoints=keep_checkpoints, retrain_incomplete=retrain_incomplete, bar=bar)
    if until_decided:
        from ..verdicts.dynamics import evaluate_dynamics
        from ..verdicts.accuracy_deposit import evaluate
        from .decide import optional_stopping_text, read_record, write_record
        from .decide import until_decided as rounds
        rounds(plan.seed_counts(),
               lambda counts: run_plan(plan.with_seed_counts(counts), store, **run),
               lambda results: evaluate(results) + evaluate_dynamics(results),
               seed_batch, max_seeds, log,
               on_look=lambda looks: write_record(store.root, looks, seed_batch, max_seeds))
        log("warning: " + optional_stopping_text(read_record(store.root)).replace("**", ""))
    else:
        run_plan(plan, store, **run)
    replica_root_ = None
    if replica is not None:
        log(f"replication: seeds {replica_plan.first_seed}.. into {replica.root}")
        run_plan(replica_plan, replica, **run)
        replica_root_ = replica.root
        if not failed:  # the replication's own report, its section pointing back to this store
            _announced(log, replica.root,
                       lambda: build_report(replica.root, preset=plan.preset, theory=False,
                                            replica=store.root))
    report = dict(preset=plan.preset, theory=theory, replica=replica_root_)
    if not failed:
        return _announced(log, store.root, lambda: build_report(store.root, **report))
    message = (f"{len(failed)} of {total[0]} runs failed (listed above; the first: "
               f"{next(iter(failed.values()))[:200]})")
    try:
        path = _announced(log, store.root, lambda: build_report(store.root, **report))
    except PosencError as exc:
        raise PosencError(f"{message}; no report ({exc})") from None
    raise PosencError(f"{message}; the report of the finished runs is at {path}")


def _announced(log: Callable[[str], None], root: Path, build: Callable[[], Path]) -> Path:
    """``build()`` (a report of the store at ``root``), announced before and timed after: the
    report phase takes a minute or more with the theory table and the figures."""
    log(f"building the report of {root} (verdicts, tables, figures) ...")
    t0 = time.time()
    path = build()
    log(f"report built in {time.time() - t0:.0f} s")
    return path


#: how far the replication's seeds lie from the first seed set by default (seeds 0-5 -> 2000-2005)
REPLICA_OFFSET = 2000


def replica_of(plan: Any, first_seed: Optional[int] = None) -> Any:
    """The plan on the replication's seeds: the same configurations and seed counts from
    ``first_seed`` (default: the plan's first seed + :data:`REPLICA_OFFSET`); refused when the two
    seed sets overlap."""
    start = plan.first_seed + REPLICA_OFFSET if first_seed is None else first_seed
    out = replace(plan, first_seed=start)  # validates the seed
    n = max(plan.seed_counts().values(), default=0)
    if start < plan.first_seed + n and plan.first_seed < start + n:
        raise PosencError(f"the replication's seeds {start}..{start + n - 1} overlap the first "
                          f"seeds {plan.first_seed}..{plan.first_seed + n - 1}: a replication "
                          "needs a disjoint seed set")
    return out


def replica_root(root: str | Path) -> Path:
    """The replication's store beside the first one: ``ROOT-replicate`` (of the absolute path:
    ``--out .`` puts it beside the current folder); a root without a name (``/``) is refused."""
    root = Path(root).resolve()
    if not root.name:
        raise PosencError(f"--replicate needs a store folder with a name beside which its "
                          f"replication can go; got {str(root)!r}")
    return root.with_name(root.name + "-replicate")


def _stored_records(root: Path) -> list[Any]:
    """The runs of the store at ``root`` as it is, created by nothing (none when there is no
    store there yet)."""
    from ..empirical.pipeline.store import RunStore

    if root.exists() and not root.is_dir():
        raise PosencError(f"results store {root} is not a folder")
    if not (root / "posenc-store.json").exists():
        return []
    return list(RunStore(root, create=False).records())


def _done_configs(records: list[Any]) -> list[dict[str, Any]]:
    return [rec.config for rec in records if rec.kind == "experiment" and rec.state == "done"]


def _seeds_in(records: list[Any]) -> set[int]:
    """The seeds of every experiment run of ``records`` (finished or not)."""
    return {int(rec.config["train"]["seed"]) for rec in records
            if rec.kind == "experiment" and "train" in rec.config}


def check_disjoint_stores(root: Path, plan: Any, stored: list[Any], replica_dir: Path,
                          replica_plan: Any, replica_stored: list[Any]) -> None:
    """Before anything trains: the replication's seeds (planned and already stored, ``*stored``:
    the stores' records) share none with the first store's (planned and already stored -- an
    earlier ``--until-decided`` or ``--seeds`` may have added seeds past the plan)."""
    def planned(p: Any) -> set[int]:
        return {e.train.seed for e in p.experiments()}
    first = planned(plan) | _seeds_in(stored)
    second = planned(replica_plan) | _seeds_in(replica_stored)
    shared = sorted(first & second)
    if shared:
        raise PosencError(f"the replication {replica_dir} would share seeds {shared[:10]}"
                          f"{' ...' if len(shared) > 10 else ''} with {root}: a replication "
                          "needs a disjoint seed set (--replicate-first-seed)")


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
    from ..empirical.pipeline.reproduction import WORKER
    from ..empirical.pipeline.store import run_id
    from ..empirical.pipeline.sweep import run_jobs
    from ..empirical.pipeline.kept_files import dropped_files
    from ..empirical.training.runs import CHECKPOINT

    from .progress import SweepProgress, want_bar

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
    from ..empirical.pipeline.experiment_result import ExperimentResult
    out = []
    for job in jobs:  # each result checked against the config its run was asked for
        rid = run_id(job.config)
        if store.is_done(rid):
            out.append(ExperimentResult.from_store(store, rid, job.config))
    return out

def _run_mode(config: dict[str, Any]) -> str:
    train = config.get("train", config) if isinstance(config, dict) else {}
    model = train.get("model", {}) if isinstance(train, dict) else {}
    return "paper-code" if isinstance(model, dict) and model.get("code") == "paper" else "standard"


def check_store_mode(store: Any, mode: str) -> None:
    """Paper-code and standard runs never share a store (their reports would mix)."""
    _check_mode(store.records(), store.root, mode)


def _check_mode(records: Any, root: Path, mode: str) -> None:
    for rec in records:
        if rec.kind == "experiment" and _run_mode(rec.config) != mode:
            raise PosencError(f"the store {root} holds {_run_mode(rec.config)} runs; give "
                              f"another --out for a {mode} sweep")
