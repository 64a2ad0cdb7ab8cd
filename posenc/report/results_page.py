"""``posenc results``: the results page (docs/results.md) from committed reports, without training.

Its inputs are *sources*, each a folder:

* a results store with its report (``STORE/report/report.json``, written by ``posenc report``):
  a seed set of one regime (its ``preset``); two stores of one regime are its two seed sets,
  the first naming the second as its replication store (``posenc report --replica``);
* a paper-size anchor (``done.json`` beside one ``ROLE.json`` result per role, written by
  scripts/paper_anchor.py): one run per role, no interval.

The page has one section per regime, in the order the sources are given: a table of every claim
(the paper's statement as we read it, the judged statistic with its 95% interval per seed set,
the verdict per set, the replicated word, a caveat of one line) and one figure
(:mod:`.results_figure`).  Every word and number in the tables is read from the report.json
files as they are committed: the page decides nothing, and rebuilding it from the same reports
writes the same page.  The figure reads the stores' runs (per head drops) as well.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from ..errors import PosencError
from .beside import verdict_seeds
from .report_json import read_report_json, verdict_decision
from .table import md_header, md_row, value_span
from ..roles import CODE_ROPE
from ..verdicts.measured import DEPOSIT_DROP, NC2_READINGS, OTHER_HEADS, deposit_depth
from ..verdicts.verdict import reading_claim
from ..training_presets import TRAINING_PRESETS
from ..atomic import atomic_write_text
from .results_figure import regime_figure

#: a caveat longer than this is cut at its first clause (a table cell of one line)
CAVEAT_CHARS = 110


@dataclass
class SeedSet:
    """One store's report: its folder, payload and the seeds its verdicts rest on."""

    path: Path
    payload: dict[str, Any]
    seeds: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"seeds {value_span(self.seeds)}"


@dataclass
class Anchor:
    """A paper-size anchor: one stored result per role (``ExperimentResult``)."""

    path: Path
    results: list[Any]
    #: per result, the epochs its schedule was cut from (None: trained as the preset says)
    shortened_from: list[Optional[int]] = field(default_factory=list)


@dataclass
class Regime:
    """A section of the page: the preset, its seed sets (one or two) or its anchor."""

    preset: str
    sets: list[SeedSet] = field(default_factory=list)
    anchor: Optional[Anchor] = None


def read_source(path: str | Path) -> SeedSet | Anchor:
    """A store with a report, or an anchor folder; anything else is one PosencError."""
    path = Path(path)
    if not path.is_dir():
        raise PosencError(f"no results store or anchor folder at {path}")
    if (path / "done.json").is_file():
        return _read_anchor(path)
    if not (path / "report" / "report.json").is_file():
        raise PosencError(f"{path} has no report/report.json (build it with `posenc report "
                          f"{path}`) and no done.json of a paper-size anchor")
    _, payload = read_report_json(path / "report", flag="posenc results")
    if not payload.get("preset"):
        raise PosencError(f"{path / 'report' / 'report.json'} names no preset")
    seeds = sorted({s for v in payload["verdicts"] for s in verdict_seeds(v)})
    return SeedSet(path, payload, seeds)


def _read_anchor(path: Path) -> Anchor:
    from ..empirical.pipeline.experiment_result import ExperimentResult

    try:
        roles = json.loads((path / "done.json").read_text())["roles"]
        if not isinstance(roles, list) or not roles or not all(isinstance(r, str) for r in roles):
            raise ValueError("its roles are not a list of names")
        raw = [json.loads((path / f"{r.replace('+', '_plus_')}.json").read_text()) for r in roles]
        results = [ExperimentResult.from_stored(d) for d in raw]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise PosencError(f"{path} is not a readable paper-size anchor: {exc}") from None
    return Anchor(path, results, [d.get("shortened_from") for d in raw])


