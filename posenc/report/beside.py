"""The report's "beside" section: each claim's verdict in this report beside its verdict in
another report, and whether the two differ.  The other report is either

* of the same preset run with the other model code (paper-code vs standard, ``posenc report
  STORE --beside OTHER/report.json``): section "Beside the other model code"; or
* of another preset (of either model code): section "Beside another preset" -- e.g. the
  paper-small preset (the paper code's models on the paper's sampler) beside the quick preset
  (the standard models on the easy task), so each claim shows what the regime changes.

The other report is read from its ``report.json`` (a finished report is what a user keeps; its run
folders may be gone), and every load checks that it is what the comparison needs: a report of
a single model code, not of this report's own preset and model code (that is a replication's
job, ``--replica``), of a format this posenc reads, with verdicts.  Nothing is judged here: the
section only sets the two verdict lists side by side and names the seeds each rests on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..coerce import shown
from ..errors import PosencError
from .report_json import read_report_json, verdict_decision
from .table import md_code, md_text, md_text_row
from ..verdicts.words import verdict_word

SECTION = "## Beside the other model code"
SECTION_PRESET = "## Beside another preset"
MODES = ("paper-code", "standard")
_ONE_CODE_EACH = f"--beside compares reports of one model code each ({' or '.join(MODES)})"


def load_other(path: str | Path, preset: str, mode: str) -> dict[str, Any]:
    """The other report's payload, checked: a ``report.json`` of a single model code (one of
    :data:`MODES`) that is not of this report's ``preset`` and model code ``mode`` -- the same
    preset with the other model code, or another preset with either -- of a format this posenc
    reads (:func:`~.report_json.read_report_json`: a bounded read), with a list of verdicts each
    naming its claim, verdict and measurement, each claim once (a claim given twice alike is
    kept once; twice with different verdicts, measurements or seeds is refused: which one would
    the section show?).  Anything else is a PosencError that says what it found."""
    path, payload = read_report_json(path, "--beside")
    if mode not in MODES:
        raise PosencError(f"this report's runs are of mixed model code; {_ONE_CODE_EACH}")
    other_mode, other_preset = payload.get("model_code"), payload.get("preset")
    if other_mode not in MODES:
        raise PosencError(f"{path} is a report of model code {other_mode!r}; {_ONE_CODE_EACH}")
    if not isinstance(other_preset, str) or not other_preset:
        raise PosencError(f"{path} names no preset ({other_preset!r}); --beside needs to know "
                          "which regime it compares with")
    if other_preset == preset and other_mode == mode:
        raise PosencError(f"{path} is a report of this report's own preset {preset!r} and model "
                          f"code {mode!r}; --beside needs the other model code than this "
                          f"report's {mode!r} or another preset (a second seed set of the same "
                          "plan is --replica's)")
    kept: dict[str, dict[str, Any]] = {}
    for v in payload["verdicts"]:
        if not (isinstance(v, dict) and all(isinstance(v.get(k), str)
                                            for k in ("claim", "verdict", "measured"))):
            raise PosencError(f"{path} holds a verdict without its claim, verdict and "
                              f"measurement: {shown(v, 80)}")
        if "decision" not in v:  # formats 1-2: the verdict is the decision; show it with its regime
            v = dict(v, decision=verdict_decision(v))
            v["verdict"] = verdict_word(v["decision"], other_preset)
        first = kept.setdefault(v["claim"], v)
        if first is not v and first != v:
            said = (f"verdicts {shown(first['verdict'], 30)} and {shown(v['verdict'], 30)}"
                    if first["verdict"] != v["verdict"] else "the same verdict but another "
                    "measurement or seeds")
            raise PosencError(f"{path} holds claim {shown(v['claim'], 40)} twice, with {said}; "
                              "a report.json holds each claim once")
    return dict(payload, verdicts=list(kept.values()))   # a claim given twice alike, once


def verdict_seeds(verdict: dict[str, Any]) -> list[int]:
    """The seeds a verdict's parts rest on (from the serialised parts; empty when none say)."""
    seeds: set[int] = set()
    for part in verdict.get("parts") or []:
        if isinstance(part, dict):
            seeds.update(s for s in part.get("seeds") or [] if isinstance(s, int))
    return sorted(seeds)


