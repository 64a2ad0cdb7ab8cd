"""Claims of Gu et al. (arXiv 2505.13027) measured as the paper states them, and negative controls.

Judged on the stored results of a reproduction sweep like :mod:`.empirical` (a per-seed
statistic ``d_s``, its Student-t interval over seeds, :func:`~.verdict.judge`).
A statistic whose recording a run lacks (a run trained before it existed) leaves that seed
out; with no seed left the part is ``inconclusive`` and says "not recorded".  The statistics:

EH   Absolute+RoPE: "the additive positional directions vanish (are completely displaced)
     after layer 2".  With ``share_l`` the share of the residual stream's positional energy
     (position means, centred) in the span of the absolute PE table's principal directions at
     site l (:func:`posenc.empirical.analysis.probe.span_share`; ``chance`` = k / d_model, the
     share of a random direction, recorded as ``pe_span_chance``) and ``after`` its mean over
     blocks l >= 1 (block 1 = after layer 2): **(a)** the hybrid's *retained excess* ``R =
     (after - chance) / (share(embed) - chance)`` < :data:`DISPLACED` -- at most a tenth of the
     input's excess over chance left in the span.  Its null, the claim's negation, is that
     more stays there.  The tolerance is ours (the paper gives none; "completely" read as "at
     most a tenth"), chosen after the quick runs had been seen (R 0.4-0.6 there: any tolerance
     below R's lower interval end gives the same verdict).  Shown: (b) the comparison with the
     sinusoidal-only model, the former primary, ``drop(absolute+rope) - drop(absolute)``
     > 0 with ``drop = share(embed) - after`` (its residual stream also carries x0 forward).
NC1  No RoPE single-head deposit on the count task: **(a)** ``DI(rope, distance) - DI(rope,
     count)`` > 0; shown: (b) the largest single-head drop, distance minus count, in points
     (same seed, zero ablation; DI = the deposit index of the layer with the largest drop).
NC2  The deposit's depth, read three ways (each its own claim): RoPE on distance, the largest
     single-head drop in the reading's layers minus the largest in any other layer, > 0 points
     -- "NC2 (layer 0)": layer index 0; "NC2 (layer 1)": layer index 1 (the paper code writes
     0-indexed ablation folders, and the paper-size anchor's deposit is there); "NC2 (shallower
     half)": the layers below n_layers / 2 (:data:`NC2_READINGS`).
NC3  Learned absolute PE (the paper code's "random" PE) as one more additive PE:
     **(b)** ``DI(rope) - DI(learned)`` > 0; shown: (a) ``acc(rope) - acc(learned)``; distance.
S    (:mod:`.stability`): the gradient norm's per-epoch CV over matched epochs, additive PEs
     against RoPE.
RA   A relative PE "attenuates its bias toward zero" on the count task.  With ``A =
     log(final / initial)`` of the learned per-offset table's head-centred RMS (mean over
     layers; final = the epoch whose weights the run kept), **(a)** the attenuation beyond
     drift ``A(count) - A_null`` < 0 (Student-t interval over seeds).  A learned table moves
     under any training: AdamW on gradients of pure noise grows a table of RMS 0.020 to
     0.047-0.054 over the 2,500-4,800 steps of the quick preset's runs, so ``A`` alone mostly
     measures the optimiser.  ``A_null`` (:mod:`.drift_null`) is that growth for each run's
     own schedule (its peak rate, betas, weight decay, warm-up and cosine over its maximum
     steps, recorded as ``summary.schedule`` or read from the run's config) up to the steps it
     trained: the same initial table under AdamW on i.i.d. Gaussian gradients (no signal;
     Adam's update does not depend on the gradients' scale).  Its null is the claim's
     negation -- the table shrinks no more than a table of noise would.  Confirmed when the
     interval lies below 0, refuted when above (the table grew beyond drift: it learned
     something).  Shown: (b) ``A(count) - A(distance)``; (c) the former primary, ``mean
     A(count) / sd A(count)`` < -1 (:func:`~.verdict.judge_standardized`: the change in
     units of the seeds' spread, which compares it with no drift at all); (d) the functional
     part, the count test accuracy with every head's table replaced by its mean over offsets
     minus the accuracy as trained, in points (``table_mean``,
     :mod:`posenc.empirical.analysis.table_mean`: the position signal removed; a table
     attenuated toward zero would cost nothing).  Runs measured before the flattened accuracy
     was recorded read "not recorded" in (d).
AD   The deposit's size as the paper states it ("ablating the deposit head costs about 60
     points, any other head almost nothing"), RoPE on distance at convergence (zero ablation),
     the whole statement as one primary part (:func:`~.conjunction.conjunction`, both conditions
     required): the deposit head's drop > 30 points (at least half the paper's ~60; our models
     are smaller, and a drop is capped by accuracy minus chance) **and** the largest drop of
     any other head, in any layer, < 5 points ("almost nothing": about two binomial standard
     errors of the quick preset's 300-example ablation, 2.5 of ``paper-small``'s 500; "in any
     layer" counts a second layer's own deposit head as another head).  Its null is the
     claim's negation (one condition fails); formerly only the deposit head's size was
     judged and the other heads were shown.  Both thresholds come from the paper's wording,
     fixed before the runs they judge were trained.
MX   The deposit is inherent in multiplicative encodings, beyond RoPE and MLA: xPos (the extra
     role ``xpos``, ``posenc reproduce --roles ...,xpos``) concentrates like RoPE, ``DI(xpos) -
     DI(PE)`` > 0 on distance for each additive PE that learned the task, all required (as
     E12: one contrast per PE, an additive PE that did not learn is left out); without
     xPos runs (the default sweep) the row says so.
AL1, AL2  ALiBi's accuracy claims: :mod:`.alibi_claims`.

In paper-code mode AD and NC2's three readings are read for trans.py's ``rope`` model as well
("AD (code rope)", "NC2 (layer 0, code rope)", ...; :data:`~.accuracy_runs.ROPE_READINGS`), on
that model's own runs: the paper code ablates the heads of trans.py's models
(dis_gen/transvis.py), whose ``rope`` is RoPE plus a sinusoidal table.

Each claim is a record (:class:`~.claim.MeasuredClaim`: its statement, its parts' statistics
and the rules that turn them into words) in :data:`CLAIMS`, the order the report lists them;
:func:`evaluate_measured` evaluates them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from .accuracy_runs import NO_ABLATION, POINTS, ROPE_READINGS, UNIT, Runs, has_head_drops
from .alibi_claims import evaluate_alibi
from .claim import Conjunction, JudgedElsewhere, MeasuredClaim, Part, Stat, VersusAdditive, \
    evaluate_claims
from .drift_null import null_attenuation
from .stability import stability_verdict
from .verdict import Verdict, reading_claim

if TYPE_CHECKING:
    from ..empirical.pipeline.experiment_result import ExperimentResult

D, C = "distance", "count"
NOT_RECORDED = "not recorded: {what} (runs trained before it was recorded; re-run them)"


def span_drop(result: ExperimentResult) -> Optional[float]:
    """share(embed) - mean share after layer 2 (blocks 1..), or None when not recorded."""
    share = (result.probe or {}).get("pe_span_share")
    if not share or "embed" not in share:
        return None
    later = [v for k, v in share.items() if k.startswith("block") and int(k[5:]) >= 1]
    return share["embed"] - sum(later) / len(later) if later else None


def _trace(result: ExperimentResult, key: str) -> Optional[float]:
    v = (result.trace or {}).get(key)
    return None if v is None else float(v)


def _attenuation(result: ExperimentResult) -> Optional[float]:
    v = ((result.trace or {}).get("tables") or {}).get("log_attenuation")
    return None if v is None else float(v)


def attenuation_beyond_drift(result: ExperimentResult) -> Optional[float]:
    """RA's primary statistic on one run: ``A - A_null``, its table's log change minus the drift
    null's for the run's own schedule and trained steps (:mod:`.drift_null`); None without the
    table magnitudes, the steps or the schedule."""
    a, steps, schedule = _attenuation(result), (result.trace or {}).get("steps"), result.schedule
    if a is None or schedule is None or not isinstance(steps, int):
        return None
    return a - null_attenuation(schedule, steps)


def flattened_table_change(result: ExperimentResult) -> Optional[float]:
    """RA's functional part on one run: test accuracy with each head's relative table replaced
    by its mean minus as trained (points); None when not recorded."""
    t = result.table_mean
    return None if t is None else 100.0 * (t["test_acc"] - t["baseline_acc"])


def _layer_drops(result: ExperimentResult, mode: str) -> Optional[list[float]]:
    """Each layer's largest single-head drop (points); None without the ablation table."""
    table = result.ablation.get(mode)
    return None if table is None else [100.0 * la["largest_drop"] for la in table["layers"]]