def regimes(sources: Sequence[SeedSet | Anchor]) -> list[Regime]:
    """The sources grouped by preset, in the order given; a regime's second seed set must be the
    replication store its first names (else the replicated words would be of another store)."""
    out: dict[str, Regime] = {}
    for src in sources:
        if isinstance(src, Anchor):
            presets = {r.summary["preset"] for r in src.results}
            if len(presets) != 1:
                raise PosencError(f"the anchor {src.path} mixes presets {sorted(presets)}")
            preset = f"{presets.pop()} (anchor)"
            if preset in out:
                raise PosencError(f"two anchors of the preset {preset}")
            out[preset] = Regime(preset, anchor=src)
            continue
        reg = out.setdefault(src.payload["preset"], Regime(src.payload["preset"]))
        reg.sets.append(src)
    for reg in out.values():
        if len(reg.sets) > 2:
            raise PosencError(f"{len(reg.sets)} stores of the preset {reg.preset}: a regime has "
                              "one seed set or a seed set and its replication")
        if len(reg.sets) == 2:
            first, second = reg.sets
            named = first.payload.get("replication_store")
            if named is None or (first.path / named).resolve() != second.path.resolve():
                raise PosencError(f"{first.path}'s report names the replication store {named!r}, "
                                  f"not {second.path}: rebuild it with `posenc report "
                                  f"{first.path} --replica {second.path}`")
    return list(out.values())


# -- the table's cells --------------------------------------------------------------------------

def _digits(part: dict[str, Any], measured: str) -> int:
    """The digits the report printed the part with (the first of 1-3 whose text it holds)."""
    est, (lo, hi) = part["estimate"], part["interval"]
    for d in (1, 2, 3):
        if f"{est:+.{d}f} [{lo:+.{d}f}, {hi:+.{d}f}]" in measured:
            return d
    return 2


