"""``posenc reproduce``: run (or resume) the reproduction sweep, then write its report.

:func:`reproduce` takes one :class:`~.options.ReproduceOptions`, expands its
:class:`~.plan.ReproductionPlan` (and the replication's, with ``replicate``), checks the stores
(:mod:`.stores`) before either is created, runs the plan into its store (:func:`.sweep.run_plan`:
finished runs are skipped) -- with ``until_decided`` in the rounds of :mod:`.rounds` -- and has
:func:`posenc.report.build_report` write the report.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import PosencError
from ..report import build_report
from ..report.replication import check_same_plan
from .options import ReproduceOptions
from .plan import ReproductionPlan, replica_of
from .stores import check_disjoint_stores, check_mode, done_configs, replica_root, stored_records
from .sweep import run_plan
from ..empirical.config import check_threads
from ..empirical.pipeline.store import RunStore
from .rounds import check_limits, until_decided
from ..verdicts.accuracy_deposit import evaluate
from ..verdicts.dynamics import evaluate_dynamics
from ..verdicts.looks import optional_stopping_text, read_record, write_record


def reproduce(options: ReproduceOptions, log: Callable[[str], None] = print) -> Path:
    """Run (or resume) the reproduction sweep of ``options`` and write its report; returns
    report.md's path.

    A run's checkpoint and per-step trace are dropped once its analysis is done, unless
    ``keep_checkpoints``.  One writer per store: another sweep running into it is a PosencError
    naming its PID, or (``wait``) waited for.  If any run failed, the report of the finished runs
    is still written and the failures are logged, then a PosencError says how many failed.
    Ctrl-C stops the sweep: a :class:`~posenc.empirical.pipeline.interrupt.SweepInterrupted`."""
    o = options
    check_threads(o.threads)
    plan = ReproductionPlan.for_command(o.preset, o.seeds, o.count_seeds,
                                        roles=None if o.roles is None else list(o.roles),
                                        tasks=None if o.tasks is None else list(o.tasks),
                                        overrides=dict(o.overrides), first_seed=o.first_seed,
                                        paper_code=o.paper_code)
    if o.until_decided:
        check_limits(plan.seed_counts(), o.max_seeds, o.batch)
    replica_plan = replica_of(plan, o.replicate_first_seed) if o.replicate else None
    root = Path(o.out or f"posenc-out/{o.preset}" + ("-paper-code" if plan.in_paper_code else ""))
    _check_stores(o, plan, root, replica_plan)  # before either store is created
    store = RunStore(root)
    failed: dict[str, str] = {}
    total = [0]
    run = dict(backend=o.backend, workers=o.workers, threads=o.threads,
               ray_address=o.ray_address, device=o.device, log=log, wait=o.wait, failed=failed,
               total=total, keep_checkpoints=o.keep_checkpoints,
               retrain_incomplete=o.retrain_incomplete, bar=o.progress)
    if o.until_decided:
        _run_until_decided(o, plan, store, run, log)
    else:
        run_plan(plan, store, **run)
    replica = None
    if replica_plan is not None:
        replica = RunStore(replica_root(root))
        log(f"replication: seeds {replica_plan.first_seed}.. into {replica.root}")
        run_plan(replica_plan, replica, **run)
        if not failed:  # the replication's own report, its section pointing back to this store
            _announced(log, replica.root,
                       lambda: build_report(replica.root, preset=plan.preset, theory=False,
                                            replica=store.root))
    return _report(store.root, plan.preset, o.theory, None if replica is None else replica.root,
                   failed, total[0], log)


def _check_stores(o: ReproduceOptions, plan: ReproductionPlan, root: Path,
                  replica_plan: Optional[ReproductionPlan]) -> None:
    """Every check of the stores as they are, before either is created: a refusal writes
    nothing.  Every config of the plan is validated first (:meth:`ReproductionPlan.jobs`)."""
    jobs = plan.jobs(device=o.device)
    stored = stored_records(root)
    check_mode(stored, root, plan.mode)
    if replica_plan is None:
        return
    replica_dir = replica_root(root)
    replica_stored = stored_records(replica_dir)
    check_mode(replica_stored, replica_dir, plan.mode)
    check_disjoint_stores(root, plan, stored, replica_dir, replica_plan, replica_stored)
    check_same_plan(done_configs(stored) + [j.config for j in jobs],
                    done_configs(replica_stored)
                    + [j.config for j in replica_plan.jobs(device=o.device)], str(replica_dir))


def _run_until_decided(o: ReproduceOptions, plan: ReproductionPlan, store: Any,
                       run: dict[str, Any], log: Callable[[str], None]) -> None:
    """The rounds of :mod:`.rounds`, each look recorded in the store; then the warning."""
    assert o.max_seeds is not None  # (ReproduceOptions: until_decided needs max_seeds)
    max_seeds = o.max_seeds
    until_decided(plan.seed_counts(),
                  lambda counts: run_plan(plan.with_seed_counts(counts), store, **run),
                  lambda results: evaluate(results) + evaluate_dynamics(results),
                  o.batch, max_seeds, log,
                  on_look=lambda looks: write_record(store.root, looks, o.batch, max_seeds))
    record = read_record(store.root)
    assert record is not None  # (written after every look)
    log("warning: " + optional_stopping_text(record).replace("**", ""))


def _report(root: Path, preset: str, theory: bool, replica: Optional[Path],
            failed: dict[str, str], total: int, log: Callable[[str], None]) -> Path:
    """The store's report; with failed runs, the report of the finished ones and then a
    PosencError that says how many failed."""
    def build() -> Path:
        return build_report(root, preset=preset, theory=theory, replica=replica)
    if not failed:
        return _announced(log, root, build)
    message = (f"{len(failed)} of {total} runs failed (listed above; the first: "
               f"{next(iter(failed.values()))[:200]})")
    try:
        path = _announced(log, root, build)
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
