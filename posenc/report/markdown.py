"""The report's markdown: one function per section over one frozen :class:`ReportInputs`.

:func:`render` lays the sections out in :data:`SECTIONS` order; the numbers come from
:mod:`posenc.verdicts` (verdicts, accuracy and deposit tables), the runs (ablation strips,
probes), the dynamics and measured sections (:mod:`.dynamics`, :mod:`.measured`, given as ready
lines), the theory claims and the spectral table (:mod:`.theory_tables`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from ..verdicts.accuracy_deposit import LAYER_MATTERS, layer_means
from ..verdicts.measured import DEPOSIT_DROP, OTHER_HEADS
from ..verdicts.accuracy_runs import LEARNED_MARGIN, Runs
from ..verdicts.verdict import CLEAN_BAYES, ceiling_rule
from .dynamics import SECTION as DYNAMICS_SECTION
from .measured import SECTION as MEASURED_SECTION, site_order
from .table import md_header, md_row, value_span as _span
from .theory_tables import THEORY_EXAMPLES
from ..verdicts.words import PAPER_PRESET
from .replication import exact_cell
from ..verdicts.trained import (FIXED_BUDGET_RISE, FIXED_BUDGET_SPAN, stopping_table,
                                trained_criterion, fixed_budget)

if TYPE_CHECKING:
    from ..empirical.pipeline.experiment_result import ExperimentResult

SECTIONS = ("## Verdicts", "## Accuracy per PE and task (Fig. 2)",
            "## Training to plateau (the trained criterion)",
            "## Single-head ablation per layer (Fig. 4)", "## Deposit index per PE and layer",
            "## Partial RoPE (Fig. 6)", "## Absolute+RoPE: position probe per layer",
            DYNAMICS_SECTION, MEASURED_SECTION, "## Theory claims (posenc verify)",
            "## Spectral contraction vs expansion (posenc bound)",
            "## Setup")


@dataclass(frozen=True)
class ReportInputs:
    """Everything the markdown shows, computed beforehand (:func:`posenc.report.build.build_report`).

    ``strips``: (role, figure file, its runs: every seed's) of each PE's ablation strip; ``theory_claims``:
    None when the report is built with ``--no-theory``; ``measured_sections``: the ready lines
    of the dynamics and measured sections."""

    preset: str
    results: list[ExperimentResult]
    verdicts: list[Any]
    accuracy: dict[str, dict[str, dict[str, Any]]]
    deposits: dict[str, list[list[Optional[float]]]]
    strips: list[tuple[str, str, list[ExperimentResult]]]
    probes: dict[str, list[dict[str, float]]]
    theory_claims: Optional[list[dict[str, Any]]]
    spectra: list[dict[str, Any]]
    measured_sections: list[str]
    replication: list[str] = field(default_factory=list)  # .replication's lines, or none
    ceilings: list[dict[str, Any]] = field(default_factory=list)  # .ceiling.task_ceilings
    optional_stopping: Optional[str] = None  # verdicts.looks.optional_stopping_text, or none
    #: .replication's rows (claim, first, second, replicated) when a replication exists, and the
    #: replication's seeds: the verdict table then shows both words and the replicated one
    replicated: list[dict[str, Any]] = field(default_factory=list)
    replica_seeds: list[int] = field(default_factory=list)
    #: the examples the head ablations ran on, in words (.ablation_source.ablation_source_text)
    ablation_source: str = "the first test examples of each run"
    #: role -> per seed, the layers one head of which carries alone
    #: (:func:`~posenc.verdicts.accuracy_deposit.single_head_layers`)
    single_head: dict[str, list[Optional[list[int]]]] = field(default_factory=dict)
    #: the sentence naming the store's runs that have not finished (build.left_out_text), or none
    left_out: Optional[str] = None


def report_mode(results: list[ExperimentResult]) -> str:
    """'paper-code', 'standard' or 'mixed' from the runs' summaries."""
    modes = {"paper-code" if r.paper_code else "standard" for r in results}
    return modes.pop() if len(modes) == 1 else "mixed"


MODE_TEXT = {
    "paper-code": "**Model code: paper-code.** Every run is the model of the paper's public code "
                  "(Qihuai27/Deposit-Pattern-Research), its architecture exactly, quirks included "
                  "(docs/methods.md, \"Paper-code mode\"); its sizes, dropout and training "
                  "are the preset's (`posenc encodings` lists where a preset differs from the "
                  "code).",
    "standard": "**Model code: standard.** posenc's own model (pre-LN, keys and values from the "
                "residual stream, padding masked, final LayerNorm) with the catalogue's encodings.",
    "mixed": "**Model code: mixed** (paper-code and standard runs in one store: read with care).",
}


def _fmt_iv(row: dict[str, Any]) -> str:
    if not math.isfinite(row["low"]):
        return f"{row['mean']:.1f}"
    return f"{row['mean']:.1f} [{row['low']:.1f}, {row['high']:.1f}]"


def render(inp: ReportInputs) -> str:
    """report.md's text."""
    first = inp.results[0].summary
    lines = _header(inp) + _verdicts(inp) + inp.replication + _accuracy(inp) + _training(inp)
    lines += _ablation(inp)
    lines += _deposits(inp, first)
    lines += _partial_and_probe(inp, first) + [""] + inp.measured_sections + _theory(inp)
    lines += _spectra(inp) + _setup(inp, first)
    return "\n".join(lines)


def _header(inp: ReportInputs) -> list[str]:
    seeds = sorted({r.seed for r in inp.results})
    mode = report_mode(inp.results)
    return [f"# posenc reproduction report ({inp.preset} preset, {mode})", "",
            *([smoke_notice(inp.results), ""] if inp.preset == "smoke" else []),
            MODE_TEXT[mode], "",
            "Gu et al., *Deconstructing Positional Information* (arXiv 2505.13027). "
            f"{len(inp.results)} runs, seeds {seeds}. The paper's statements are as we read the "
            "paper's public summaries (its full text is not available to us); a claim whose "
            "wording admits several readings is judged in each, each its own row. Each verdict "
            "is over seeds: the per-seed statistic's mean with a 95% Student-t interval; "
            "confirmed / against when the interval lies wholly on one side of the threshold, "
            "ceiling when an ordering of accuracies compares two sides (a PE and the best of "
            "those it is compared with) that both average "
            f"{ceiling_text(inp.results)}, inconclusive otherwise. *Seeds agreeing*: on how many "
            "seeds the statistic lies on the predicted side; *resolves*: the interval's half-width, the "
            "smallest distance from the threshold these seeds decide at the observed spread "
            "(see posenc.verdicts).", ""] + ([inp.left_out, ""] if inp.left_out else []) + \
        [words_text(inp.verdicts), "", multiplicity_text(inp.verdicts), ""]


def words_text(verdicts: list[Any]) -> str:
    """The report's statement of its verdict words (:mod:`posenc.verdicts.words`) and of the
    exact test beside each interval (:mod:`posenc.verdicts.exact`)."""
    regimes = sorted({v.regime for v in verdicts if v.regime})
    regime = ", ".join(regimes) or "not recorded"
    scaled = [r for r in regimes if r != PAPER_PRESET]
    return ("**Verdict words name their regime** (here: " + regime + "). A decision holds for "
            "the preset whose runs made it: *confirmed at PRESET*, *inconclusive at PRESET*, "
            "*ceiling at PRESET*; a decision against the claim reads *refuted at "
            f"{PAPER_PRESET}* only at the paper's own size, and *not reproduced at PRESET* at "
            "every preset scaled down from it"
            + (f" ({', '.join(scaled)} here)" if scaled else "") + ": the claim did not hold "
            "in that regime, which says nothing of the paper's. **Exact test beside each "
            "interval**: the exact sign-flip test of the per-seed statistic's mean (all 2^n "
            "sign patterns of the seeds' deviations from the threshold; null: each deviation as "
            "likely negative as positive), its one-sided p on the decided side in column "
            "*sign-flip p*; a claim of several conditions takes the largest p of its conditions "
            "for a confirmation and, for a decision against, the smallest of those decided "
            "against, at the Bonferroni-divided level. With 6 seeds the smallest p is 1/64 = "
            "0.016, so a decision with a seed on the other side can fail it; *replicated* needs "
            "both seed sets' intervals to decide the same way and the sign-flip test to agree "
            "(p <= the interval's one-sided 2.5%) on both.")


def ceiling_text(results: list[Any]) -> str:
    """The verdicts' ceiling rule on ``results`` (:meth:`~posenc.verdicts.accuracy_runs.Runs.ceiling_rule`
    per task): one rule when every task's is the same (">= 98%" with the clean samplers), else
    each task's."""
    runs = Runs(results)
    rules = {t: runs.ceiling_rule(t, runs.roles(t)) for t in sorted({t for t, _ in runs.by})}
    if len(set(rules.values())) <= 1:
        return next(iter(rules.values()), ceiling_rule(CLEAN_BAYES))
    return "at the ceiling of their task (" + "; ".join(f"{t}: {r}" for t, r in rules.items()) + ")"


def multiplicity_text(verdicts: list[Any]) -> str:
    """The report's statement of how it handles multiple tests (posenc.verdicts.verdict,
    *Multiplicity*), with the number of primary tests this report judged."""
    tested = sum(1 for v in verdicts if v.seeds >= 2)
    shown = sum(1 for v in verdicts for p in v.parts if not p.get("primary", True))
    return ("**Multiplicity: one primary statistic per claim** (fixed in posenc.verdicts; chosen after "
            "the quick preset's seeds 0-5 had been seen and before its replication on seeds "
            "2000-2005 ran, so at the quick preset only its replication tests the choice: "
            "docs/methods.md). Each claim's "
            "verdict is that of its primary part alone; its other parts "
            f"({shown} in this report) are shown, marked *[shown, not judged]*, and never enter "
            f"a verdict. {tested} primary tests had two or more seeds, each at 95% (a decision "
            "either way has error <= 2.5% under its null); no correction is applied across "
            "claims: each claim is its own hypothesis, read on its own (by chance alone about "
            f"{0.05 * tested:.1f} of them would be decided wrongly if every one sat exactly on "
            "its threshold). RA's primary part compares the relative table's change with its "
            "run-to-run noise (the sd of the change over seeds), Prop 6.1 compares the early "
            "coherence with its sign-flip randomisation on each run's own signals (exact under "
            "sign symmetry), Prop 6.2 with the exact random-sign null, with its assumption "
            "checked on each run, and Thm 6.1 takes the margin relative to the layer's mean "
            "(the training-dynamics section).")


#: a verdict-table cell holds at most about this many characters; the rest goes to a note below
CELL_CHARS = 120


def short_cell(text: Any, claim: str, column: str, notes: list[str]) -> str:
    """``text`` as a verdict-table cell: itself when it is at most :data:`CELL_CHARS` long, else
    its first words (cut at a word boundary, "...") and a note number; the whole text is then
    appended to ``notes`` as the list item ``- [n] claim, column: text``."""
    text = str(text)
    if len(text) <= CELL_CHARS:
        return text
    n = len(notes) + 1
    mark = f" ... [{n}]"
    cut = text[:CELL_CHARS - len(mark)]
    if " " in cut:
        cut = cut[:cut.rindex(" ")]
    notes.append(f"- [{n}] {claim}, {column}: {text}")
    return cut.rstrip(" ,;:(") + mark


def smoke_notice(results: list[Any]) -> str:
    """The smoke preset's warning: its verdicts mean nothing."""
    seeds = len({r.seed for r in results})
    return (f"**A smoke run: its verdicts mean nothing.** A tiny model of {_params(results)} on "
            f"{seeds} seed(s) and a tiny task, trained for seconds: the report shows every "
            "stage run and what a report holds, not what posenc found (docs/results.md).")


def _verdicts(inp: ReportInputs) -> list[str]:
    """The headline table; with a replication, this seed set's word, the replication's and the
    replicated verdict (decided only where both agree, in bold: the word a reader takes away)."""
    rows = {r["claim"]: r for r in inp.replicated}
    head = ["claim", "statement", "statistic", "paper", "measured: mean [95% CI]", "seeds",
            "seeds agreeing", "resolves", "sign-flip p", "verdict"]
    if rows:
        seeds = sorted({r.seed for r in inp.results})
        head[-1] = f"verdict, seeds {_span(seeds)}"
        head += [f"verdict, seeds {_span(inp.replica_seeds)}", "replicated"]
    lines = [SECTIONS[0], "", *md_header(head)]
    if inp.preset == "smoke":
        lines[2:2] = [smoke_notice(inp.results), ""]
    if rows:
        lines[2:2] = ["Each claim's verdict on this report's seeds, on the replication's "
                      "(section *Replication on a second seed set*) and the replicated verdict: "
                      "decided only where both seed sets give the same decided word.", ""]
    notes: list[str] = []
    for v in inp.verdicts:
        cells = [v.claim, *(short_cell(text, v.claim, name, notes) for name, text in (
                     ("statement", v.statement), ("statistic", v.statistic), ("paper", v.paper),
                     ("measured", v.measured))),
                 v.seeds, short_cell(v.agreement, v.claim, "seeds agreeing", notes),
                 short_cell(v.resolution, v.claim, "resolves", notes), exact_cell(v.exact)]
        r = rows.get(v.claim)
        cells += [f"**{v.word}**"] if not rows else \
            [v.word, r["second"] if r else "missing", f"**{r['replicated'] if r else 'undecided'}**"]
        lines.append(md_row(cells))
    if notes:
        lines += ["", "**Notes to the table** (a cell's text past "
                  f"{CELL_CHARS} characters):", "", *notes]
    if inp.optional_stopping:
        lines += ["", inp.optional_stopping]
    return lines


def _accuracy(inp: ReportInputs) -> list[str]:
    lines = ["", SECTIONS[1], "", "![accuracy](accuracy.png)", "",
             "Mean over seeds with a 95% Student-t interval on the logit scale (delta method; it "
             "stays inside 0-100%); *test SE*: one run's test-set binomial standard error "
             "(mean over seeds), the sampling error of a single accuracy; *chance*: the test "
             "split's majority-label rate; *floor*: the larger of chance and the best accuracy "
             "from an example's length alone (a distance model that learned nothing of positions "
             "still reads the length; exact for the clean sampler, a lower bound under the "
             "paper's sampler, whose extra trigger copies tell an order-blind model more than "
             "the length); *learned*: the mean is "
             f"at least {LEARNED_MARGIN:g} points above the floor -- a PE that did not learn a "
             "task stays out of that task's deposit statistics (its ablation drops are noise).",
             "", "| task | PE (role) | spec | test accuracy %: mean [95% CI] | test SE (points) | "
             "chance % | floor % | learned | per seed |", "|---|---|---|---|---|---|---|---|---|"]
    unlearned = []
    for task, roles in inp.accuracy.items():
        for role, row in roles.items():
            vals = ", ".join(f"{v:.1f}" for v in row["values"])
            se = "-" if row.get("test_se") is None else f"±{row['test_se']:.1f}"
            chance = "-" if row.get("chance") is None else f"{row['chance']:.1f}"
            floor = "-" if row.get("floor") is None else f"{row['floor']:.1f}"
            learned = "yes" if row.get("learned", True) else "**no**"
            if not row.get("learned", True):
                unlearned.append(f"{role} ({task})")
            lines.append(md_row([task, role, f"`{row['pe']}`", _fmt_iv(row), se, chance, floor,
                                 learned, vals]))
    lines += ["", "Did not learn their task (left out of its deposit statistics): "
              + (", ".join(unlearned) if unlearned else "none") + "."]
    diverged = [f"{r.role} ({r.task}) seed {r.seed} at step {r.summary['diverged']['step']}"
                for r in sorted(inp.results, key=lambda r: (r.task, r.role, r.seed))
                if r.summary.get("diverged")]
    if diverged:
        lines += ["", "Diverged (training stopped at a non-finite loss; a run whose kept model "
                      "is not finite has no ablation or probe and leaves the deposit statistics "
                      "on its seed): " + ", ".join(diverged) + "."]
    return lines


def _training(inp: ReportInputs) -> list[str]:
    """Where each PE's runs stopped, and the trained criterion (posenc.verdicts.trained)."""
    table = stopping_table(inp.results)
    fixed = sum(row["fixed"] for row in table.values())
    total = sum(row["runs"] for row in table.values())
    validation = "after every epoch the model is evaluated on a validation split carved from " \
                 "the training data (the test split is never read for it)"
    rising = "the seeds whose validation accuracy rose by " \
             f"{FIXED_BUDGET_RISE:g} points or more over their last {FIXED_BUDGET_SPAN} epochs, " \
             "still learning as the budget ran out"
    if fixed and fixed == total:  # (paper-small)
        intro = "A fixed budget: every run trains its maximum epochs (a patience of at least " \
                "the maximum: the stopping rule fires only on a perfect validation accuracy; " \
                f"every epoch runs, as in the paper's code); {validation}, and the run keeps " \
                "its best-validation-accuracy weights. " \
                f"*at the maximum*: {rising}."
    else:
        intro = f"Early stopping: {validation}; a run stops once {_stop_rule(inp.results)}, " \
                "or at its maximum epochs, and keeps its best-validation-accuracy weights. " \
                "*stopped early*: runs whose early stop fired before the maximum; *at the " \
                "maximum*: seeds whose rule had not fired when their epochs ran out (still " \
                "improving by the rule's measure -- under a rule that reads the loss, perhaps " \
                "only the loss; their models may not have finished learning)." + \
                (f" {fixed} of {total} runs trained at a **fixed budget** (a patience of at " \
                 "least their maximum epochs: the rule fires only on a perfect validation " \
                 "accuracy): for them *at the maximum* " \
                 f"lists {rising}." if fixed else "")
    lines = ["", SECTIONS[2], "", intro,
             "",
             "| task | PE (role) | runs | stopped early | epochs trained | epoch kept | "
             "max epochs | batch | at the maximum | diverged |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (task, role), row in table.items():
        early = "no early stopping" if row["early"] is None else \
            "fixed budget" if row["fixed"] == row["runs"] else f"{row['early']} of {row['runs']}"
        at_max, diverged = (", ".join(str(s) for s in row[k]) or "-" for k in ("at_max", "diverged"))
        lines.append(md_row([task, role, row["runs"], early, _span(row["stopped"]),
                             _span(row["best"]), _span(row["max_epochs"]), _span(row["batch"]),
                             at_max, diverged]))
    lines += ["", "The trained criterion (say nothing about which claim comes out; "
              "docs/methods.md, \"The stopping rule\"):", "",
              "| part | rule | measured | met |", "|---|---|---|---|"]
    for c in trained_criterion(inp.results):
        met = "n/a" if c.met is None else "yes" if c.met else "**no**"
        lines.append(md_row([c.name, c.rule, c.measured, met]))
    return lines


def _ablation(inp: ReportInputs) -> list[str]:
    lines = ["", SECTIONS[3], "",
             "Accuracy after zeroing each head's output (`hook_z`) in turn, distance task. "
             "Each figure shows every seed of its PE: in each layer the heads sorted by their "
             "accuracy after ablation, one colour per seed, a short line at that seed's "
             "baseline and a red star at its deposit head (largest drop). The table under it "
             "is the PE's lowest seed's.", ""]
    for role, name, runs in inp.strips:
        res = runs[0]  # the runs come sorted by seed
        lines.append(f"**{role}** ({_seed_list([r.seed for r in runs])}; table: seed {res.seed}) "
                     f"![{role}]({name})")
        lines.append("")
        lines += md_header(["layer", "baseline %", "largest drop (points)", "deposit head",
                            "deposit index", "gap to runner-up", "mean attended distance"])
        for la in res.ablation["zero"]["layers"]:
            md = la.get("mean_distance")
            dist = f"{min(md):.1f}..{max(md):.1f}" if md else "-"
            lines.append(md_row([la["layer"], f"{100 * la['baseline_acc']:.1f}",
                                 f"{100 * la['largest_drop']:.1f}", la["deposit_head"],
                                 f"{la['deposit_index']:.2f}", f"{100 * la['runner_up_gap']:.1f}",
                                 dist]))
        lines.append("")
    return lines


def _seed_list(seeds: list[int]) -> str:
    """``seeds 0-5`` for a run of consecutive seeds, else ``seeds 0, 2``; ``seed 3`` for one."""
    s = sorted(seeds)
    if len(s) == 1:
        return f"seed {s[0]}"
    return "seeds " + (f"{s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) else
                       ", ".join(map(str, s)))


def _deposits(inp: ReportInputs, first: dict[str, Any]) -> list[str]:
    lines = [SECTIONS[4], "", "![deposit index](deposit_index.png)", "",
             "Deposit index of a layer = largest single-head drop / sum of positive drops "
             "(1: one head carries the layer; 1/H: evenly spread). A layer whose largest drop is "
             f"below {LAYER_MATTERS:g} points (AD's \"almost nothing\") has no deposit to index "
             "and is left out of its mean: `(k of n)` = it mattered on k of the PE's n seeds, "
             "`-` = on none. Mean over seeds.", "",
             "| PE (role) | " + " | ".join(f"layer {l}" for l in range(first["n_layers"])) + " |",
             "|---|" + "---|" * first["n_layers"]]
    for role, per_seed in inp.deposits.items():
        cells = [("-" if m is None else f"{m:.2f}" if k == len(per_seed)
                  else f"{m:.2f} ({k} of {len(per_seed)})") for m, k in layer_means(per_seed)]
        lines.append(md_row([role, *cells]))
    return lines + _single_head(inp.single_head)


def _single_head(table: dict[str, list[Optional[list[int]]]]) -> list[str]:
    """The paper's pattern counted per PE (descriptive: no verdict reads it)."""
    if not table:
        return []
    lines = ["", f"**Layers one head carries alone** (descriptive, no verdict reads it): a layer "
             f"where removing one head costs at least {DEPOSIT_DROP:g} points and every other "
             f"head of that layer under {OTHER_HEADS:g} (AD's two thresholds, read within one "
             "layer) -- the paper's single-head pattern. Per seed, in seed order: the layers "
             "that hold it, `-` none, `?` a run stored without per-head drops.", "",
             *md_header(["PE (role)", "runs with such a layer", "layers per seed"])]
    for role, per_seed in table.items():
        known = [s for s in per_seed if s is not None]
        lines.append(md_row([role, f"{sum(1 for s in known if s)} of {len(known)}",
                             " / ".join("?" if s is None else ",".join(map(str, s)) or "-"
                                        for s in per_seed)]))
    return lines


def _partial_and_probe(inp: ReportInputs, first: dict[str, Any]) -> list[str]:
    lines = ["", SECTIONS[5], "", "![partial rope](partial_rope.png)", "",
             "Distance accuracy with RoPE on the first k heads (the rest NoPE): k = 0 is NoPE, "
             f"k = {first['n_heads']} is full RoPE. See verdict E14.", "",
             SECTIONS[6], "", "![probe](probe.png)", "",
             "Held-out R² of a linear ridge probe predicting each token's absolute position from "
             "the residual stream at the input embedding and after each block (distance task). "
             "It measures whether absolute position stays linearly decodable, not which "
             "directions carry it (the residual stream carries x0 forward), so it does not decide "
             "EH; the PE-span share below does.", ""]
    if inp.probes:
        sites = site_order(next(iter(inp.probes.values()))[0])
        lines += md_header(["PE (role)", *sites])
        for role, per_seed in inp.probes.items():
            lines.append(md_row([role, *(f"{sum(p[s] for p in per_seed) / len(per_seed):.2f}"
                                         for s in sites)]))
    return lines


def _theory(inp: ReportInputs) -> list[str]:
    lines = [SECTIONS[9], ""]
    if inp.theory_claims is None:
        return lines + ["(skipped: the report was built with --no-theory; run `posenc verify`)", ""]
    lines += [f"Every registered claim, {THEORY_EXAMPLES} Hypothesis examples each (run "
              "`posenc verify` for the full table with minimal counterexamples).", "",
              "| claim | source | symbolic | holds on examples | counterexamples found / "
              "expected |", "|---|---|---|---|---|"]
    for c in inp.theory_claims:
        holds = "yes" if c["holds"] else f"NO ({c['error']})" if c["error"] else "NO"
        lines.append(md_row([f"{c['claim']}: {c['title']}", c["source"], c["symbolic"],
                             f"{holds} ({c['examples']})",
                             f"{c['counterexamples_found']} / {c['counterexamples_expected']}"]))
    return lines + [""]


def _spectra(inp: ReportInputs) -> list[str]:
    if not inp.spectra:
        return [SECTIONS[10], ""]
    first = inp.spectra[0]
    scales = list(first.get("ratio_additive_scaled", {}))
    lines = [SECTIONS[10], "",
             "A seeded rank-8 content Gram A (n x n, E A_ii = 1; its norm ‖A‖₂ is in the table) "
             "coupled with each PE's positional matrix: additively ‖A+B‖₂/‖A‖₂ (ALiBi bias B, "
             "head 0 of 8, press slopes) and multiplicatively ‖A∘K‖₂/‖A‖₂ (average RoPE kernel "
             "K, head dim 64: PSD with unit diagonal, so ≤ 1 by the Schur product theorem). A "
             "theory table, the same in every report: its slopes, head dimension and lengths "
             "are not those of this store's models.", "",
             "The two ratios are not alike. (cA)∘K = c(A∘K), so the multiplicative ratio is the "
             "same at every content scale c; ‖cA+B‖₂/‖cA‖₂ runs from ‖B‖₂/‖cA‖₂ down to 1 as c "
             "grows, so the additive ratio says how large the bias is against *this* content's "
             "norm (columns c = " + ", ".join(scales) + ", and c = ‖B‖₂/‖A‖₂, where content "
             "and bias are equal in norm).", "",
             "The Schur contraction is a statement about the plane-averaged kernel K applied to "
             "ONE content matrix shared by every rotary plane, not about RoPE's own logit: with "
             "each plane's own content (" + str(first.get("per_plane_content")) + "), "
             "‖L_RoPE‖₂/‖L_NoPE‖₂ from the same content is in the last column (mean [min, max] "
             "over the seeds).", "",
             "| n | ‖A‖₂ | ‖B_ALiBi‖₂ | ‖K_RoPE‖₂ | additive ratio | "
             + " | ".join(f"additive, c = {c}" for c in scales if c != "1")
             + " | additive, ‖cA‖₂ = ‖B‖₂ | multiplicative ratio (every c) | "
             "RoPE per-plane ‖L_RoPE‖₂/‖L_NoPE‖₂ |",
             "|---|---|---|---|---|" + "---|" * len([c for c in scales if c != "1"])
             + "---|---|---|"]
    for r in inp.spectra:
        pp = r.get("ratio_per_plane") or {}
        plane = (f"{pp['mean']:.4g} [{pp['min']:.4g}, {pp['max']:.4g}]" if pp else "-")
        scaled = [f"{r['ratio_additive_scaled'][c]:.4g}" for c in scales if c != "1"]
        lines.append(md_row([r["n"], f"{r['content_norm']:.4g}", f"{r['alibi_norm']:.4g}",
                             f"{r['rope_norm']:.4g}", f"{r['ratio_additive']:.4g}", *scaled,
                             f"{r['ratio_additive_balanced']:.4g}",
                             f"{r['ratio_multiplicative']:.4g}", plane]))
    return lines


def _stop_rule(results: list[Any]) -> str:
    """The stopping rule of the runs' summaries, in words (the patience and what counts as
    progress: ``stop_on``, accuracy when not recorded)."""
    stops = [s for r in results if isinstance(s := r.summary.get("early_stopping"), dict)]
    if not stops:
        return "the preset's patience epochs have not improved its validation accuracy"
    patience = _span(sorted({int(s["patience"]) for s in stops}))
    on = sorted({s.get("stop_on", "accuracy") for s in stops})
    what = {"accuracy": "raised its best validation accuracy",
            "accuracy_or_loss": "raised its best validation accuracy nor lowered its best "
                                "validation loss"}
    if on == ["accuracy"]:
        return f"{patience} epochs in a row have not {what['accuracy']}"
    if on == ["accuracy_or_loss"]:
        return f"{patience} epochs in a row have neither {what['accuracy_or_loss']}"
    return f"its rule fired ({patience} epochs without progress; runs differ in stop_on: " \
           f"{', '.join(on)})"


def _epochs(results: list[Any]) -> str:
    """The epochs the runs trained: a fixed count, or under early stopping the maximum and the
    span actually trained (one run's count is not the preset's)."""
    trained = sorted({int(r.summary["epochs"]) for r in results})
    stops = [r.summary.get("early_stopping") for r in results]
    if not stops or not all(isinstance(s, dict) for s in stops):
        return f"{_span(trained)} epochs"
    if all(fixed_budget(s) for s in stops):  # (paper-small: every epoch runs, as the paper code)
        return f"a fixed budget of {_span(trained)} epochs (no early stopping: a patience of " \
               "the maximum; the best validation epoch's weights kept)"
    on = " / ".join(o.replace("_", " ") for o in sorted({s.get("stop_on", "accuracy")
                                                          for s in stops}))
    patience = _span(sorted({int(s["patience"]) for s in stops}))
    return (f"early stopping (patience {patience} on validation {on}) at most "
            f"{_span(sorted({int(s['max_epochs']) for s in stops}))} epochs, "
            f"{_span(trained)} trained")


def _params(results: list[Any]) -> str:
    """The runs' parameter counts: one count, or the range over PEs (the relative table and MLA
    add parameters)."""
    counts = {int(r.summary["n_params"]) for r in results}
    if len(counts) == 1:
        return f"{counts.pop()} parameters ({results[0].summary['pe']})"
    return f"{_span(sorted(counts))} parameters (by PE)"


def _ceilings(ceilings: list[dict[str, Any]]) -> list[str]:
    """The Bayes-ceiling line; where a task's ceiling is under 100% the verdicts' ceiling rule
    reads each run's recorded estimate instead (posenc.verdicts.verdict.ceiling_rule), said so."""
    if not ceilings:
        return []
    line = "- best possible accuracy (Bayes ceiling) of each task: " + "; ".join(
        f"{c['task']} ({c['sampler']} sampler) {c['text']}" for c in ceilings)
    if any(c["accuracy"] < 100 for c in ceilings):
        from ..empirical.bayes_ceiling import RECORDED_EXAMPLES
        line += " (the verdicts' ceiling rule reads instead the estimate each run recorded, " \
                f"over {RECORDED_EXAMPLES:,} examples -- the value its words print -- or for a " \
                "run stored without one the same estimate made from its config)"
    return [line + ";"]


def _setup(inp: ReportInputs, first: dict[str, Any]) -> list[str]:
    return ["", SECTIONS[11], "",
            f"- preset `{inp.preset}`: {first['n_layers']} layers x {first['n_heads']} heads, "
            f"{_params(inp.results)}, {_epochs(inp.results)}, "
            f"{first['n_test']} test examples per run;",
            *_ceilings(inp.ceilings),
            f"- ablation: zero mode at `hook_z`, on {inp.ablation_source};",
            "- per-run timings: `runs.csv`, and the wall time per phase (training, ablation, "
            "probe, this report): `timings.md` (kept out of this file so that a resumed sweep "
            "reproduces it exactly).", ""]
