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
from ..verdicts.words import verdict_word

SECTION = "## Replication on a second seed set"
DECIDED = ("confirmed", "against", "ceiling")


def agreement(first: str, second: str) -> str:
    """The two seed sets' decisions (:data:`~posenc.verdicts.verdict.VERDICTS`) side by side: the
    decision when both give the same decided one (confirmed, against, ceiling), ``not
    replicated`` when they decide differently, and ``undecided`` when either is inconclusive (or
    missing).  The intervals' agreement only: :func:`replicated` adds the exact test."""
    if first == second and first in DECIDED:
        return first
    if first in DECIDED and second in DECIDED:
        return "not replicated"
    return "undecided"


def replicated(first: Any, second: Any, names: Sequence[str] = ("the first seed set",
                                                               "the second seed set")
               ) -> tuple[Optional[str], str]:
    """(the replicated decision or None, the word the report shows) of a claim's two
    :class:`~posenc.verdicts.verdict.Verdict` s (``second`` None: missing).  Confirmed or
    against is replicated only when both seed sets' intervals decide it **and** on both the
    exact sign-flip test agrees (:func:`~posenc.verdicts.exact.exact_check`: p at most the
    interval's one-sided level); when a test does not, the word is ``undecided (sign-flip p
    ... on SEEDS)``.  A ceiling needs both sets at the ceiling (a rule, not a test).  The word
    names the regime (:func:`~posenc.verdicts.words.verdict_word`)."""
    both = agreement(first.verdict, second.verdict if second is not None else "missing")
    if both == "ceiling":
        return both, verdict_word(both, first.regime)
    if both not in ("confirmed", "against"):
        return None, both
    failed = [(name, v.exact) for name, v in zip(names, (first, second))
              if not (v.exact and v.exact["agrees"])]
    if failed:
        return None, "undecided (" + "; ".join(
            f"no exact test on {name}" if e is None else
            f"sign-flip p {e['p']:.3f} > {e['alpha']:.4g} on {name}" for name, e in failed) + ")"
    return both, verdict_word(both, first.regime)


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


def replication_rows(verdicts: Sequence[Any], replica: Sequence[Any],
                     names: Sequence[str] = ("the first seed set", "the second seed set")
                     ) -> list[dict[str, Any]]:
    """One row per claim of ``verdicts`` (in their order): both words, their decisions and exact
    tests, and the replicated word (:func:`replicated`); a claim the replica lacks reads
    ``missing`` there."""
    other = {v.claim: v for v in replica}
    rows = []
    for v in verdicts:
        r = other.get(v.claim)
        decision, word = replicated(v, r, names)
        rows.append({"claim": v.claim, "first": v.word, "first_decision": v.verdict,
                     "first_exact": v.exact, "first_measured": v.measured,
                     "second": r.word if r is not None else "missing",
                     "second_decision": r.verdict if r is not None else "missing",
                     "second_exact": r.exact if r is not None else None,
                     "second_measured": r.measured if r is not None else "-",
                     "replicated": word, "replicated_decision": decision})
    return rows


def exact_cell(exact: Optional[dict[str, Any]]) -> str:
    """A verdict's sign-flip p in a table cell: ``0.016``, ``0.031 (> 0.025)`` when it does not
    reach the level, ``-`` for an undecided verdict."""
    if not exact:
        return "-"
    return f"{exact['p']:.3f}" + ("" if exact["agrees"] else f" (> {exact['alpha']:.4g})")


def replication_markdown(rows: list[dict[str, Any]], first_seeds: list[int],
                         second_seeds: list[int], replica_store: str) -> list[str]:
    def span(seeds: list[int]) -> str:
        return f"{min(seeds)}-{max(seeds)}" if seeds else "none"
    n = sum(r["replicated_decision"] in ("confirmed", "against") for r in rows)
    lines = ["", SECTION, "",
             f"The same configurations on seeds {span(second_seeds)} (store `{replica_store}`, "
             f"its own report there) beside this report's seeds {span(first_seeds)}. A claim "
             "counts as decided only when both seed sets' intervals give the same decision and, "
             "on both, the exact sign-flip test of the mean agrees (p at most the interval's "
             f"one-sided 2.5%, Bonferroni-divided for a claim of several conditions); {n} of "
             f"{len(rows)} claims are decided (confirmed or against) on both.", "",
             *md_header(["claim", f"seeds {span(first_seeds)}: measured", "verdict",
                         "sign-flip p", f"seeds {span(second_seeds)}: measured", "verdict",
                         "sign-flip p", "replicated"])]
    for r in rows:
        lines.append(md_row([r["claim"], r["first_measured"], r["first"],
                             exact_cell(r["first_exact"]), r["second_measured"], r["second"],
                             exact_cell(r["second_exact"]), f"**{r['replicated']}**"]))
    return lines
