"""``posenc reproduce`` and ``posenc report``: run the sweep, judge the claims, write the report.

:func:`reproduce` expands a :class:`~posenc.empirical.reproduction.ReproductionPlan`,
runs it into a results store (resumably: finished runs are skipped) and calls
:func:`build_report`, which reads only the stored results -- no model is
loaded -- asks :mod:`posenc.proofs.empirical_claims` for the verdicts and writes
``STORE/report/report.md``, ``report.json`` and the figures.  The report holds
no wall-clock times, so a sweep interrupted and resumed writes the same
report as an uninterrupted one (training is deterministic for a seed); timings
go to ``runs.csv`` beside it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

from .errors import PosencError, WriteError
from .report_dynamics import FIGURE as DYNAMICS_FIGURE, SECTION as DYNAMICS_SECTION
from .report_measured import SECTION as MEASURED_SECTION

SECTIONS = ("## Verdicts", "## Accuracy per PE and task (Fig. 2)",
            "## Single-head ablation per layer (Fig. 4)", "## Deposit index per PE and layer",
            "## Partial RoPE (Fig. 6)", "## Absolute+RoPE: position probe per layer",
            DYNAMICS_SECTION, MEASURED_SECTION, "## Theory claims (posenc verify)",
            "## Spectral contraction vs expansion (posenc bound)",
            "## Setup")
THEORY_EXAMPLES = 10  # Hypothesis examples per theory claim in the report (posenc verify has more)
FIGURES = ("accuracy.png", "partial_rope.png", "deposit_index.png", "probe.png", DYNAMICS_FIGURE)


def reproduce(preset: str = "quick", backend: str = "local", out: Optional[str] = None,
              seeds: Optional[int] = None, count_seeds: Optional[int] = None,
              workers: int = 2, threads: int = 1,
              ray_address: Optional[str] = None, device: Optional[str] = None,
              overrides: Optional[dict[str, Any]] = None,
              roles: Optional[list[str]] = None, tasks: Optional[list[str]] = None,
              theory: bool = True, log: Callable[[str], None] = print, wait: bool = False,
              until_decided: bool = False, max_seeds: Optional[int] = None,
              seed_batch: Optional[int] = None, first_seed: int = 0,
              paper_code: Optional[bool] = None) -> Path:
    """Run (or resume) the reproduction sweep and write its report; returns report.md's path.

    ``paper_code``: run the paper code's models (None: on for the ``paper`` preset only); the
    default store is then ``posenc-out/PRESET-paper-code``, and a store that holds runs of the
    other mode is refused.

    One writer per store: another sweep running into ``out`` is a PosencError naming its PID,
    or (``wait=True``) waited for.  If any run failed, the report of the finished runs is still
    written and the failures are logged, then a PosencError says how many failed.
    ``until_decided``: then add ``seed_batch`` (default 2) seeds at a time to the configurations
    of undecided claims until each is decided or has ``max_seeds`` seeds
    (:mod:`posenc.report_decide`)."""
    from .empirical.config import check_threads
    from .empirical.reproduction import ReproductionPlan
    from .empirical.store import RunStore

    check_threads(threads)
    plan = ReproductionPlan.for_command(preset, seeds, count_seeds, roles=roles, tasks=tasks,
                                        overrides=dict(overrides or {}), first_seed=first_seed,
                                        paper_code=paper_code)
    if not until_decided and (max_seeds is not None or seed_batch is not None):
        raise PosencError("--max-seeds and --seed-batch go with --until-decided")
    seed_batch = 2 if seed_batch is None else seed_batch
    if until_decided:
        from .report_decide import check_limits
        if max_seeds is None:
            raise PosencError("--until-decided needs --max-seeds N")
        check_limits(plan.seed_counts(), max_seeds, seed_batch)
    plan.jobs(device=device)  # validates every config before anything is written
    store = RunStore(out or f"posenc-out/{preset}" + ("-paper-code" if plan.in_paper_code else ""))
    check_store_mode(store, plan.mode)
    failed: dict[str, str] = {}
    total = [0]
    run = dict(backend=backend, workers=workers, threads=threads, ray_address=ray_address,
               device=device, log=log, wait=wait, failed=failed, total=total)
    if until_decided:
        from .proofs.dynamics_verdicts import evaluate_dynamics
        from .proofs.empirical_claims import evaluate
        from .report_decide import until_decided as rounds
        rounds(plan.seed_counts(),
               lambda counts: run_plan(plan.with_seed_counts(counts), store, **run),
               lambda results: evaluate(results) + evaluate_dynamics(results),
               seed_batch, max_seeds, log)
    else:
        run_plan(plan, store, **run)
    if not failed:
        return build_report(store.root, preset=plan.preset, theory=theory)
    message = (f"{len(failed)} of {total[0]} runs failed (listed above; the first: "
               f"{next(iter(failed.values()))[:200]})")
    try:
        path = build_report(store.root, preset=plan.preset, theory=theory)
    except PosencError as exc:
        raise PosencError(f"{message}; no report ({exc})") from None
    raise PosencError(f"{message}; the report of the finished runs is at {path}")


def run_plan(plan: Any, store: Any, backend: str = "local", workers: int = 2, threads: int = 1,
             ray_address: Optional[str] = None, device: Optional[str] = None,
             log: Callable[[str], None] = print, wait: bool = False,
             failed: Optional[dict[str, str]] = None,
             total: Optional[list[int]] = None) -> list[dict[str, Any]]:
    """Run (or skip the finished runs of) a plan into ``store``; returns the results of its
    finished runs.  Failures are logged and added to ``failed`` (run id -> message), the number
    of runs to ``total[0]``."""
    from .empirical.reproduction import WORKER
    from .empirical.store import run_id
    from .empirical.sweep import run_jobs

    jobs = plan.jobs(device=device)
    t0 = time.time()

    def on_done(rid: str, job: Any, result: Optional[dict]) -> None:
        state = "failed" if result is None else f"{100 * result['summary']['test_acc']:.1f}%"
        log(f"  {job.label:<28} {state}")

    counts = set(plan.seed_counts().values())
    seeds_txt = (f"{plan.seeds} seed(s)" if plan.n_count_seeds == plan.seeds else
                 f"{plan.seeds} seed(s) on distance, {plan.n_count_seeds} on count") \
        if not plan.config_seeds else f"{min(counts)}" + (f"-{max(counts)}" if len(counts) > 1
                                                             else "") + " seed(s) per configuration"
    log(f"posenc reproduce: {len(jobs)} runs ({plan.preset} preset, {seeds_txt}) "
        f"into {store.root} [{backend}, {workers if backend == 'local' else 'ray'} worker(s)]")
    summary = run_jobs(store, jobs, WORKER, backend=backend, workers=workers, threads=threads,
                       ray_address=ray_address, on_done=on_done, wait=wait,
                       on_wait=lambda who: log(f"waiting for the writer holding {store.root} ({who})"))
    log(f"ran {len(summary.completed)}, skipped {summary.skipped} finished, "
        f"failed {len(summary.failed)} in {time.time() - t0:.0f} s")
    for rid, msg in summary.failed.items():
        log(f"  failed {rid}: {msg}")
    if failed is not None:
        failed.update(summary.failed)
    if total is not None:
        total[0] += summary.total
    rids = [run_id(job.config) for job in jobs]
    return [store.result(rid) for rid in rids if store.is_done(rid)]


def theory_claims(store_root: Path) -> list[dict[str, Any]]:
    """Every registered claim run with THEORY_EXAMPLES examples, cached in STORE/theory_claims.json."""
    from . import __version__
    from .empirical.store import atomic_write_json
    from .proofs.registry import all_claims
    from .proofs.runner import run_claim

    cache = store_root / "theory_claims.json"
    ids = [c.id for c in all_claims()]
    try:  # a damaged cache is recomputed, not trusted
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data.get("version") == __version__ and data.get("ids") == ids \
                and isinstance(data.get("claims"), list):
            return data["claims"]
    except (OSError, ValueError, AttributeError):
        pass
    rows = []
    for claim in all_claims():
        res = run_claim(claim, examples=THEORY_EXAMPLES)
        variants = res.get("variants", [])
        rows.append({"claim": res["claim"], "title": res["title"], "source": res["source"],
                     "symbolic": res["symbolic"]["status"] if res.get("symbolic") else "n/a",
                     "holds": res["holds"], "error": res.get("error"), "examples": res["examples"],
                     "counterexamples_expected": sum(bool(v["expected"]) for v in variants),
                     "counterexamples_found": sum(bool(v["expected"]) and bool(v["found"])
                                                  for v in variants)})
    atomic_write_json(cache, {"version": __version__, "ids": ids, "claims": rows})
    return rows


def spectral_table() -> list[dict[str, Any]]:
    """Growth with n of ALiBi's bias norm and the additive ratio, against RoPE's kernel norm and
    the multiplicative ratio, for one seeded content Gram (numerics)."""
    from .numerics.summary import bound_report

    ns = [64, 256, 1024, 4096]
    alibi = {g["n"]: g for g in bound_report("alibi", ns)["growth"]}
    rope = {g["n"]: g for g in bound_report("rope", ns)["growth"]}
    return [{"n": n, "alibi_norm": alibi[n]["norm"], "rope_norm": rope[n]["norm"],
             "ratio_additive": alibi[n]["ratio_additive"],
             "ratio_multiplicative": rope[n]["ratio_multiplicative"]} for n in ns]


def _run_mode(config: dict[str, Any]) -> str:
    train = config.get("train", config) if isinstance(config, dict) else {}
    model = train.get("model", {}) if isinstance(train, dict) else {}
    return "paper-code" if isinstance(model, dict) and model.get("code") == "paper" else "standard"


def check_store_mode(store: Any, mode: str) -> None:
    """Paper-code and standard runs never share a store (their reports would mix)."""
    for rec in store.records():
        if rec.kind == "experiment" and _run_mode(rec.config) != mode:
            raise PosencError(f"the store {store.root} holds {_run_mode(rec.config)} runs; give "
                              f"another --out for a {mode} sweep")


def report_mode(results: list[dict[str, Any]]) -> str:
    """'paper-code', 'standard' or 'mixed' from the runs' summaries."""
    modes = {"paper-code" if r["summary"].get("code") == "paper" else "standard" for r in results}
    return modes.pop() if len(modes) == 1 else "mixed"


