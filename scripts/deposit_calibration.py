"""Calibration of a deposit preset: a scan regime that can judge the deposit, on seeds 1000+.

The deposit scan (``scripts/deposit_scan.py``, docs/deposit-scan.md) names the regimes where RoPE
shows the paper's single-head pattern by the rule set before its second seeds ran.  A preset for
the deposit claims (E12, AD, NC2, E13, E14) needs every role those claims read -- and the rest of
``paper-small``'s nine distance roles, so that its report stands beside ``paper-small``'s --
trained at one budget on the calibration seeds the report never runs.  This script runs them:
the regime's own model overrides, ``paper-small``'s task, models (paper-code mode), optimiser and
budget (MLA at its own budget, the code's ratios), every head ablated in zero and mean mode on
500 test examples, MLA's latent columns besides (the paper code's own ablation), into the scan's
store of that regime -- the scan's four roles there are the same runs (the same configs: a test
holds it), so they are not run again.

**The criterion, fixed before these runs:** posenc's trained criterion
(:func:`posenc.verdicts.trained.trained_criterion`, fixed before paper-small's MLA calibration),
every part met on seeds 1000-1001 of every role:

(a) plateau -- no run of a PE that learned the task still learning at its end (at a fixed budget:
    validation accuracy up less than 2 points over its last 2 epochs) or stopped before learning;
(b) the best PE's mean test accuracy at least 90%;
(b') no PE's mean within 2 points of the task's Bayes ceiling (about 97.5%, as the runs record it).

**The ladder, fixed with it:** the candidates are tried in :data:`LADDER` order and the first that
meets the criterion is frozen as a preset named for it (``paper-small`` with the regime's
attention shape); the next rung doubles the epochs of every role (the cosine schedule changes with
it, so every role is run again there).  The deposit pattern is shown beside and is not part of
the criterion.

    python scripts/deposit_calibration.py run OUT [--candidate h4x16-w64] [--workers 2]
    python scripts/deposit_calibration.py table OUT [--candidate h4x16-w64]   # markdown
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deposit_scan as scan  # noqa: E402

#: paper-small's nine distance roles (posenc.roles), the scan's four first
ROLES = scan.ROLES + ("nope", "alibi", "rope-1head", "rope-2heads", "mla")
#: candidate -> (scan regime, overrides of every role beyond the regime's, MLA's on top of those)
CANDIDATES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    # paper-small's budget: 15 epochs of batch 16, MLA 23 of batch 32
    "h4x16-w64": ("h4x16-w64", {}, {}),
    # every role at twice the epochs: 30 of batch 16, every epoch run; MLA at the code's ratios
    # to those (1.5x the epochs at twice the batch: 45 of batch 32), as paper-small's 23 are to 15
    "h4x16-w64-e30": ("h4x16-w64", {"epochs": 30, "patience": 30},
                      {"epochs": 45, "batch_size": 32, "patience": 45}),
}
LADDER = tuple(CANDIDATES)
SEEDS = 2


def plans(candidate: str, seeds: int = SEEDS) -> list[Any]:
    """The candidate's plans: every role but MLA, and MLA (its own budget, its latent ablation)."""
    from dataclasses import replace

    from posenc.empirical.analysis.latent_ablation import MODE as LATENT

    if candidate not in CANDIDATES:
        raise SystemExit(f"unknown candidate {candidate!r}; known: {', '.join(CANDIDATES)}")
    regime, extra, mla = CANDIDATES[candidate]
    base = scan.plan(regime, seeds)
    over = {**base.overrides, **extra}
    others = replace(base, distance_roles=tuple(r for r in ROLES if r != "mla"), overrides=over)
    return [others, replace(base, distance_roles=("mla",), overrides={**over, **mla},
                            ablation_modes=scan.MODES + (LATENT,))]


def store_of(out: Path, candidate: str) -> Path:
    """Where a candidate's runs live: the scan's store of its regime at the scan's budget, a
    folder of its own at any other."""
    regime, extra, mla = CANDIDATES[candidate]
    return out / regime if not (extra or mla) else out / candidate