def _other_heads_top_drop(result: ExperimentResult, mode: str, dep: dict[str, Any]
                          ) -> Optional[float]:
    """The largest single-head drop (points) of any head but the deposit head ``dep`` (the
    layer and head of :meth:`Runs.deposit`), over every layer; None without per-head drops."""
    layers = result.ablation[mode]["layers"]
    if not has_head_drops(layers):
        return None
    others = [100.0 * d for la in layers for h, d in enumerate(la["drops"])
              if (la["layer"], h) != (dep["layer"], dep["head"])]
    return max(others) if others else None


def deposit_depth(drops: Optional[list[float]], layers_of: Callable[[int], list[int]]
                  ) -> Optional[float]:
    """NC2's statistic on one run: the largest of the layers' largest single-head drops
    (``drops``, per layer) over the reading's layers (``layers_of(n_layers)``) minus the
    largest over the other layers; None without the drops, or when the reading leaves no layer
    on either side."""
    if not drops:
        return None
    chosen = set(layers_of(len(drops)))
    inside = [d for i, d in enumerate(drops) if i in chosen]
    outside = [d for i, d in enumerate(drops) if i not in chosen]
    return max(inside) - max(outside) if inside and outside else None


#: NC2's readings of the paper's "the first layer" / "a shallow layer" (claim, the layers in
#: words, their name in the part, the layers of a model of n layers): layer index 0 (the paper's
#: "layer 1" counted from 1), layer index 1 (its "layer 1" as the paper code's 0-indexed ablation
#: folders write it; the paper-size anchor's deposit is there), the shallower half
NC2_READINGS = (
    ("NC2 (layer 0)", "layer index 0 (the paper's first layer, counted from 1)", "layer 0",
     lambda n: [0]),
    ("NC2 (layer 1)", "layer index 1 (the paper code's 0-indexed layer 1)", "layer 1",
     lambda n: [1]),
    ("NC2 (shallower half)", "the shallower half of the layers", "layers < n/2",
     lambda n: list(range(n // 2))),
)

#: AD's thresholds (points), from the paper's wording: half its "about 60", and "almost nothing"
DEPOSIT_DROP, OTHER_HEADS = 30.0, 5.0
#: EH: the retained excess share R below which the additive directions count as displaced
DISPLACED = 0.1


def retained_excess(result: ExperimentResult) -> Optional[float]:
    """EH's R: (mean share after layer 2 - chance) / (share at the input - chance); None when
    the probe lacks the share or its chance."""
    probe = result.probe or {}
    chance, drop = probe.get("pe_span_chance"), span_drop(result)
    if chance is None or drop is None:
        return None
    embed = probe["pe_span_share"]["embed"]
    return (embed - drop - chance) / (embed - chance) if embed > chance else None



# -- the per-seed statistics the records read: (runs, seed, ablation mode) -> value or None


def _hybrid_retained(runs: Runs, s: int, mode: str) -> Optional[float]:
    """EH (a): the hybrid's retained excess R."""
    return retained_excess(runs.by[(D, "absolute+rope")][s])


def _hybrid_drop_minus_sinusoidal(runs: Runs, s: int, mode: str) -> Optional[float]:
    """EH (b): drop(absolute+rope) - drop(absolute)."""
    a, b = span_drop(runs.by[(D, "absolute+rope")][s]), span_drop(runs.by[(D, "absolute")][s])
    return None if a is None or b is None else a - b


def _rope_distance_minus_count(key: str) -> Stat:
    """NC1: RoPE's deposit ``key`` on distance minus on count, same seed."""
    def stat(runs: Runs, s: int, mode: str) -> Optional[float]:
        return runs.deposit_contrast(D, "rope", ("rope",), s, key, mode, other_task=C)
    return stat


def _rope_depth(role: str, layers_of: Callable[[int], list[int]]) -> Stat:
    """NC2: :func:`deposit_depth` of ``role``'s run (a RoPE model) for one reading's layers."""
    def stat(runs: Runs, s: int, mode: str) -> Optional[float]:
        return deposit_depth(_layer_drops(runs.by[(D, role)][s], mode), layers_of)
    return stat


def _acc_rope_minus_learned(runs: Runs, s: int, mode: str) -> Optional[float]:
    return runs.acc(D, "rope", s) - runs.acc(D, "learned", s)


def _di_rope_minus_learned(runs: Runs, s: int, mode: str) -> Optional[float]:
    return runs.deposit_contrast(D, "rope", ("learned",), s, "index", mode)


def _count_beyond_drift(runs: Runs, s: int, mode: str) -> Optional[float]:
    return attenuation_beyond_drift(runs.by[(C, "relative")][s])


def _count_minus_distance_attenuation(runs: Runs, s: int, mode: str) -> Optional[float]:
    a, b = _attenuation(runs.by[(C, "relative")][s]), _attenuation(runs.by[(D, "relative")][s])
    return None if a is None or b is None else a - b


def _count_attenuation(runs: Runs, s: int, mode: str) -> Optional[float]:
    return _attenuation(runs.by[(C, "relative")][s])


def _count_flattened(runs: Runs, s: int, mode: str) -> Optional[float]:
    return flattened_table_change(runs.by[(C, "relative")][s])


def _deposit_head_drop(role: str) -> Stat:
    """AD: the deposit head's drop (points) of ``role``'s run."""
    def stat(runs: Runs, s: int, mode: str) -> Optional[float]:
        dep = runs.deposit(D, role, s, mode)
        return None if dep is None else dep["drop"]
    return stat


def _other_heads_drop(role: str) -> Stat:
    """AD: the largest drop (points) of any other head of ``role``'s run."""
    def stat(runs: Runs, s: int, mode: str) -> Optional[float]:
        dep = runs.deposit(D, role, s, mode)
        return None if dep is None else _other_heads_top_drop(runs.by[(D, role)][s], mode, dep)
    return stat


def _xpos_minus(runs: Runs, s: int, mode: str, additive: tuple[str, ...]) -> Optional[float]:
    return runs.deposit_contrast(D, "xpos", additive, s, "index", mode)


# -- the claims, one record each

NO_TABLE = NOT_RECORDED.format(what="no relative-table magnitudes in the trace")

EH = MeasuredClaim(
    id="EH",
    statement="Absolute+RoPE: the additive positional directions vanish after layer 2 (their "
              "share of the positional energy falls to chance; shown, not judged: the drop "
              "against the sinusoidal-only model)",
    statistic=f"primary (a) R = (PE-span share after layer 2 - chance) / (share at the input - "
              f"chance), hybrid, < {DISPLACED:g}; shown (b) drop(absolute+rope) - drop(absolute) "
              "> 0, drop = share at the input - its mean after layer 2 (blocks 1..); distance",
    paper="additive positional directions vanish after layer 2",
    parts=(Part("retained excess R: hybrid", D, ("absolute+rope",), _hybrid_retained, DISPLACED,
                "below", bounds=None,
                missing=NOT_RECORDED.format(what="the probes lack the PE-span share or its "
                                                 "chance")),
           Part("PE-span share drop: hybrid - sinusoidal", D, ("absolute+rope", "absolute"),
                _hybrid_drop_minus_sinusoidal, 0.0, "above", bounds=UNIT,
                missing=NOT_RECORDED.format(what="the probes lack the PE-span share"))),
    primary=0)

NC1 = MeasuredClaim(
    id="NC1",
    statement="Negative control: no RoPE single-head deposit on the count task",
    statistic="primary (a) DI(rope, distance) - DI(rope, count); shown (b) top single-head drop, "
              "distance - count (points); same seed, zero ablation",
    paper="the deposit pattern belongs to position-sensitive tasks",
    parts=tuple(Part(name, D, ("rope",), _rope_distance_minus_count(key), 0.0, "above",
                     bounds=bounds, configs=((D, "rope"), (C, "rope")), missing=NO_ABLATION,
                     learned=True)
                for name, key, bounds in (("DI: distance - count", "index", UNIT),
                                          ("top drop: distance - count", "drop", POINTS))),
    primary=0, digits=2)

def _reads(role: str) -> Optional[Callable[[Runs], bool]]:
    """A RoPE reading's ``when``: posenc's RoPE always, the paper code's own model on its runs."""
    return None if role == "rope" else lambda runs: runs.reads_code_rope(D)


NC2 = tuple(MeasuredClaim(
    id=reading_claim(claim, rope_reading),
    statement=("The RoPE deposit" if role == "rope" else f"The deposit of {pe}")
              + f" lies in {reading}",
    statistic=f"largest single-head drop in {name} - largest in any other layer (points); "
              f"{'RoPE' if role == 'rope' else role}, distance, zero ablation",
    paper="one head of a shallow layer carries the position reasoning",
    parts=(Part(f"{name} - other layers", D, (role,), _rope_depth(role, layers_of), 0.0, "above",
                missing="too few layers for this reading, or " + NO_ABLATION, learned=True),),
    digits=1, when=_reads(role))
    for rope_reading, role, pe in ROPE_READINGS
    for claim, reading, name, layers_of in NC2_READINGS)

NC3 = MeasuredClaim(
    id="NC3",
    statement="Learned absolute PE (the paper code's random PE) behaves like the other additive "
              "PEs: below RoPE, no single-head deposit",
    statistic="primary (b) DI(rope) - DI(learned); shown (a) acc(rope) - acc(learned) (points); "
              "distance",
    paper="RoPE best; additive PEs spread the deposit",
    parts=(Part("acc: rope - learned", D, ("rope", "learned"), _acc_rope_minus_learned, 0.0,
                "above", ordering=True),
           Part("DI: rope - learned", D, ("rope", "learned"), _di_rope_minus_learned, 0.0,
                "above", bounds=UNIT, missing=NO_ABLATION, learned=True)),
    primary=1, digits=2)

RA = MeasuredClaim(
    id="RA",
    statement="A relative PE attenuates its learned bias toward zero on the count task (beyond "
              "the drift AdamW gives a table of pure noise)",
    statistic="A = log(final / initial head-centred RMS of the per-offset table, mean over "
              "layers): primary (a) A(count) - A_null < 0, A_null the drift null (the same table "
              "under AdamW on i.i.d. noise gradients, the run's own schedule and its steps up to "
              "the end of its kept epoch); shown (b) A(count) - A(distance), (c) mean A(count) / "
              "its sd over seeds < -1 (the former primary), (d) count accuracy with each head's "
              "table replaced by its mean - as trained (points)",
    paper="relative bias attenuates on the position-agnostic task",
    parts=(Part("A(count) - A_null(drift)", C, ("relative",), _count_beyond_drift, 0.0, "below",
                bounds=None,
                missing=NOT_RECORDED.format(what="no relative-table magnitudes or no optimiser "
                                                 "schedule (a result read without its run's "
                                                 "config)")),
           Part("A(count) - A(distance)", C, ("relative",), _count_minus_distance_attenuation, 0.0,
                "below", bounds=None, configs=((C, "relative"), (D, "relative")),
                missing=NO_TABLE),
           Part("A(count) / run-to-run sd", C, ("relative",), _count_attenuation, -1.0, "below",
                bounds=None, missing=NO_TABLE, noise=True),
           Part("count acc: tables flattened - as trained", C, ("relative",), _count_flattened,
                0.0, "above", bounds=POINTS,
                missing=NOT_RECORDED.format(what="no accuracy with flattened tables"))),
    primary=0)

AD = tuple(MeasuredClaim(
    id=reading_claim("AD", rope_reading),
    statement=("Ablating RoPE's deposit head" if role == "rope"
               else f"Ablating the deposit head of {pe}")
              + " costs about 60 accuracy points, any other head almost nothing (distance; "
                "both together)",
    statistic=f"primary: the deposit head's drop > {DEPOSIT_DROP:g} points (half the paper's ~60) "
              f"and the largest drop of any other head < {OTHER_HEADS:g} points, both required; "
              f"{'RoPE' if role == 'rope' else role}, distance, zero ablation",
    paper="ablating the deposit head costs ~60 points, other heads ~0",
    parts=(Conjunction("deposit head large, others small", D, (role,), (
        Part("deposit head's drop", D, (role,), _deposit_head_drop(role), DEPOSIT_DROP, "above",
             bounds=POINTS, missing=NO_ABLATION),
        Part("other heads' top drop", D, (role,), _other_heads_drop(role), OTHER_HEADS, "below",
             bounds=POINTS, missing=NO_ABLATION))),),
    digits=1, when=_reads(role))
    for rope_reading, role, pe in ROPE_READINGS)

MX = MeasuredClaim(
    id="MX",
    statement="The single-head deposit is inherent in multiplicative PEs beyond RoPE and MLA: "
              "xPos concentrates like RoPE",
    statistic="DI(xpos) - DI(PE) > 0 for each additive PE that learned the task (all of them); "
              "distance, zero ablation (xPos: an extra role)",
    paper="the deposit pattern is inherent in multiplicative encodings",
    parts=(VersusAdditive("DI: xpos - each additive", D, "xpos", _xpos_minus, UNIT),),
    digits=2)

#: the claims in the order the report lists them; S and ALiBi's claims are judged by their own
#: modules (:mod:`.stability`, :mod:`.alibi_claims`)
CLAIMS: tuple[MeasuredClaim | JudgedElsewhere, ...] = (
    EH, NC1, *NC2, NC3, JudgedElsewhere("S", lambda runs: [stability_verdict(runs)]), RA, *AD, MX,
    JudgedElsewhere("AL1, AL2", evaluate_alibi))


def evaluate_measured(runs: Runs, mode: str = "zero") -> list[Verdict]:
    """The verdicts of :data:`CLAIMS` on ``runs`` (deposits from the ``mode`` ablation)."""
    return evaluate_claims(CLAIMS, runs, mode)