MODE_TEXT = {
    "paper-code": "**Model code: paper-code.** Every run is the model of the paper's public code "
                  "(Qihuai27/Deposit-Pattern-Research), exactly, quirks included (docs/reproduction.md, "
                  "\"Paper-code mode\").",
    "standard": "**Model code: standard.** posenc's own model (pre-LN, keys and values from the "
                "residual stream, padding masked, final LayerNorm) with the catalogue's encodings.",
    "mixed": "**Model code: mixed** (paper-code and standard runs in one store: read with care).",
}


def _load_results(store_root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from .empirical.store import RunStore

    store = RunStore(store_root, create=False)
    results, rows = [], []
    for rec in store.records():
        if rec.kind != "experiment" or not store.is_done(rec.id):
            continue
        res = store.result(rec.id)
        res["run_id"], res["run_dir"] = rec.id, store.run_dir(rec.id)
        results.append(res)
        s = res["summary"]
        rows.append({"run": rec.id, "label": rec.label, "task": s["task"], "role": s["tags"]["role"],
                     "pe": s["pe"], "seed": s["seed"], "test_acc": s["test_acc"],
                     "epochs": s["epochs"], "train_seconds": round(s["seconds"], 2)})
    return results, rows


def build_report(store_root: str | Path, preset: Optional[str] = None, theory: bool = True) -> Path:
    """Write report.md, report.json, runs.csv and figures under STORE/report/ from stored runs
    (built in a private temporary folder moved into place: a failure leaves the old report)."""
    store_root = Path(store_root)
    results, rows = _load_results(store_root)
    if not results:
        raise PosencError(f"no finished experiment runs in {store_root}")
    out = store_root / "report"
    try:  # a private folder: two reports at once (or one beside a sweep) never mix files
        tmp = Path(tempfile.mkdtemp(prefix=".report.", dir=store_root))
        os.chmod(tmp, 0o755)
    except OSError as exc:
        raise WriteError.wrap(f"the report in {store_root}", exc) from None
    try:
        _write_report(tmp, store_root, results, rows, preset, theory)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, PosencError):
            raise WriteError.wrap(f"the report in {store_root}", exc) from None
        raise
    return out / "report.md"


