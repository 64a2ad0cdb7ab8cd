"""A calibration ladder: preset candidates tried in order on seeds the report never runs, each
judged by posenc's trained criterion (:func:`posenc.verdicts.trained.trained_criterion`).

The pieces two calibrations share (``deposit_calibration.py``: a scan regime's attention shape on
the distance task; ``count_calibration.py``: the count task at ``paper-small``): a :class:`Ladder`
names its candidates (in the order they are tried), its roles, each candidate's plans and store,
and the criterion's parts that judge its task; :func:`run` sweeps a candidate role by role, the
likeliest to fail part (a) first (:func:`run_order`); :func:`table` is the criterion's parts on
the finished runs and a row per run.  The first candidate that meets every part is the one to
freeze; the ladder and the criterion are committed before any of its runs.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import deposit_scan as scan

SEEDS = 2


@dataclass(frozen=True)
class Ladder:
    """``plans(candidate)``: the candidate's plans (each role in one of them);
    ``store_of(out, candidate)``: its store; ``parts``: the names of the criterion's parts that
    judge it; ``first``: the role that leads on the first rung (the likeliest to fail part (a)
    before any rung has run)."""

    candidates: tuple[str, ...]
    roles: tuple[str, ...]
    plans: Callable[[str], list[Any]]
    store_of: Callable[[Path, str], Path]
    parts: tuple[str, ...]
    first: str
    first_seed: int = scan.FIRST_SEED

    def check(self, candidate: str) -> None:
        if candidate not in self.candidates:
            raise SystemExit(f"unknown candidate {candidate!r}; known: "
                             f"{', '.join(self.candidates)}")


def _roles_of(plan: Any) -> tuple[str, ...]:
    return tuple(plan.distance_roles) + tuple(plan.count_roles)


def _one_role(plan: Any, role: str) -> Any:
    """``plan`` cut down to ``role`` on the task it runs it on."""
    return replace(plan, distance_roles=(role,) if role in plan.distance_roles else (),
                   count_roles=(role,) if role in plan.count_roles else ())


def results(ladder: Ladder, out: Path, candidate: str) -> list[Any]:
    """The candidate's finished runs, each checked against the config it was run for."""
    ladder.check(candidate)
    root = ladder.store_of(out, candidate)
    return [res for p in ladder.plans(candidate) for res in scan._finished(root, p)]


def run_order(ladder: Ladder, out: Path, candidate: str) -> tuple[str, ...]:
    """The roles in the order they run: the likeliest to fail part (a) first, since one failure
    sends every role to the next rung.  On the first rung ``ladder.first`` leads, the rest in
    the ladder's order; on a later rung, the roles by their largest rise on the rung below
    (largest first), a role without a finished run there first.  The order changes when results
    arrive, never which runs a rung holds or how they are judged."""
    from posenc.verdicts.trained import end_rise

    ladder.check(candidate)
    rung = ladder.candidates.index(candidate)
    if rung == 0:
        return (ladder.first,) + tuple(r for r in ladder.roles if r != ladder.first)
    worst: dict[str, float] = {}
    for res in results(ladder, out, ladder.candidates[rung - 1]):
        rise = end_rise(res.metrics)
        worst[res.role] = max(worst.get(res.role, -1e9), 1e9 if rise is None else rise)
    return tuple(sorted(ladder.roles, key=lambda r: -worst.get(r, 1e9)))


def run(ladder: Ladder, out: Path, candidate: str, workers: int) -> None:
    """Every run of the candidate, role by role in :func:`run_order` (a sweep of one role's seeds
    at a time into the one store; a stopped run resumes from its checkpoint)."""
    from posenc.empirical.pipeline.store import RunStore
    from posenc.reproduction import run_plan

    ladder.check(candidate)
    store = RunStore(ladder.store_of(out, candidate))
    by_role = {r: p for p in ladder.plans(candidate) for r in _roles_of(p)}
    for role in run_order(ladder, out, candidate):
        run_plan(_one_role(by_role[role], role), store, workers=workers, threads=1, bar=False)


def table(ladder: Ladder, out: Path, candidate: str,
          found: list[Any] | None = None) -> str:
    """The criterion's parts (``ladder.parts``) on the finished runs (``found``: the store's),
    then a row per run: the scan's columns and the rise the criterion reads."""
    from posenc.verdicts.trained import FIXED_BUDGET_SPAN, end_rise, trained_criterion

    found = results(ladder, out, candidate) if found is None else found
    planned = sum(len(p.jobs()) for p in ladder.plans(candidate))
    lines = [f"Candidate `{candidate}`: {len(found)} of {planned} runs finished "
             f"(seeds {ladder.first_seed}-{ladder.first_seed + SEEDS - 1}).", "",
             "| part | rule | measured | met |", "|---|---|---|---|"]
    for c in trained_criterion(found):
        if c.name not in ladder.parts:
            continue
        met = "not yet" if len(found) < planned else {True: "yes", False: "no", None: "-"}[c.met]
        lines.append(f"| {c.name} | {c.rule} | {c.measured} | {met} |")
    lines += ["", f"| role | seed | test acc % | best val acc % (epoch / of) | val rise, last "
              f"{FIXED_BUDGET_SPAN} epochs | single-head layers (zero / mean) | CPU s |",
              "|" + "---|" * 7]
    order = {r: i for i, r in enumerate(ladder.roles)}
    for res in sorted(found, key=lambda r: (order[r.role], r.seed)):
        r = scan.run_row(res)
        rise = end_rise(res.metrics)
        lines.append(f"| {res.role} | {res.seed} | {r['acc']:.1f} | {r['best_val']:.1f} "
                     f"({r['best_epoch']} / {r['epochs']}) | "
                     + ("?" if rise is None else f"{rise:+.2f}")
                     + f" | {scan.single_cell(r)} | {scan.cpu_cell(r)} |")
    return "\n".join(lines) + "\n"


def main(ladder: Ladder, doc: str, argv: list[str] | None = None) -> int:
    """A calibration script's command line: ``run OUT`` or ``table OUT`` of ``--candidate``."""
    ap = argparse.ArgumentParser(description=doc.split("\n", 1)[0])
    ap.add_argument("what", choices=("run", "table"))
    ap.add_argument("out", type=Path)
    ap.add_argument("--candidate", default=ladder.candidates[0], choices=ladder.candidates)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    if args.what == "run":
        run(ladder, args.out, args.candidate, args.workers)
    else:
        sys.stdout.write(table(ladder, args.out, args.candidate))
    return 0
