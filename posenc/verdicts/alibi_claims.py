"""ALiBi's accuracy claims of Gu et al. (arXiv 2505.13027): AL1 "ALiBi fails on the distance
task" and AL2 "ALiBi performs worst on the count task", judged on the runs of a reproduction
sweep (:class:`~.accuracy_runs.Runs`; a per-seed statistic, its Student-t interval over seeds).

AL1  "Fails" read two ways, each its own claim.  "AL1 (learns nothing)": the report's own "did
     not learn" (:meth:`~.accuracy_runs.Runs.learned`), ``acc(alibi) - (floor + LEARNED_MARGIN)``
     < 0 per seed (the run's own floor, :meth:`~.accuracy_runs.Runs.run_floor`: chance, or on
     the distance task what the length alone gives); its null, the claim's negation, is that
     ALiBi learned the task.  "AL1 (worst)": ALiBi is the worst PE that carries position,
     **primary** the ordering ``acc(alibi) - min over`` absolute, relative, RoPE and MLA < 0
     (below each of them on a seed exactly when below their minimum); shown, not judged: each
     contrast ``acc(alibi) - acc(PE)`` with its own interval.  With runs of the extra role
     ``alibi-exp0`` (the paper code's slopes exp(-h/H), ``--roles ...,alibi-exp0``) the rows
     "AL1 (exp0 slopes, ...)" judge that ALiBi the same two ways.
AL2  An ordering of accuracies: ``acc(alibi) - min over the other count PEs`` < 0 (ALiBi below
     every one of them), under the ceiling rule (:func:`~.accuracy_runs.ordering_at_ceiling`
     against the worst of the others: when ALiBi and the worst other PE both average within
     2 points of the task's Bayes ceiling -- >= 98% on the clean count task -- no PE can be
     shown worst, and the verdict is ``ceiling``).
"""

from __future__ import annotations

from typing import Optional

from ..roles import default_roles
from .accuracy_runs import LEARNED_MARGIN, Runs, judged_part as _part
from .verdict import Verdict, reading_claim, verdict_from_parts

D, C = "distance", "count"
#: AL1 (worst): the PEs that carry position, against which it sets ALiBi
POSITIONAL = ("absolute", "relative", "rope", "mla")
#: AL1's ALiBi roles (claim, role, name): Press's slopes (the default sweep) and the paper code's
#: (an extra role)
AL1_ROLES = (("AL1", "alibi", "ALiBi"),
             ("AL1 (exp0 slopes)", "alibi-exp0", "ALiBi with the paper code's slopes exp(-h/H)"))
NO_FLOOR = "no floor recorded (runs trained before the chance and length-only rates were)"


def _below(runs: Runs, task: str, role: str, others: tuple[str, ...]):
    def stat(s: int) -> float:
        return runs.acc(task, role, s) - min(runs.acc(task, r, s) for r in others)
    return stat


def _above_floor(runs: Runs, task: str, role: str):
    def stat(s: int) -> Optional[float]:
        floor = runs.run_floor(task, role, s)
        return None if floor is None else runs.acc(task, role, s) - floor - LEARNED_MARGIN
    return stat


def _al1(runs: Runs, claim: str, role: str, pe: str) -> list[Verdict]:
    """AL1's two readings of "fails" for one ALiBi role: it learns nothing; it is the worst."""
    order = f"acc: {role} - min({', '.join(POSITIONAL)})"
    learns = verdict_from_parts(
        reading_claim(claim, "learns nothing"),
        f"{pe} fails on the distance task, read as: it does not learn it (mean accuracy within "
        f"{LEARNED_MARGIN:g} points of its floor)",
        f"acc({role}) - (its floor + {LEARNED_MARGIN:g}) < 0, per seed (floor: chance, or the "
        "length-only rate); distance, points",
        "ALiBi fails on the distance task",
        [_part(f"acc: {role} - (floor + {LEARNED_MARGIN:g})", runs, D, (role,),
               _above_floor(runs, D, role), 0.0, "below", missing_note=NO_FLOOR)], digits=1)
    each = [_part(f"acc: {role} - {other}", runs, D, (role, other),
                  (lambda other: lambda s: runs.acc(D, role, s) - runs.acc(D, other, s))(other),
                  0.0, "below") for other in POSITIONAL]
    worst = verdict_from_parts(
        reading_claim(claim, "worst"),
        f"{pe} fails on the distance task, read as: it is the worst PE that carries position "
        f"(below each of {', '.join(POSITIONAL)}; shown, not judged: each contrast alone)",
        f"primary acc({role}) - min over {', '.join(POSITIONAL)} < 0; shown acc({role}) - "
        "acc(PE) < 0 for each of them; distance, points",
        "ALiBi fails on the distance task",
        [_part(order, runs, D, (role,) + POSITIONAL, _below(runs, D, role, POSITIONAL), 0.0,
               "below", ordering=True), *each], digits=1, primary=0)
    return [learns, worst]


def evaluate_alibi(runs: Runs) -> list[Verdict]:
    """AL1 (and AL1 (exp0 slopes) where its runs exist) and AL2."""
    out = [v for claim, role, pe in AL1_ROLES if role == "alibi" or runs.by.get((D, role))
           for v in _al1(runs, claim, role, pe)]
    others = tuple(r for r in default_roles(C) if r != "alibi")
    name = f"acc: alibi - min({', '.join(others)})"
    out.append(verdict_from_parts(
        "AL2", "ALiBi is the worst PE on the count task (an ordering: at the ceiling when ALiBi "
               f"and the worst other PE both average {runs.ceiling_rule(C, ('alibi',) + others)})",
        f"acc(alibi) - min over {', '.join(others)} (points), count",
        "ALiBi performs worst on the count task",
        [_part(name, runs, C, ("alibi",) + others, _below(runs, C, "alibi", others), 0.0,
               "below", ordering=True)], digits=1))
    return out