def primary_part(verdict: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The judged part of a report.json verdict (None when it has none)."""
    return next((p for p in verdict.get("parts") or [] if p.get("primary", True)), None)


def statistic_cell(verdict: Optional[dict[str, Any]]) -> str:
    """The judged part's estimate and 95% interval as the report printed them (a claim of
    several conditions: each condition's); ``-`` when the part has no estimate."""
    if verdict is None:
        return "-"
    part = primary_part(verdict)
    if part is None:
        return "-"
    measured = verdict.get("measured", "")
    pieces = part.get("conditions") if part.get("conditions") else [part]
    cells = []
    for p in pieces:
        if p.get("estimate") is None or not p.get("interval"):
            return "-"
        d = _digits(p, measured)
        lo, hi = p["interval"]
        cells.append(f"{p['part']}: {p['estimate']:+.{d}f} [{lo:+.{d}f}, {hi:+.{d}f}]")
    return "; ".join(cells)


def _clause(text: str) -> str:
    """A note shortened to a table cell's line: its first clause when it is long."""
    text = " ".join(str(text).split())
    if len(text) <= CAVEAT_CHARS:
        return text
    cut = re.split(r": | \(|; ", text, maxsplit=1)[0]
    return cut if len(cut) <= CAVEAT_CHARS else cut[:CAVEAT_CHARS - 3].rstrip() + "..."


def replicated_cell(word: str) -> tuple[str, str]:
    """(the replicated word, the reason it gives in brackets or "")."""
    m = re.fullmatch(r"(.*?) \((.*)\)", word)
    return (m.group(1), m.group(2)) if m else (word, "")


def caveat(verdicts: Sequence[Optional[dict[str, Any]]], replicated_word: str = "") -> str:
    """One line on what limits the claim's reading, from its verdicts on each set: a ceiling, a
    statistic the preset did not measure, the exact test that did not back an interval, the
    judged part's own note; ``-`` when none applies."""
    present = [v for v in verdicts if v is not None]
    parts = [primary_part(v) for v in present]
    at_ceiling = [p for v, p in zip(present, parts) if verdict_decision(v) == "ceiling"]
    if at_ceiling:
        note = (at_ceiling[0] or {}).get("note") or "both sides of the ordering at the ceiling"
        return "at the ceiling: " + _clause(re.sub(r" \([^)]*\)", "", note))
    unmeasured = [p for p in parts if p is not None and p.get("estimate") is None]
    if unmeasured:
        return _clause(f"not measured: {unmeasured[0].get('note') or 'no estimate'}")
    _, reason = replicated_cell(replicated_word)
    if reason:
        return _clause(reason)
    decided = [v for v in present if verdict_decision(v) in ("confirmed", "against")]
    for v in decided:
        ex = v.get("exact")
        if ex and not ex.get("agrees"):
            return f"sign-flip p {ex['p']:.3f} > {ex['alpha']:.4g}"
    notes = [p.get("note") for p in parts if p is not None and p.get("note")]
    return _clause(notes[0]) if notes else "-"


def claim_rows(reg: Regime) -> list[list[str]]:
    """The regime's table rows: claim, statement, per set the statistic and the verdict, the
    replicated word, the caveat."""
    first = reg.sets[0]
    others = [{v["claim"]: v for v in s.payload["verdicts"]} for s in reg.sets[1:]]
    words = {r["claim"]: r["replicated"] for r in first.payload.get("replication") or []}
    rows = []
    for v in first.payload["verdicts"]:
        per_set = [v] + [o.get(v["claim"]) for o in others]
        word = words.get(v["claim"], "-") if len(reg.sets) > 1 else "-"
        rows.append([v["claim"], v["statement"],
                     *[statistic_cell(x) for x in per_set],
                     *[x["verdict"] if x is not None else "missing" for x in per_set],
                     replicated_cell(word)[0], caveat(per_set, word)])
    return rows


# -- the anchor ------------------------------------------------------------------------------

def _layer_drops(result: Any) -> list[list[float]]:
    """Per layer, the zero ablation's per-head drops in points."""
    return [[100.0 * d for d in la["drops"]] for la in result.ablation["zero"]["layers"]]


def anchor_reading(result: Any) -> str:
    """The claim-id reading an anchor run's rows are filed under: "code rope" for a paper-code
    run of trans.py's rope (:data:`~posenc.roles.CODE_ROPE`), as the reports' verdicts name its
    claims; "" (posenc's RoPE ids) for any other run, whose role the rows name."""
    return "code rope" if result.role == CODE_ROPE and result.paper_code else ""


def anchor_rows(anchor: Anchor, statements: dict[str, str]) -> list[list[str]]:
    """The anchor's rows: per role, NC2's readings and AD's two conditions on its one run (no
    interval, so no verdict)."""
    rows = []
    for res in anchor.results:
        if "zero" not in res.ablation:
            continue
        drops = _layer_drops(res)
        largest = [max(d) for d in drops]
        where = f"{res.role}, seed {res.seed}"
        reading = anchor_reading(res)
        for nc2, _, name, layers_of in NC2_READINGS:
            value = deposit_depth(largest, layers_of)
            claim = reading_claim(nc2, reading)
            rows.append([claim, statements.get(claim, "-"),
                         f"{name} - other layers: " + ("-" if value is None else f"{value:+.1f}"),
                         "no verdict (one run)", "-", f"{where}: one run, no interval"])
        flat = sorted(((d, layer, h) for layer, ds in enumerate(drops) for h, d in enumerate(ds)),
                      reverse=True)
        (top, layer, head), other = flat[0], flat[1][0]
        ad = reading_claim("AD", reading)
        rows.append([ad, statements.get(ad, "-"),
                     f"deposit head's drop: {top:+.1f} (layer {layer}, head {head}); other heads' "
                     f"top drop: {other:+.1f}",
                     "no verdict (one run)", "-",
                     f"{where}: one run; thresholds > {DEPOSIT_DROP:g} and < {OTHER_HEADS:g} points"])
    return rows


# -- the page ---------------------------------------------------------------------------------

def _rel(path: Path, out_dir: Path) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(out_dir))


def figure_name(preset: str) -> str:
    """The file name of a regime's figure."""
    return re.sub(r"[^a-z0-9]+", "-", preset.lower()).strip("-") + ".png"


