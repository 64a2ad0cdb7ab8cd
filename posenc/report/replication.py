"""The report's replication section: each claim's verdict on the first seed set beside its verdict
on a second, disjoint one (``posenc reproduce --replicate``); a claim counts as decided only
where the two agree.

The second set's runs live in their own results store (``OUT-replicate``), with their own full
report carrying the same section (pointing back); this section only sets the two verdict lists
side by side, after :func:`check_same_plan` has made sure both stores hold the same
configurations -- the check ``posenc reproduce --replicate`` runs before training and ``posenc
report --replica`` before building.  The replica store is named by its path relative to the
report's store: a report holds no machine path.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Optional, Sequence

from ..errors import PosencError
from .table import md_header, md_row

SECTION = "## Replication on a second seed set"
DECIDED = ("confirmed", "refuted", "ceiling")


def agreement(first: str, second: str) -> str:
    """The replicated verdict of a claim: its word when both seed sets give the same decided word
    (confirmed, refuted, ceiling), ``not replicated`` when they decide differently, and
    ``undecided`` when either is inconclusive (or missing)."""
    if first == second and first in DECIDED:
        return first
    if first in DECIDED and second in DECIDED:
        return "not replicated"
    return "undecided"


def _seedless(config: dict[str, Any]) -> dict[str, Any]:
    """A run's config without its seed (``train.seed``): what a replication keeps the same."""
    train = dict(config.get("train") or {})
    train.pop("seed", None)
    return {**config, "train": train}


def _fields(value: Any, prefix: str = "") -> dict[str, Any]:
    """A config flattened to dotted field names (``train.task.name``) and their values."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_fields(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _plan(configs: Iterable[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, str]]]:
    """(task, role) -> the distinct seedless configs of those runs, each as its flattened fields
    (values as canonical JSON, so that lists and numbers compare exactly)."""
    out: dict[tuple[str, str], list[dict[str, str]]] = {}
    for config in configs:
        fields = {k: json.dumps(v, sort_keys=True) for k, v in _fields(_seedless(config)).items()}
        key = (str((config.get("train") or {}).get("task", {}).get("name")),
               str((config.get("tags") or {}).get("role")))
        if fields not in out.setdefault(key, []):
            out[key].append(fields)
    return out


def plan_difference(first: Iterable[dict[str, Any]], second: Iterable[dict[str, Any]]) -> Optional[str]:
    """How the runs of a second seed set (``second``: their configs) differ from the first's, in
    words naming the second -- preset, model code, tasks, roles, or the first config field that
    differs in a (task, role) -- or None when both are the same configurations on (perhaps
    other) seeds.  Every config field but ``train.seed`` counts."""
    a, b = _plan(first), _plan(second)

    def values(plan: dict[tuple[str, str], list[dict[str, str]]], field: str) -> list[str]:
        return sorted({c.get(field, "null") for cs in plan.values() for c in cs})

    presets = [" and ".join(values(p, "train.preset")) for p in (a, b)]
    if presets[0] != presets[1]:
        return f"is of preset {presets[1]}, not {presets[0]}"
    modes = [sorted({"paper-code" if v == '"paper"' else "standard"
                     for v in values(p, "train.model.code")}) for p in (a, b)]
    if modes[0] != modes[1]:
        return f"holds {' and '.join(modes[1])} runs, not {' and '.join(modes[0])}"
    ours, theirs = sorted({k[0] for k in a}), sorted({k[0] for k in b})
    if ours != theirs:
        return f"holds the tasks {', '.join(theirs)}, not {', '.join(ours)}"
    if set(a) != set(b):
        def roles(plan: dict[tuple[str, str], Any]) -> str:
            return "; ".join(f"{', '.join(sorted(r for t, r in plan if t == task))} on {task}"
                             for task in ours)
        return f"holds the roles {roles(b)}, not {roles(a)}"
    for key in a:
        for config in b[key]:
            if config in a[key]:
                continue
            other = a[key][0]
            field = next(f for f in sorted(set(config) | set(other))
                         if config.get(f) != other.get(f))
            return (f"differs in {field} of its {key[0]}/{key[1]} runs: "
                    f"{config.get(field, '(absent)')}, not {other.get(field, '(absent)')}")
        if len(b[key]) < len(a[key]):  # the first holds a configuration the second lacks
            missing = next(c for c in a[key] if c not in b[key])
            field = next(f for f in sorted(set(missing) | set(b[key][0]))
                         if missing.get(f) != b[key][0].get(f))
            return (f"lacks the {key[0]}/{key[1]} runs with {field} "
                    f"{missing.get(field, '(absent)')}")
    return None


def check_same_plan(first: Iterable[dict[str, Any]], second: Iterable[dict[str, Any]],
                    second_name: str) -> None:
    """Refuse, in one line, a second seed set whose runs are not the first's configurations
    (:func:`plan_difference`): a replication runs the same plan on other seeds."""
    why = plan_difference(first, second)
    if why is not None:
        raise PosencError(f"the replication store {second_name} {why}: a replication runs the "
                          "same plan (every config field but the seed) on other seeds")


def replication_rows(verdicts: Sequence[Any], replica: Sequence[Any]) -> list[dict[str, Any]]:
    """One row per claim of ``verdicts`` (in their order): both verdicts and their agreement; a
    claim the replica lacks reads ``missing`` there."""
    other = {v.claim: v for v in replica}
    rows = []
    for v in verdicts:
        r = other.get(v.claim)
        second = r.verdict if r is not None else "missing"
        rows.append({"claim": v.claim, "first": v.verdict, "first_measured": v.measured,
                     "second": second, "second_measured": r.measured if r is not None else "-",
                     "replicated": agreement(v.verdict, second)})
    return rows


def replication_markdown(rows: list[dict[str, Any]], first_seeds: list[int],
                         second_seeds: list[int], replica_store: str) -> list[str]:
    def span(seeds: list[int]) -> str:
        return f"{min(seeds)}-{max(seeds)}" if seeds else "none"
    n = sum(r["replicated"] in ("confirmed", "refuted") for r in rows)
    lines = ["", SECTION, "",
             f"The same configurations on seeds {span(second_seeds)} (store `{replica_store}`, "
             f"its own report there) beside this report's seeds {span(first_seeds)}. A claim "
             "counts as decided only when both seed sets give the same decided verdict; "
             f"{n} of {len(rows)} claims are decided (confirmed or refuted) on both.", "",
             *md_header(["claim", f"seeds {span(first_seeds)}: measured", "verdict",
                         f"seeds {span(second_seeds)}: measured", "verdict", "replicated"])]
    for r in rows:
        lines.append(md_row([r["claim"], r["first_measured"], r["first"], r["second_measured"],
                             r["second"], f"**{r['replicated']}**"]))
    return lines
