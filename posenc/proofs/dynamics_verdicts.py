"""Verdicts for the training-dynamics claims of Gu et al. (arXiv 2505.13027, Prop. 6.1 / 6.2, Thm. 6.1).

Input: results of :func:`posenc.empirical.dynamics_summary.dynamics_worker` -- one per (role,
seed) on the ``distance`` task, each with ``summary`` (task, pe, seed, tags.role) and ``dynamics``
(the run's :func:`~posenc.empirical.dynamics_summary.summarize`).  Other results are ignored.
Per seed s a statistic ``d_s``, its Student-t interval over seeds and a verdict
(:mod:`posenc.proofs.verdicts`).  The statistics (fixed before any run was measured):

* **Prop. 6.1** (RoPE has a consistent positional seed): ``d_s = C(rope) - C(alibi)`` > 0, where
  C is the *coherence* of the early window (default: the first 10% of training), i.e. the
  maximum over layers and heads of the mean over early records of |seed| / mean |psi| (1: every
  example pushes the head's positional gain the same way; ~0.07 for 128 random signs).
* **Prop. 6.2** (ALiBi's per-example signals cancel): ``d_s = C(alibi)`` < 0.5 -- in every head
  more than half of the per-example signal cancels in the batch mean.
* **Thm. 6.1** (margins grow from deep to shallow under RoPE): (a) the mean over adjacent layers
  of log(M_k / M_{k+1}) (layer 0 shallowest) of the final importance margin (loss increase of
  the top head minus the runner-up) > 0, and (b) the same for the early |seed| margin > 0.

:func:`prediction_table` adds what is not a paper claim but a reviewer's question: how often the
first N steps name the final deposit head (per predictor, exact and within the deposit layer).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable, Optional

from .verdicts import Verdict, judge, verdict_from_parts

TASK = "distance"
PREDICTORS = ("signal", "attribution", "importance")


def _role(summary: dict[str, Any]) -> str:
    role = (summary.get("tags") or {}).get("role")
    if role:
        return str(role)
    from ..encodings import parse_spec
    return parse_spec(summary["pe"]).family


class DynamicsRuns:
    """Dynamics results indexed by role -> {seed: dynamics summary} (distance task only)."""

    def __init__(self, results: Iterable[dict[str, Any]]) -> None:
        self.by: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
        for res in results:
            s = res.get("summary") or {}
            if "dynamics" not in res or s.get("task") != TASK:
                continue
            self.by[_role(s)][int(s["seed"])] = res["dynamics"]

    def seeds(self, *roles: str) -> list[int]:
        sets = [set(self.by.get(r, {})) for r in roles]
        return sorted(set.intersection(*sets)) if sets else []


def _part(name: str, runs: DynamicsRuns, roles: tuple[str, ...],
          stat: Callable[[int], Optional[float]], threshold: float, predicted: str,
          bounds: Optional[tuple[float, float]] = None) -> dict:
    seeds = runs.seeds(*roles)
    values = [(s, stat(s)) for s in seeds]
    missing = [s for s, v in values if v is None]
    values = [(s, v) for s, v in values if v is not None]
    if not values:
        why = (f"no dynamics runs for {', '.join(r for r in roles if not runs.by.get(r)) or 'a common seed'}"
               if not seeds else "the statistic is undefined on every seed (no signal or a zero margin)")
        return {"part": name, "verdict": "inconclusive", "n": 0, "estimate": None,
                "interval": None, "note": why, "task": TASK, "roles": list(roles)}
    out = {"part": name, **judge([v for _, v in values], threshold, predicted, bounds=bounds),
           "seeds": [s for s, _ in values], "task": TASK, "roles": list(roles)}
    if missing:
        out["note"] = f"undefined on seed(s) {missing}"
    return out


def _verdict(claim: str, statement: str, statistic: str, paper: str, parts: list[dict]) -> Verdict:
    return verdict_from_parts(claim, statement, statistic, paper, parts, digits=3)


def evaluate_dynamics(results: Iterable[dict[str, Any]], rope: str = "rope",
                      additive: str = "alibi") -> list[Verdict]:
    """Verdicts for Prop. 6.1, Prop. 6.2 and Thm. 6.1 (see the module doc)."""
    runs = DynamicsRuns(results)

    def get(role: str, key: str) -> Callable[[int], Optional[float]]:
        return lambda s: runs.by[role][s].get(key)

    coh = get(rope, "coherence_max")
    coh_add = get(additive, "coherence_max")
    out = [
        _verdict("Prop 6.1", "Under RoPE some head gets a consistent positional gradient signal "
                             "(seed) from the start, more consistent than under ALiBi",
                 f"C({rope}) - C({additive}), C = max over heads of the early-window mean "
                 "coherence |seed| / mean |psi|; distance", "non-vanishing seed under RoPE",
                 [_part("coherence: rope - alibi", runs, (rope, additive),
                        lambda s: None if coh(s) is None or coh_add(s) is None
                        else coh(s) - coh_add(s), 0.0, "above", bounds=(-1.0, 1.0))]),
        _verdict("Prop 6.2", "Under ALiBi the per-example positional gradient signals cancel "
                             "over a batch",
                 f"C({additive}) < 0.5 (more than half of the per-example signal cancels in "
                 "every head); distance", "no stable seed under an additive bias",
                 [_part("coherence alibi", runs, (additive,), coh_add, 0.5, "below",
                        bounds=(0.0, 1.0))]),
        _verdict("Thm 6.1", "Under RoPE the margin between the top head and the runner-up grows "
                            "from deep to shallow layers",
                 "mean over adjacent layers of log(M_k / M_{k+1}), layer 0 shallowest: "
                 "(a) final importance margin, (b) early |seed| margin; distance",
                 "Margin_l >= Margin_L prod gamma_k, gamma_k > 1",
                 [_part("importance margin log-gain", runs, (rope,),
                        get(rope, "importance_mean_log_gain"), 0.0, "above"),
                  _part("early |seed| margin log-gain", runs, (rope,),
                        get(rope, "signal_mean_log_gain"), 0.0, "above")]),
    ]
    return out


def prediction_table(results: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """role -> {seeds, early_steps, per predictor: exact hits / head hits / chance, advantage
    steps as fractions of training}."""
    runs = DynamicsRuns(results)
    table = {}
    for role, by_seed in sorted(runs.by.items()):
        seeds = sorted(by_seed)
        row: dict[str, Any] = {"seeds": seeds,
                               "early_steps": [by_seed[s]["early_steps"] for s in seeds],
                               "deposit": [by_seed[s]["deposit"] for s in seeds]}
        for p in PREDICTORS:
            preds = [by_seed[s]["prediction"][p] for s in seeds]
            defined = [x for x in preds if x["hit"] is not None]
            row[p] = {"hits": sum(1 for x in defined if x["hit"]),
                      "head_hits": sum(1 for x in defined if x["head_hit"]), "n": len(defined)}
        s0 = by_seed[seeds[0]]
        row["chance"] = s0["chance"]
        row["advantage"] = [None if by_seed[s]["advantage_step"] is None else
                            by_seed[s]["advantage_step"] / by_seed[s]["total_steps"] for s in seeds]
        table[role] = row
    return table