def _anchor_lines(reg: Regime, out_dir: Path, statements: dict[str, str]) -> list[str]:
    anchor = reg.anchor
    assert anchor is not None
    lines = [f"Source: `{_rel(anchor.path, out_dir)}` (one run per role). "]
    for res, cut in zip(anchor.results, anchor.shortened_from):
        s = res.summary
        epochs = f"{s['epochs']} epochs" + (f" (its schedule cut from {cut})" if cut else "")
        lines[-1] += (f"{res.role} ({res.pe}), {res.task}, seed {res.seed}: test accuracy "
                      f"{100 * res.test_acc:.2f}% after {epochs}, {s['n_layers']} "
                      f"layers of {s['n_heads']} heads, {s['n_params']:,} parameters. ")
    lines[-1] = lines[-1].rstrip()
    lines += ["", *md_header(["claim", "the paper, as we read it", "statistic (points)",
                              "verdict", "replicated", "caveat"]),
              *[md_row(r) for r in anchor_rows(anchor, statements)]]
    return lines


def render_page(regs: Sequence[Regime], out_dir: Path, figure_dir: Path) -> str:
    """The page's Markdown (figures named relative to ``out_dir``)."""
    statements = {v["claim"]: v["statement"] for reg in regs for s in reg.sets
                  for v in s.payload["verdicts"]}
    lines = ["# Results", "",
             "The paper's empirical claims judged on posenc's stored runs, one section per "
             "regime. Generated by `posenc results` from the committed reports (no training); "
             "docs/methods.md says how each statistic, interval and word is made, "
             "docs/verdict-words.md what the words mean. A statistic is the judged part's mean "
             "over seeds with its 95% Student-t interval; *replicated* needs both seed sets' "
             "intervals and exact sign-flip tests to agree. A verdict holds for its regime: "
             "\"not reproduced at PRESET\" says nothing of the paper's own sizes."]
    for reg in regs:
        preset = reg.preset.removesuffix(" (anchor)")
        lines += ["", f"## {reg.preset}", ""]
        if preset in TRAINING_PRESETS:
            lines += [f"The `{preset}` preset: {TRAINING_PRESETS[preset].summary}.", ""]
        if reg.anchor is not None:
            lines += _anchor_lines(reg, out_dir, statements)
        else:
            code = reg.sets[0].payload.get("model_code", "standard")
            lines.append("Sources: " + ", ".join(f"`{_rel(s.path, out_dir)}` ({s.name})"
                                                  for s in reg.sets)
                         + f"; model code: {code}.")
            names = [s.name for s in reg.sets]
            lines += ["", *md_header(["claim", "the paper, as we read it",
                                      *[f"statistic, {n}" for n in names],
                                      *[f"verdict, {n}" for n in names],
                                      "replicated", "caveat"]),
                      *[md_row(r) for r in claim_rows(reg)]]
        fig = figure_dir / figure_name(reg.preset)
        lines += ["", f"![{reg.preset}: accuracy by PE and per layer the top head's drop beside "
                      f"the runner-up's]({_rel(fig, out_dir)})", "",
                  f"*{reg.preset}*: left, test accuracy per PE, every seed a point (one colour per "
                  "seed set), the bar the mean; right, per layer the largest single-head drop "
                  "(filled) beside the runner-up's in the same layer (open), zero ablation on "
                  "distance."]
    return "\n".join(lines) + "\n"


def build_results(sources: Sequence[str | Path], out: str | Path) -> Path:
    """Read every source (all checked before anything is written), write the figures beside
    ``out`` (``OUT_STEM/REGIME.png``) and then the page, each file atomically."""
    out = Path(out)
    if out.suffix != ".md":
        raise PosencError(f"--out needs a Markdown file name (.md); got {str(out)!r}")
    if not out.resolve().parent.is_dir():
        raise PosencError(f"cannot write {out}: directory {out.resolve().parent} does not exist")
    if not sources:
        raise PosencError("posenc results needs at least one store or anchor folder")
    regs = regimes([read_source(s) for s in sources])
    figure_dir = out.with_suffix("")
    text = render_page(regs, out.parent, figure_dir)
    figure_dir.mkdir(exist_ok=True)
    for reg in regs:
        regime_figure(reg, figure_dir / figure_name(reg.preset))
    atomic_write_text(out, text)
    return out
