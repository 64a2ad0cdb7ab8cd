"""A claim that states several conditions at once, judged as one part (:func:`conjunction`).

"The deposit head's drop is large *and* every other head's is small" (AD), "RoPE concentrates
more than *each* additive PE" (E12): the claim's negation is that *some* condition fails, so the
part's null is that negation -- an intersection-union test for a confirmation, Bonferroni over
the conditions for a refutation (the doc of :func:`conjunction`).  Its text (measured,
agreement, resolution) is rendered by :mod:`.verdict` from the part's ``conditions``.
"""

from __future__ import annotations

from typing import Any, Sequence

from .verdict import combine, decide, t_interval


def conjunction(name: str, conditions: Sequence[dict[str, Any]], level: float = 0.95
                ) -> dict[str, Any]:
    """One part that states several conditions at once ("the deposit head's drop is large *and*
    every other head's is small"; "RoPE above *each* additive PE"), judged from the conditions'
    own judged parts (:func:`judge`; each a per-seed statistic, a threshold and a side):

    * ``confirmed`` when every condition is (its ``level`` interval on its predicted side).  An
      intersection-union test: when the claim is false some condition's mean lies on the other
      side of its threshold, and that condition alone confirms with probability <= (1 - level)
      / 2, so the conjunction confirms with at most that error -- no correction needed;
    * ``against`` when some condition's interval at the Bonferroni level ``1 - (1 - level) /
      K`` (K conditions) lies wholly on the other side: when the claim is true each condition
      does so with probability <= (1 - level) / (2 K), so a refutation too errs with at most
      (1 - level) / 2;
    * ``ceiling`` when every condition is confirmed or at the ceiling (:func:`combine`), else
      ``inconclusive`` (a condition without seeds, or whose interval straddles its threshold).

    The null of a confirmation is the claim's negation (some condition fails); the part shows
    the weakest condition's estimate and interval (the least margin on its predicted side, in
    its own units) and keeps every condition under ``conditions``.  ``n``: the fewest seeds of
    any condition; ``agree``: the seeds (common to every condition) on which all of them hold."""
    conds = [dict(c) for c in conditions]
    if not conds:
        raise ValueError(f"conjunction {name}: no conditions")
    strict = 1 - (1 - level) / len(conds)
    refuted = []
    for c in conds:
        if c.get("scale") == "sd":
            raise ValueError(f"conjunction {name}: condition {c['part']} is judged against its "
                             "run-to-run noise; only t-interval conditions combine")
        if c.get("n", 0) >= 2 and c.get("values"):
            c["against_at"] = decide(t_interval(c["values"], strict), c["threshold"],
                                     c["predicted"]) == "against"
            refuted.append(c["against_at"])
    words = [c["verdict"] for c in conds]
    verdict = ("against" if any(refuted) else "confirmed" if all(w == "confirmed" for w in words)
               else combine(words) if all(w in ("confirmed", "ceiling") for w in words)
               else "inconclusive")
    measured = [c for c in conds if c.get("estimate") is not None and c.get("n", 0) >= 1]

    def margin(c: dict[str, Any]) -> float:
        d = c["estimate"] - c["threshold"]
        return d if c["predicted"] == "above" else -d
    weakest = min(measured, key=margin) if measured else None
    roles = list(dict.fromkeys(r for c in conds for r in c.get("roles", [])))
    out: dict[str, Any] = {"part": name, "verdict": verdict, "conditions": conds,
                           "n": min(c.get("n", 0) for c in conds), "task": conds[0].get("task"),
                           "roles": roles, "level": level, "against_level": strict}
    if weakest is None:
        return {**out, "estimate": None, "interval": None,
                "note": "; ".join(dict.fromkeys(c.get("note", "no seeds") for c in conds))}
    notes = list(dict.fromkeys(c["note"] for c in conds if c.get("note")))
    if verdict == "against":
        notes.append("against by " + ", ".join(c["part"] for c in conds if c.get("against_at"))
                     + f": its {100 * strict:.4g}% interval lies wholly on the other side")
    if notes:
        out["note"] = "; ".join(notes)
    common = sorted(set.intersection(*(set(c.get("seeds", [])) for c in conds)))
    holds = [all(_on_side(c, s) for c in conds) for s in common]
    return {**out, "estimate": weakest["estimate"], "interval": weakest["interval"],
            "threshold": weakest["threshold"], "predicted": weakest["predicted"],
            "values": weakest["values"], "seeds": common or weakest.get("seeds", []),
            "agree": sum(holds) if common else None, "agree_of": len(common),
            "resolution": weakest.get("resolution"), "weakest": weakest["part"],
            **({"configs": [list(x) for x in sorted({tuple(x) for c in conds
                                                     for x in c.get("configs", [])})]}
               if any(c.get("configs") for c in conds) else {})}


def _on_side(part: dict[str, Any], seed: int) -> bool:
    """Whether ``part``'s value on ``seed`` lies on its predicted side of its threshold."""
    v = part["values"][part["seeds"].index(seed)]
    return v > part["threshold"] if part["predicted"] == "above" else v < part["threshold"]