def judged_on_no_seeds(verdict: dict[str, Any]) -> bool:
    """Whether a verdict was judged on no seed at all (its ``seeds`` count is the integer 0: the
    store ran none of the configurations it needs -- e.g. the count task of a distance-only
    preset -- or its runs lack the statistic), so its "inconclusive" is no measurement."""
    seeds = verdict.get("seeds")
    return isinstance(seeds, int) and not isinstance(seeds, bool) and seeds == 0


def _compare(v: dict[str, Any], o: dict[str, Any] | None) -> str:
    if o is None:
        return "only here"
    here, there = judged_on_no_seeds(v), judged_on_no_seeds(o)
    if here or there:
        return ("not measured in either" if here and there else
                "not measured here" if here else "not measured there")
    return "same" if verdict_decision(o) == verdict_decision(v) else "differs"


def beside_rows(verdicts: Sequence[dict[str, Any]],
                other: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per claim of either report (this report's order, then the other's own claims):
    both verdicts' words and ``same`` / ``differs`` (of their decisions: the words name each
    side's regime) (``only here`` / ``only there`` for a claim one
    report lacks, e.g. paper-code mode's "E10 (code rope)"; ``not measured here`` / ``not
    measured there`` / ``not measured in either`` for a claim a report judged on no seed,
    :func:`judged_on_no_seeds`)."""
    theirs = {v["claim"]: v for v in other}
    rows = []
    for v in verdicts:
        o = theirs.get(v["claim"])
        rows.append({"claim": v["claim"], "here": v["verdict"], "here_measured": v["measured"],
                     "there": o["verdict"] if o else "-", "there_measured": o["measured"] if o else "-",
                     "compare": _compare(v, o)})
    ours = {v["claim"] for v in verdicts}
    for o in other:
        if o["claim"] not in ours:
            rows.append({"claim": o["claim"], "here": "-", "here_measured": "-",
                         "there": o["verdict"], "there_measured": o["measured"],
                         "compare": "only there"})
    return rows


def _span(seeds: Sequence[int]) -> str:
    if not seeds:
        return "none"
    s = sorted(seeds)
    return f"{s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 1 else \
        ", ".join(map(str, s))


def beside_markdown(rows: list[dict[str, Any]], mode: str, other_mode: str, other_path: str,
                    seeds: Sequence[int], other_seeds: Sequence[int],
                    preset: str | None = None, other_preset: str | None = None) -> list[str]:
    """The section's lines.  With the same preset (or none given) the two sides are named by
    model code alone ("Beside the other model code"); with another preset, by preset and model
    code ("Beside another preset"), and a difference is one of the whole regime (the model codes
    named in it only where they differ).  The other report's text (its claims, verdicts,
    measurements, preset, and the path it was named by) is foreign: written with
    :func:`~.table.md_text` / :func:`~.table.md_code`, so that no HTML or markup of it renders."""
    differs = [md_text(r["claim"]) for r in rows if r["compare"] == "differs"]
    same_seeds = sorted(seeds) == sorted(other_seeds)
    regime = other_preset is not None and other_preset != preset
    here, there = (f"{md_text(preset)}, {md_text(mode)}",
                   f"{md_text(other_preset)}, {md_text(other_mode)}") if regime \
        else (md_text(mode), md_text(other_mode))
    cause = ("of the two regimes -- everything the two presets set differently"
             + (" and the two model codes" if mode != other_mode else "")
             + " together, not any one of them --") if regime else "of the two model codes"
    lines = ["", SECTION_PRESET if regime else SECTION, "",
             f"This report ({here}, seeds {_span(seeds)}) beside {md_code(other_path)} ({there}, "
             f"seeds {_span(other_seeds)}{'' if same_seeds else ': not the same seeds'}). "
             f"{len(differs)} of {sum(r['compare'] in ('same', 'differs') for r in rows)} claims "
             "judged on runs in both have a different verdict"
             + (f" ({', '.join(differs)})" if differs else "") + f". A verdict that differs is a "
             f"difference {cause} only where both sides are decided; an "
             "inconclusive side says the seeds could not tell.", "",
             f"| claim | {here}: measured | verdict | {there}: measured | verdict | |",
             "|---|---|---|---|---|---|"]
    for r in rows:   # the other report's text is foreign: every cell shown as it is (md_text)
        lines.append(md_text_row([md_text(r[k]) for k in ("claim", "here_measured", "here",
                                                          "there_measured", "there")]
                                 + [f"**{md_text(r['compare'])}**"]))
    return lines