def _write_report(tmp: Path, store_root: Path, results: list[dict[str, Any]],
                  rows: list[dict[str, Any]], preset: Optional[str], theory: bool) -> None:
    from .empirical.ablation import AblationTable
    from .empirical.plots import ablation_strip_plot
    from .proofs.dynamics_verdicts import evaluate_dynamics
    from .proofs.empirical_claims import accuracy_table, deposit_table, evaluate
    from . import report_figures as figs
    from .report_dynamics import dynamics_figure, dynamics_markdown, dynamics_results

    results.sort(key=lambda r: (r["summary"]["task"], r["summary"]["tags"]["role"], r["summary"]["seed"]))
    verdicts = evaluate(results) + evaluate_dynamics(results)
    acc = accuracy_table(results)
    deposits = deposit_table(results)
    first = results[0]["summary"]
    preset = preset or first["preset"]
    figs.accuracy_figure(acc, tmp / "accuracy.png")
    figs.partial_rope_figure(acc.get("distance", {}), first["n_heads"], tmp / "partial_rope.png")
    figs.deposit_heatmap(deposits or {"(none)": [[0.0]]}, tmp / "deposit_index.png")
    probes: dict[str, list[dict[str, float]]] = {}
    strips = []
    first_seed = _figure_seed(results)
    for res in results:
        s = res["summary"]
        role = s["tags"]["role"]
        if s["task"] == "distance" and res.get("probe") and role in ("absolute", "absolute+rope", "rope"):
            probes.setdefault(role, []).append(res["probe"]["probe_r2"])
        if s["task"] == "distance" and s["seed"] == first_seed and "zero" in res["ablation"]:
            name = f"ablation_{role.replace('+', '_')}.png"
            ablation_strip_plot(AblationTable.from_dict(res["ablation"]["zero"]), tmp / name,
                                title=f"{role} ({s['pe']}), distance, seed {first_seed}, "
                                      "zero ablation")
            strips.append((role, name, res))
    figs.probe_figure(probes or {"(none)": [{"embed": 0.0}]}, tmp / "probe.png")
    dyn = dynamics_results(results)
    dynamics_figure([r["run_dir"] for r in dyn], tmp / DYNAMICS_FIGURE)
    dyn_lines, dyn_payload = dynamics_markdown(dyn)
    from .report_measured import measured_markdown
    measured_lines, measured_payload = measured_markdown(results)
    claims = theory_claims(store_root) if theory else None
    spectra = spectral_table()
    md = _markdown(preset, verdicts, acc, deposits, strips, probes, results, claims, spectra,
                   dyn_lines + measured_lines)
    (tmp / "report.md").write_text(md)
    payload = {"preset": preset, "model_code": report_mode(results),
               "verdicts": [v.to_dict() for v in verdicts], "accuracy": acc,
               "deposit_index": deposits, "probe_r2": probes, "theory_claims": claims,
               "spectra": spectra, "dynamics": dyn_payload,
               "measured": measured_payload}
    (tmp / "report.json").write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    (tmp / "runs.csv").write_text(buf.getvalue())


