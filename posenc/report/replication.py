"""The report's replication section: each claim's verdict on the first seed set beside its verdict
on a second, disjoint one (``posenc reproduce --replicate``); a claim counts as decided only
where the two agree.

The second set's runs live in their own results store (``OUT-replicate``), with their own full
report; this section only sets the two verdict lists side by side.
"""

from __future__ import annotations

from typing import Any, Sequence

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
             f"| claim | seeds {span(first_seeds)}: measured | verdict | "
             f"seeds {span(second_seeds)}: measured | verdict | replicated |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['claim']} | {r['first_measured']} | {r['first']} | "
                     f"{r['second_measured']} | {r['second']} | **{r['replicated']}** |")
    return lines