def run_order(out: Path, candidate: str) -> tuple[str, ...]:
    """The roles in the order they run: the likeliest to fail part (a) first, since one failure
    sends every role to the next rung.  On the ladder's first rung MLA leads (at `paper-small` its
    rises, 1.5 and 1.4 points over its last 2 epochs, were the largest), the rest in ROLES'
    order; on a later rung, the roles by their largest rise on the rung below (largest first),
    a role without a finished run there first.  The order changes when results arrive, never
    which runs a rung holds or how they are judged."""
    from posenc.verdicts.trained import end_rise

    rung = LADDER.index(candidate)
    if rung == 0:
        return ("mla",) + tuple(r for r in ROLES if r != "mla")
    worst: dict[str, float] = {}
    for res in results(out, LADDER[rung - 1]):
        rise = end_rise(res.metrics)
        worst[res.role] = max(worst.get(res.role, -1e9), 1e9 if rise is None else rise)
    return tuple(sorted(ROLES, key=lambda r: -worst.get(r, 1e9)))


def run(out: Path, candidate: str, workers: int) -> None:
    """Every run of the candidate, role by role in :func:`run_order` (a sweep of one role's
    seeds at a time into the one store; a stopped run resumes from its checkpoint)."""
    from dataclasses import replace

    from posenc.empirical.pipeline.store import RunStore
    from posenc.reproduction import run_plan

    store = RunStore(store_of(out, candidate))
    by_role = {r: p for p in plans(candidate) for r in p.distance_roles}
    for role in run_order(out, candidate):
        run_plan(replace(by_role[role], distance_roles=(role,)), store, workers=workers,
                 threads=1, bar=False)


def results(out: Path, candidate: str) -> list[Any]:
    """The candidate's finished runs, each checked against the config it was run for."""
    root = store_of(out, candidate)
    return [res for p in plans(candidate) for res in scan._finished(root, p)]


def table(out: Path, candidate: str) -> str:
    """The criterion's parts on the finished runs, then a row per run (the scan's columns and the
    rise the criterion reads)."""
    from posenc.verdicts.trained import FIXED_BUDGET_SPAN, end_rise, trained_criterion

    found = results(out, candidate)
    planned = sum(len(p.jobs()) for p in plans(candidate))
    lines = [f"Candidate `{candidate}`: {len(found)} of {planned} runs finished "
             f"(seeds {scan.FIRST_SEED}-{scan.FIRST_SEED + SEEDS - 1}).", "",
             "| part | rule | measured | met |", "|---|---|---|---|"]
    for c in trained_criterion(found):
        if c.name.startswith("(c)"):
            continue  # the count task: not run
        met = "not yet" if len(found) < planned else {True: "yes", False: "no", None: "-"}[c.met]
        lines.append(f"| {c.name} | {c.rule} | {c.measured} | {met} |")
    lines += ["", f"| role | seed | test acc % | best val acc % (epoch / of) | val rise, last "
              f"{FIXED_BUDGET_SPAN} epochs | single-head layers (zero / mean) | CPU s |",
              "|" + "---|" * 7]
    order = {r: i for i, r in enumerate(ROLES)}
    for res in sorted(found, key=lambda r: (order[r.role], r.seed)):
        r = scan.run_row(res)
        rise = end_rise(res.metrics)
        single, cpu = scan.single_cell(r), scan.cpu_cell(r)
        lines.append(f"| {res.role} | {res.seed} | {r['acc']:.1f} | {r['best_val']:.1f} "
                     f"({r['best_epoch']} / {r['epochs']}) | "
                     + ("?" if rise is None else f"{rise:+.2f}") + f" | {single} | {cpu} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("what", choices=("run", "table"))
    ap.add_argument("out", type=Path)
    ap.add_argument("--candidate", default=LADDER[0], choices=LADDER)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    if args.what == "run":
        run(args.out, args.candidate, args.workers)
    else:
        sys.stdout.write(table(args.out, args.candidate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