def _fmt_iv(row: dict[str, Any]) -> str:
    import math
    if not math.isfinite(row["low"]):
        return f"{row['mean']:.1f}"
    return f"{row['mean']:.1f} [{row['low']:.1f}, {row['high']:.1f}]"


def _figure_seed(results: list[dict[str, Any]]) -> int:
    """The seed whose runs the per-run figures show: the store's lowest (0, or a calibration
    sweep's first, ``--first-seed``)."""
    return min(r["summary"]["seed"] for r in results)


def _markdown(preset, verdicts, acc, deposits, strips, probes, results, claims, spectra,
              dyn_lines) -> str:
    first = results[0]["summary"]
    seeds = sorted({r["summary"]["seed"] for r in results})
    lines = [f"# posenc reproduction report ({preset} preset, {report_mode(results)})", "",
             MODE_TEXT[report_mode(results)], "",
             "Gu et al., *Deconstructing Positional Information* (arXiv 2505.13027). "
             f"{len(results)} runs, seeds {seeds}. The paper's statements are as we read the "
             "paper's public summaries (its full text is not available to us): a refuted verdict "
             "refutes that reading. Each verdict is over seeds: the per-seed statistic's "
             "mean with a 95% Student-t interval; confirmed / refuted when the interval lies wholly "
             "on one side of the threshold, ceiling when an ordering of accuracies compares PEs that "
             "all average >= 98%, inconclusive otherwise. *Seeds agreeing*: on how many seeds the "
             "statistic lies on the predicted side; *resolves*: the interval's half-width, the "
             "smallest distance from the threshold these seeds decide at the observed spread "
             "(see posenc.proofs.verdicts).", ""]
    lines += [SECTIONS[0], "", "| claim | statement | statistic | paper | measured: mean [95% CI] | "
              "seeds | seeds agreeing | resolves | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for v in verdicts:
        lines.append(f"| {v.claim} | {v.statement} | {v.statistic} | {v.paper} | {v.measured} | "
                     f"{v.seeds} | {v.agreement} | {v.resolution} | **{v.verdict}** |")
    lines += ["", SECTIONS[1], "", "![accuracy](accuracy.png)", "",
              "Mean over seeds with a 95% Student-t interval on the logit scale (delta method; it "
              "stays inside 0-100%); *test SE*: one run's test-set binomial standard error "
              "(mean over seeds), the sampling error of a single accuracy.", "",
              "| task | PE (role) | spec | test accuracy %: mean [95% CI] | test SE (points) | "
              "per seed |", "|---|---|---|---|---|---|"]
    for task, roles in acc.items():
        for role, row in roles.items():
            vals = ", ".join(f"{v:.1f}" for v in row["values"])
            se = "-" if row.get("test_se") is None else f"±{row['test_se']:.1f}"
            lines.append(f"| {task} | {role} | `{row['pe']}` | {_fmt_iv(row)} | {se} | {vals} |")
    lines += ["", SECTIONS[2], "",
              "Accuracy after zeroing each head's output (`hook_z`) in turn, seed "
              f"{_figure_seed(results)}, distance task; "
              "the red star marks each layer's deposit head (largest drop).", ""]
    for role, name, res in strips:
        lines.append(f"**{role}** ![{role}]({name})")
        lines.append("")
        lines.append("| layer | baseline % | largest drop (points) | deposit head | deposit index | "
                     "gap to runner-up | mean attended distance |")
        lines.append("|---|---|---|---|---|---|---|")
        for la in res["ablation"]["zero"]["layers"]:
            md = la.get("mean_distance")
            dist = f"{min(md):.1f}..{max(md):.1f}" if md else "-"
            lines.append(f"| {la['layer']} | {100 * la['baseline_acc']:.1f} | "
                         f"{100 * la['largest_drop']:.1f} | {la['deposit_head']} | "
                         f"{la['deposit_index']:.2f} | {100 * la['runner_up_gap']:.1f} | {dist} |")
        lines.append("")
    lines += [SECTIONS[3], "", "![deposit index](deposit_index.png)", "",
              "Deposit index of a layer = largest single-head drop / sum of positive drops "
              "(1: one head carries the layer; 1/H: evenly spread; 0: no head matters).", "",
              "| PE (role) | " + " | ".join(f"layer {l}" for l in range(first["n_layers"])) + " |",
              "|---|" + "---|" * first["n_layers"]]
    for role, per_seed in deposits.items():
        means = [sum(s[l] for s in per_seed) / len(per_seed) for l in range(len(per_seed[0]))]
        lines.append(f"| {role} | " + " | ".join(f"{m:.2f}" for m in means) + " |")
    lines += ["", SECTIONS[4], "", "![partial rope](partial_rope.png)", "",
              "Distance accuracy with RoPE on the first k heads (the rest NoPE): k = 0 is NoPE, "
              f"k = {first['n_heads']} is full RoPE. See verdict E14.", "",
              SECTIONS[5], "", "![probe](probe.png)", "",
              "Held-out R² of a linear ridge probe predicting each token's absolute position from "
              "the residual stream at the input embedding and after each block (distance task). "
              "It measures whether absolute position stays linearly decodable, not which "
              "directions carry it (the residual stream carries x0 forward), so it does not decide "
              "EH; the PE-span share below does.", ""]
    if probes:
        sites = list(next(iter(probes.values()))[0])
        lines += ["| PE (role) | " + " | ".join(sites) + " |", "|---|" + "---|" * len(sites)]
        for role, per_seed in probes.items():
            lines.append(f"| {role} | " + " | ".join(
                f"{sum(p[s] for p in per_seed) / len(per_seed):.2f}" for s in sites) + " |")
    lines += [""] + dyn_lines + [SECTIONS[8], ""]
    if claims is None:
        lines += ["(skipped: the report was built with --no-theory; run `posenc verify`)", ""]
    else:
        lines += [f"Every registered claim, {THEORY_EXAMPLES} Hypothesis examples each (run "
                  "`posenc verify` for the full table with minimal counterexamples).", "",
                  "| claim | source | symbolic | holds on examples | counterexamples found / "
                  "expected |", "|---|---|---|---|---|"]
        for c in claims:
            holds = "yes" if c["holds"] else f"NO ({c['error']})" if c["error"] else "NO"
            lines.append(f"| {c['claim']}: {c['title']} | {c['source']} | {c['symbolic']} | "
                         f"{holds} ({c['examples']}) | {c['counterexamples_found']} / "
                         f"{c['counterexamples_expected']} |")
        lines.append("")
    lines += [SECTIONS[9], "",
              "A seeded rank-8 content Gram A (n x n) coupled with each PE's positional matrix: "
              "additively ‖A+B‖₂/‖A‖₂ (ALiBi bias B, head 0 of 8, press slopes) and "
              "multiplicatively ‖A∘K‖₂/‖A‖₂ (average RoPE kernel K, head dim 64: PSD with unit "
              "diagonal, so ≤ 1 by the Schur product theorem).", "",
              "| n | ‖B_ALiBi‖₂ | ‖K_RoPE‖₂ | additive ratio | multiplicative ratio |",
              "|---|---|---|---|---|"]
    for r in spectra:
        lines.append(f"| {r['n']} | {r['alibi_norm']:.4g} | {r['rope_norm']:.4g} | "
                     f"{r['ratio_additive']:.4g} | {r['ratio_multiplicative']:.4g} |")
    lines += ["", SECTIONS[10], "",
              f"- preset `{preset}`: {first['n_layers']} layers x {first['n_heads']} heads, "
              f"{first['n_params']} parameters ({first['pe']}), {first['epochs']} epochs, "
              f"{first['n_test']} test examples per run;",
              "- ablation: zero mode at `hook_z`, on the first test examples of each run;",
              "- per-run timings: `runs.csv` (kept out of this file so that a resumed sweep "
              "reproduces it exactly).", ""]
    return "\n".join(lines)
