"""``posenc report``: the report of a results store, from its stored runs alone.

:func:`build_report` reads only the stored results -- no model is loaded, so a store whose
checkpoints were dropped reports as one that kept them, and a finished run that lacks a file a
finished run keeps (:mod:`posenc.empirical.pipeline.kept_files`) is refused in one line -- asks
:mod:`posenc.verdicts` for the verdicts on them (and :mod:`posenc.proofs`, through
:mod:`.theory_tables`, for the theory claims it shows) and writes ``STORE/report/report.md``
(:mod:`.markdown`), ``report.json``, ``runs.csv`` and the figures (:mod:`.figures`,
:mod:`.dynamics`).  The report holds no wall-clock times, so a sweep interrupted and resumed
writes the same report as an uninterrupted one (training is deterministic for a seed); timings
go to ``runs.csv`` beside it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..errors import PosencError
from ..roles import DISTANCE, roles_where
from ..verdicts.accuracy_deposit import accuracy_table, deposit_table, evaluate, single_head_layers
from ..verdicts.dynamics import evaluate_dynamics
from ..verdicts.looks import optional_stopping_text, read_record
from ..verdicts.trained import trained_criterion
from ..verdicts.verdict import Verdict
from ..verdicts.words import regime_of, with_regime
from . import figures as figs
from .ablation_source import ablation_source_text
from .beside import beside_markdown, beside_rows, load_other, verdict_seeds
from .ceiling import task_ceilings
from .dynamics import FIGURE as DYNAMICS_FIGURE
from .dynamics import dynamics_figure, dynamics_markdown, dynamics_results, recording_text
from .markdown import ReportInputs, render, report_mode
from .measured import measured_markdown
from .mla_both_ways import mla_both_ways_markdown
from .publish import staged_report
from .replication import check_same_plan, replication_markdown, replication_rows
from .report_json import REPORT_FORMAT
from .table import value_span
from .theory_tables import spectral_table, theory_claims

if TYPE_CHECKING:
    from ..empirical.pipeline.experiment_result import ExperimentResult

FIGURES = ("accuracy.png", "partial_rope.png", "deposit_index.png", "probe.png", DYNAMICS_FIGURE)
PROBE_ROLES = roles_where(probe=True)  # the roles whose position probe the report shows
#: the phases of a run whose wall time the sweep records (``summary.phase_seconds``)
PHASES = ("training", "dynamics", "ablation", "probe")


def _load_results(store_root: Path) -> tuple[list[ExperimentResult], list[dict[str, Any]]]:
    from ..empirical.analysis.dynamics import read_dynamics_file
    from ..empirical.pipeline.experiment_result import ExperimentResult
    from ..empirical.pipeline.kept_files import incomplete_runs, refuse_incomplete
    from ..empirical.pipeline.store import RunStore

    store = RunStore(store_root, create=False)
    # a run folder that lacks what a finished run keeps would be left out, or misread: refused
    refuse_incomplete(incomplete_runs(store), store_root, outcome="no report was written")
    results, rows = [], []
    for rec in store.records():
        if rec.kind != "experiment" or not store.is_done(rec.id):
            continue
        stored = ExperimentResult.from_store(store, rec.id, rec.config)
        run_dir = store.run_dir(rec.id)
        if stored.dynamics:  # the figure reads it: whole, and this run's
            read_dynamics_file(run_dir, of=(stored.task, stored.pe, stored.seed))
        res = _with_current_dynamics(stored)
        results.append(res)
        s = res.summary
        rows.append({"run": rec.id, "label": rec.label, "task": res.task, "role": res.role,
                     "pe": res.pe, "seed": res.seed, "test_acc_pct": round(100 * res.test_acc, 6),
                     "epochs": s["epochs"], **_stopping_columns(s),
                     "train_seconds": round(s["seconds"], 2),
                     **_resumed_columns(s, *_summary_timing(run_dir)),
                     **{f"{k}_seconds": (s.get("phase_seconds") or {}).get(k, "")
                        for k in PHASES}})
    return results, rows


#: keys of a current dynamics summary that a summary made before them lacks
CURRENT_DYNAMICS = ("sign_balance_max", "signal_relative_mean_log_gain")


def _with_current_dynamics(res: ExperimentResult) -> ExperimentResult:
    """The result with its dynamics summary made again from the run's ``dynamics.jsonl`` when
    the stored one predates a statistic the verdicts use (:data:`CURRENT_DYNAMICS`: the
    random-sign null's check, Thm. 6.1's scale-free margins; the sign-flip null of Prop. 6.1
    needs signals that only newer recordings keep): adopted only when every value the stored
    summary has comes out the same, so the new summary adds statistics and changes none (else
    the stored one is kept, and the check reads "not checked")."""
    from ..empirical.analysis.dynamics_summary import summarize_run
    if not res.dynamics or res.run_dir is None or all(k in res.dynamics for k in CURRENT_DYNAMICS):
        return res
    try:
        fresh = json.loads(json.dumps(summarize_run(res.run_dir)))
    except (PosencError, OSError, ValueError, KeyError):
        return res
    same = all(json.dumps(v, sort_keys=True) == json.dumps(fresh.get(k), sort_keys=True)
               for k, v in res.dynamics.items())
    return dataclasses.replace(res, dynamics=fresh) if same else res


def _summary_timing(run_dir: Path) -> tuple[Optional[int], Optional[dict[str, Any]]]:
    """From the run's ``train_summary.json``: how many epochs it holds the seconds of (None: no
    summary, an unreadable one, or one without per-epoch seconds) and its ``resumed`` record
    (None: none; a run found finished before 2026-12-06 kept it there but not in result.json)."""
    from ..empirical.training.runs import read_summary
    try:
        summary = read_summary(run_dir)
    except PosencError:  # unreadable: not known (the report reads its numbers from result.json)
        return None, None
    if not summary:
        return None, None
    times, resumed = summary.get("epoch_seconds"), summary.get("resumed")
    return (len(times) if isinstance(times, list) and times else None,
            resumed if isinstance(resumed, dict) else None)


def _resumed_columns(summary: dict[str, Any], timed_epochs: Optional[int] = None,
                     stored_resumed: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """runs.csv's columns of a run trained in more than one go (empty for one trained at once):
    the epoch it resumed from, and whether its seconds count the epochs before it (``no``: its
    checkpoint predates posenc keeping them; 2026-12-06).  The record is the result's, else the
    train summary's (``stored_resumed``); a run resumed by a posenc that did not yet record it
    (before 2026-12-06) is known by its per-epoch seconds: fewer (``timed_epochs``) than its
    epochs, the first ones missing (every epoch trained appends one; early stopping and
    divergence end both lists together)."""
    resumed = summary.get("resumed") or stored_resumed or {}
    if not resumed and timed_epochs is not None and timed_epochs < int(summary["epochs"]):
        resumed = {"from_epoch": int(summary["epochs"]) - timed_epochs, "earlier_seconds": None}
    return {"resumed_from_epoch": resumed.get("from_epoch", ""),
            "earlier_seconds_counted": "" if not resumed else
            ("yes" if resumed.get("earlier_seconds") is not None else "no")}


def _stopping_columns(summary: dict[str, Any]) -> dict[str, Any]:
    """runs.csv's early-stopping columns (empty for a run trained without early stopping:
    ``fired`` -- the stopping rule fired, also at the maximum; ``stopped_early`` -- and before
    it) and the step at which a diverged run's training loss became non-finite (empty: it did
    not)."""
    stop = summary.get("early_stopping") or {}
    diverged = summary.get("diverged") or {}
    return {"max_epochs": stop.get("max_epochs", ""), "best_epoch": stop.get("best_epoch", ""),
            # (a run stored before the rule's outcome was recorded: unknown, not "no")
            "fired": stop.get("fired", "unknown") if stop else "",
            "stopped_early": stop.get("stopped_early", ""),
            "diverged_step": diverged.get("step", "")}


def build_report(store_root: str | Path, preset: Optional[str] = None, theory: bool = True,
                 replica: str | Path | None = None, beside: str | Path | None = None) -> Path:
    """Write report.md, report.json, runs.csv and figures under STORE/report/ from stored runs
    (built in a private folder beside the old report and swapped in file by file,
    :mod:`.publish`: a reader never finds report.json missing, a failure or a kill leaves the old
    report, and a killed build's leftovers go at the next build).
    ``replica``: the store of the same plan on a disjoint seed set (``posenc reproduce
    --replicate``), checked to hold the same configurations (every config field but the seed,
    :func:`.replication.check_same_plan`) before anything is written; the report then sets both
    verdicts of each claim side by side (:mod:`.replication`, the store named relative to this
    one).  ``beside``: the report (its ``report.json`` or folder) of the same
    preset run with the other model code (paper-code vs standard), or of another preset; the
    report then sets both verdicts of each claim side by side and names those that differ
    (:mod:`.beside`)."""
    store_root = Path(store_root)
    results, rows = _load_results(store_root)
    if not results:
        raise PosencError(f"no finished experiment runs in {store_root}")
    replica_runs = None
    if replica is not None:  # the plan first (configs only): a wrong pairing costs nothing
        check_same_plan(_done_configs(store_root), _done_configs(Path(replica)), str(replica))
        replica_results, _ = _load_results(Path(replica))
        if not replica_results:
            raise PosencError(f"no finished experiment runs in the replication store {replica}")
        shared = {r.seed for r in results} & {r.seed for r in replica_results}
        if shared:
            raise PosencError(f"the replication store {replica} shares seeds {sorted(shared)} "
                              f"with {store_root}: a replication needs a disjoint seed set")
        replica_runs = (relative_to_store(replica, store_root), replica_results)
    other = None
    if beside is not None:  # checked before any work: a wrong comparison costs nothing
        other = (relative_to_store(beside, store_root),
                 load_other(beside, preset or results[0].summary["preset"], report_mode(results)))
    with staged_report(store_root) as tmp:  # written beside the old report, swapped in whole
        t0 = time.perf_counter()
        _write_report(tmp, store_root, results, rows, preset, theory, replica_runs, other)
        _write_timings(tmp / "timings.md", rows, time.perf_counter() - t0)
    return store_root / "report" / "report.md"


def left_out(store_root: str | Path) -> list[tuple[str, str]]:
    """(label, state) of each experiment run of the store that has not finished -- pending
    (planned, never finished: a sweep interrupted or still running) or failed -- which the
    report leaves out (a run folder that lacks a file is refused instead, :func:`build_report`)."""
    from ..empirical.pipeline.store import RunStore

    return [(rec.label, rec.state) for rec in RunStore(store_root, create=False).records()
            if rec.kind == "experiment" and rec.state != "done"]


def left_out_text(store_root: str | Path) -> Optional[str]:
    """The report's sentence naming the runs it leaves out (None: none)."""
    runs = left_out(store_root)
    if not runs:
        return None
    by_state: dict[str, list[str]] = {}
    for label, state in runs:
        by_state.setdefault(state, []).append(label)
    parts = "; ".join(f"{state}: {', '.join(labels)}" for state, labels in sorted(by_state.items()))
    return (f"Left out: {len(runs)} run{'s' if len(runs) > 1 else ''} of the store that "
            f"{'have' if len(runs) > 1 else 'has'} not finished ({parts}); `posenc reproduce` "
            f"with the same options resumes {'them' if len(runs) > 1 else 'it'}.")


def relative_to_store(path: str | Path, store_root: Path) -> str:
    """``path`` as the report names it: relative to the store (``../store-replicate``), never a
    machine's absolute path."""
    return os.path.relpath(Path(path).resolve(), store_root.resolve())


def _done_configs(store_root: Path) -> list[dict[str, Any]]:
    """The configs of a store's finished experiment runs (those its report reads)."""
    from ..empirical.pipeline.store import RunStore

    store = RunStore(store_root, create=False)
    return [rec.config for rec in store.records()
            if rec.kind == "experiment" and store.is_done(rec.id)]


def _write_report(tmp: Path, store_root: Path, results: list[ExperimentResult],
                  rows: list[dict[str, Any]], preset: Optional[str], theory: bool,
                  replica: Optional[tuple[str, list[ExperimentResult]]] = None,
                  beside: Optional[tuple[str, dict[str, Any]]] = None) -> None:
    """report.md, report.json, runs.csv and the figures into ``tmp``: the verdicts, the tables
    and the sections beside them, computed once (:class:`~.markdown.ReportInputs`), then drawn
    and written."""
    stopping = read_record(store_root)  # a bad record is refused before any work
    results.sort(key=lambda r: (r.task, r.role, r.seed))
    preset = preset or results[0].summary["preset"]
    verdicts = _verdicts(results)
    accuracy, deposits = accuracy_table(results), deposit_table(results)
    single_head = single_head_layers(results)
    ceilings = task_ceilings(results)  # (a run folder of another task is refused here)
    configs = _done_configs(store_root)
    measured = _measured_sections(results, configs)
    replication = _replication(verdicts, results, replica)
    besides = _beside(verdicts, results, preset, beside)
    inputs = ReportInputs(
        preset=preset, results=results, verdicts=verdicts, accuracy=accuracy, deposits=deposits,
        strips=_strips(results), probes=_probe_r2(results),
        theory_claims=theory_claims(store_root) if theory else None, spectra=spectral_table(),
        measured_sections=measured.lines, replication=replication.lines + besides.lines,
        ceilings=ceilings,
        optional_stopping=None if stopping is None else optional_stopping_text(stopping),
        replicated=replication.entries.get("replication", []),
        replica_seeds=[] if replica is None else _seeds(replica[1]),
        ablation_source=ablation_source_text(configs, results,
                                             report_mode(results) == "paper-code"),
        single_head=single_head, left_out=left_out_text(store_root))
    _write_figures(tmp, inputs)
    (tmp / "report.md").write_text(render(inputs))
    sections = {**measured.entries, **replication.entries, **besides.entries}
    (tmp / "report.json").write_text(_report_json(inputs, stopping, sections))
    (tmp / "runs.csv").write_text(_runs_csv(rows))


@dataclass(frozen=True)
class _Section:
    """Sections of the report: their lines in report.md, their entries in report.json (none:
    a section not asked for)."""

    lines: list[str] = field(default_factory=list)
    entries: dict[str, Any] = field(default_factory=dict)


def _verdicts(results: list[ExperimentResult]) -> list[Verdict]:
    """The verdicts on the runs (:mod:`posenc.verdicts`), each word naming the runs' regime."""
    return with_regime(evaluate(results) + evaluate_dynamics(results), regime_of(results))


def _seeds(results: list[ExperimentResult]) -> list[int]:
    return sorted({r.seed for r in results})


def _probe_r2(results: list[ExperimentResult]) -> dict[str, list[dict[str, float]]]:
    """role -> per seed, the position probe's R^2 per site: the distance runs of the roles whose
    probe the report shows (:data:`PROBE_ROLES`)."""
    probes: dict[str, list[dict[str, float]]] = {}
    for res in results:
        if res.task == DISTANCE and res.probe and res.role in PROBE_ROLES:
            probes.setdefault(res.role, []).append(res.probe["probe_r2"])
    return probes


def _strips(results: list[ExperimentResult]) -> list[tuple[str, str, list[ExperimentResult]]]:
    """(role, figure file, its runs) of each PE's zero-ablation strip on the distance task, one
    figure over all its seeds."""
    ablated: dict[str, list[ExperimentResult]] = {}
    for res in results:
        if res.task == DISTANCE and "zero" in res.ablation:
            ablated.setdefault(res.role, []).append(res)
    return [(role, f"ablation_{role.replace('+', '_')}.png", runs) for role, runs in ablated.items()]


def _measured_sections(results: list[ExperimentResult], configs: list[dict[str, Any]]) -> _Section:
    """The training-dynamics section, the claims measured as the paper states them and E13 read
    both ways (where the runs hold MLA)."""
    dyn_lines, dyn = dynamics_markdown(dynamics_results(results), recording_text(configs))
    lines, measured = measured_markdown(results)
    mla_lines, mla = mla_both_ways_markdown(results)
    return _Section(dyn_lines + lines + mla_lines, {"dynamics": dyn, "measured": measured,
                                                    **({"e13_both_ways": mla} if mla else {})})


def _replication(verdicts: list[Verdict], results: list[ExperimentResult],
                 replica: Optional[tuple[str, list[ExperimentResult]]]) -> _Section:
    """Each claim's verdict on this report's seeds beside the replication's (``replica``: the
    replication store as the report names it, and its runs)."""
    if replica is None:
        return _Section()
    name, replica_results = replica
    seeds, replica_seeds = _seeds(results), _seeds(replica_results)
    rows = replication_rows(verdicts, _verdicts(replica_results),
                            (f"seeds {value_span(seeds)}", f"seeds {value_span(replica_seeds)}"))
    return _Section(replication_markdown(rows, seeds, replica_seeds, name),
                    {"replication": rows, "replication_store": name})


def _beside(verdicts: list[Verdict], results: list[ExperimentResult], preset: str,
            beside: Optional[tuple[str, dict[str, Any]]]) -> _Section:
    """Each claim's verdict beside another report's (``beside``: its path as the report names
    it, and its payload, :func:`~.beside.load_other`)."""
    if beside is None:
        return _Section()
    path, other = beside
    rows = beside_rows([v.to_dict() for v in verdicts], other["verdicts"])
    other_seeds = sorted({s for v in other["verdicts"] for s in verdict_seeds(v)})
    return _Section(beside_markdown(rows, report_mode(results), other["model_code"], path,
                                    _seeds(results), other_seeds, preset, other["preset"]),
                    {"beside": rows})


def _write_figures(tmp: Path, inputs: ReportInputs) -> None:
    """The report's figures (:data:`FIGURES`, and one ablation strip per PE) of what it shows."""
    figs.accuracy_figure(inputs.accuracy, tmp / "accuracy.png", inputs.ceilings)
    figs.partial_rope_figure(inputs.accuracy.get("distance", {}),
                             inputs.results[0].summary["n_heads"], tmp / "partial_rope.png")
    figs.deposit_heatmap(inputs.deposits or {"(none)": [[0.0]]}, tmp / "deposit_index.png")
    _strip_figures(tmp, inputs.strips)
    figs.probe_figure(inputs.probes or {"(none)": [{"embed": 0.0}]}, tmp / "probe.png")
    dynamics_figure([r.run_dir for r in dynamics_results(inputs.results) if r.run_dir is not None],
                    tmp / DYNAMICS_FIGURE)


def _strip_figures(tmp: Path, strips: list[tuple[str, str, list[ExperimentResult]]]) -> None:
    """Each PE's ablation strip (:func:`_strips`), every seed's layers side by side."""
    from ..empirical.analysis.ablation import AblationTable  # (torch: loaded to draw, not at import)
    from ..empirical.analysis.plots import ablation_strip_plot

    for role, name, runs in strips:
        ablation_strip_plot([AblationTable.from_dict(r.ablation["zero"]) for r in runs],
                            tmp / name, title=f"{role} ({runs[0].pe}), distance, zero ablation",
                            seeds=[r.seed for r in runs])


def _report_json(inputs: ReportInputs, stopping: Optional[dict[str, Any]],
                 sections: dict[str, Any]) -> str:
    """report.json (format :data:`~.report_json.REPORT_FORMAT`): what report.md shows, as data,
    with the sections' entries (``sections``) and the stopping record (``until_decided``)."""
    results = inputs.results
    payload = {"format": REPORT_FORMAT, "accuracy_unit": "percent", "preset": inputs.preset,
               "regime": regime_of(results), "model_code": report_mode(results),
               "until_decided": stopping, "verdicts": [v.to_dict() for v in inputs.verdicts],
               "accuracy": inputs.accuracy, "deposit_index": inputs.deposits,
               "single_head_layers": inputs.single_head, "probe_r2": inputs.probes,
               "theory_claims": inputs.theory_claims, "spectra": inputs.spectra,
               "bayes_ceiling": inputs.ceilings,
               "trained_criterion": [c.to_dict() for c in trained_criterion(results)],
               **sections}
    return json.dumps(payload, indent=2, sort_keys=True) + "\n"


def _runs_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _write_timings(path: Path, rows: list[dict[str, Any]], report_seconds: float) -> None:
    """``timings.md``: wall time per phase, summed over the runs (one core each), and the
    report's own -- beside report.md, which holds no wall-clock time (a resumed sweep writes the
    same report.md as an uninterrupted one)."""
    lines = ["# Wall time per phase", "",
             "Summed over the stored runs (each run on one worker); a run found finished by a "
             "resumed sweep counts its training as 0. *dynamics*: the training-dynamics "
             "recording of the runs that record it (RoPE and ALiBi on distance), apart from "
             "their training (runs stored before it was timed apart have none).", "",
             "| phase | runs | seconds | per run |", "|---|---|---|---|"]
    for phase in PHASES:
        vals = [r[f"{phase}_seconds"] for r in rows if r[f"{phase}_seconds"] != ""]
        if phase == "dynamics":  # a run that records none has 0 s of it: not a run of the phase
            vals = [v for v in vals if v > 0]
        per = f"{sum(vals) / len(vals):.1f}" if vals else "-"
        lines.append(f"| {phase} | {len(vals)} | {sum(vals):.1f} | {per} |")
    lines.append(f"| report (this folder) | - | {report_seconds:.1f} | - |")
    uncounted = [r["label"] for r in rows if r.get("earlier_seconds_counted") == "no"]
    if uncounted:
        lines += ["", f"Short: {len(uncounted)} run(s) resumed from a checkpoint that did not "
                      f"hold the seconds of its epochs count only those trained after it: "
                      f"{', '.join(uncounted)}."]
    path.write_text("\n".join(lines) + "\n")
