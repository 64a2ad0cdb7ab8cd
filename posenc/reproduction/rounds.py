"""``posenc reproduce --until-decided``: more seeds, a batch at a time, only where a claim is undecided.

Round k runs the plan's jobs (finished runs are skipped: the store is content-addressed),
judges every empirical claim on the results of exactly those jobs, and for each judged (primary)
part that is still ``inconclusive`` -- and measured on at least one seed of runs the plan has -- raises
the seeds of the part's configurations (its task and roles, or its ``configs`` when it
spans tasks) to its common seed count plus ``batch``, at most ``max_seeds``.  It stops when no
undecided part has room to grow.  ``confirmed``, ``refuted``
and ``ceiling`` are decided: more seeds are not what a ceiling needs.

Each round's decision is a function of the results of that round's runs, which are deterministic
for a seed; so a sweep killed at any point and started again replays the finished rounds
(skipping their runs, not redoing them) and continues where it stopped.

**Optional stopping.**  Each round is a look at the verdicts, each a 95% test, and seeds are
added until an interval excludes its threshold: no bound adjusts the tests for the looks, so a
claim's error under its null is not the nominal 2.5% per side but up to K times it after K looks
(the union bound over the looks).  This is a warning, not error control: the sweep prints
it (:func:`~posenc.verdicts.looks.optional_stopping_text`), records its looks in the store
(:data:`~posenc.verdicts.looks.RECORD`, written
after each look, so a report rebuilt later from the store alone carries the same line) and the
report writes it under its verdict table.  ``--replicate`` on fresh seeds is the check.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ..coerce import is_int
from ..errors import PosencError
from ..limits import MAX_SEEDS, check_int

Counts = dict[tuple[str, str], int]


def check_round_sizes(max_seeds: Any, batch: Any) -> None:
    """``--max-seeds`` and ``--seed-batch`` are positive integers, the first within the limit."""
    for flag, n in (("--max-seeds", max_seeds), ("--seed-batch", batch)):
        if not is_int(n) or n < 1:
            raise PosencError(f"{flag} must be a positive integer; got {n!r}")
    check_int("--max-seeds", max_seeds, MAX_SEEDS, why="seeds per configuration")


def check_limits(counts: Counts, max_seeds: Any, batch: Any) -> None:
    """:func:`check_round_sizes`, and ``max_seeds`` no fewer than the seeds a sweep starts with."""
    check_round_sizes(max_seeds, batch)
    start = max(counts.values(), default=0)
    if max_seeds < start:
        raise PosencError(f"--max-seeds {max_seeds} is below the {start} seeds the sweep "
                          f"starts with")


def grow(verdicts: Sequence[Any], counts: Counts, batch: int, max_seeds: int) -> Counts:
    """The seed counts of the next round: see the module doc."""
    new = dict(counts)
    for v in verdicts:
        for part in v.parts:
            keys = _growable(part, counts, max_seeds)
            if keys:
                have = min(counts[k] for k in keys)
                for k in keys:
                    new[k] = max(new[k], min(max_seeds, have + batch))
    return new


def _growable(part: dict[str, Any], counts: Counts, max_seeds: int) -> list[tuple[str, str]]:
    """The configurations whose seeds a part asks for (none: decided, shown and not judged,
    nothing measured, a PE the plan does not run, or at the limit)."""
    if part["verdict"] != "inconclusive" or "task" not in part or not part["n"]:
        return []
    keys = ([tuple(c) for c in part["configs"]] if part.get("configs")
            else [(part["task"], role) for role in part["roles"]])
    if not all(k in counts for k in keys) or min(counts[k] for k in keys) >= max_seeds:
        return []
    return keys


def grown_claims(verdicts: Sequence[Any], counts: Counts, max_seeds: int) -> list[str]:
    """The claims a round gives more seeds: those with an undecided part that can grow."""
    return [v.claim for v in verdicts
            if any(_growable(part, counts, max_seeds) for part in v.parts)]


def until_decided(counts: Counts, run_round: Callable[[Counts], list[dict[str, Any]]],
                  judge: Callable[[list[dict[str, Any]]], list[Any]], batch: int,
                  max_seeds: int, log: Callable[[str], None] = print,
                  on_look: Optional[Callable[[list[dict[str, Any]]], None]] = None) -> Counts:
    """Run rounds until every claim is decided or out of seeds; returns the final counts.

    ``run_round(counts)`` runs (or skips) the jobs of those seed counts and returns their
    results; ``judge(results)`` gives the verdicts.  ``on_look(looks)``: called after each
    round's judgement with every look so far (``look``: its number, ``seeds``: the most seeds of
    any configuration, ``undecided``: the claims inconclusive at it, ``seeds_added_for``: those
    of them given more seeds)."""
    check_limits(counts, max_seeds, batch)
    looks: list[dict[str, Any]] = []
    for round_no in range(1, max_seeds + 2):  # each round but the last adds >= 1 seed somewhere
        verdicts = judge(run_round(counts))
        new = grow(verdicts, counts, batch, max_seeds)
        open_claims = [v.claim for v in verdicts if v.verdict == "inconclusive"]
        looks.append({"look": round_no, "seeds": max(counts.values(), default=0),
                      "undecided": open_claims,
                      "seeds_added_for": grown_claims(verdicts, counts, max_seeds)})
        if on_look is not None:
            on_look(looks)
        if new == counts:
            log(f"round {round_no}: " + (f"still undecided at the limit: {', '.join(open_claims)}"
                                         if open_claims else "every claim decided"))
            return counts
        raised = ", ".join(f"{t}/{r} {counts[(t, r)]}->{n}" for (t, r), n in sorted(new.items())
                           if n != counts[(t, r)])
        log(f"round {round_no}: undecided {', '.join(open_claims)}; seeds {raised}")
        counts = new
    raise AssertionError("unreachable: the seed counts are bounded by max_seeds")
