"""Verdicts for empirical claims: a stated statistic, an interval over seeds, one word.

Every empirical claim compares per-seed quantities (accuracies, deposit
indices) of trained runs.  For each seed s we form the claim's statistic
``d_s`` (e.g. RoPE's accuracy minus the best other PE's accuracy on the same
seed); the estimate is the mean of ``d_s`` and the interval is the two-sided
Student-t interval over seeds at the given level (95% by default)::

    mean(d) +- t_{(1+level)/2, n-1} * sd(d) / sqrt(n)

The verdict compares that interval with the claim's threshold ``tau`` (0 for
"better than", ``-delta`` for "no worse than by more than delta"):

* ``confirmed``    -- the whole interval lies on the predicted side of ``tau``;
* ``against``      -- the whole interval lies on the other side (the claim is decided
  against; the report's word for it names the regime, :mod:`.words`);
* ``inconclusive`` -- the interval straddles ``tau``, or fewer than two seeds;
* ``ceiling``      -- an ordering of accuracies (``tau = 0``) whose two sides -- the PE and,
  per seed, the best of the PEs it is compared with -- both average within
  :data:`CEILING_MARGIN` points of their task's Bayes ceiling (the best accuracy any model can
  reach, :mod:`posenc.empirical.bayes_ceiling`: 100% with the clean samplers, so >= 98%
  there; about 97.6% with the paper's sampler at its sizes, so about >= 95.6%): no PE can show
  a lead there, so neither the claim nor its negation is tested (:func:`at_ceiling`; the
  sides: :func:`~.accuracy_runs.ordering_at_ceiling`; the threshold of a task's runs:
  :meth:`~.accuracy_runs.Runs.ceiling_threshold`).

With two seeds ``t_{0.975,1} = 12.7``, so a verdict needs the seeds to agree
closely: few seeds give honest "inconclusive" verdicts rather than bare
single-run claims.  Beside each interval (:func:`judge`): the per-seed sign count
(on how many seeds ``d_s`` lies on the predicted side of ``tau``) and the
*resolution*, the interval's half-width ``t_{(1+level)/2, n-1} * sd(d) / sqrt(n)``:
the smallest distance ``|mean(d) - tau|`` that this number of seeds decides at the observed
spread (an interval decides exactly when ``|mean(d) - tau|`` exceeds it).

Bounded quantities (per-PE accuracies in the accuracy table) get
:func:`bounded_interval`, a Student-t interval on the logit scale (delta method) that
stays inside the range; the test-set sampling error of one run is :func:`binomial_se`.

**Multiplicity: one primary part per claim, fixed in the code.**  A claim may show several
parts (several statistics of the same runs), but exactly one of them -- its *primary* part,
named where the claim is defined (:func:`verdict_from_parts`, ``primary``) -- is judged; the
others are *shown, not judged*: their interval is printed (marked "shown") and their word is
``shown``, so a claim's verdict is its primary part's verdict and nothing else.  Each claim is
then one test at the 95% level (two-sided interval: a decision in either direction has error
<= 2.5% under its null), and the report's ~15 claims are ~15 tests, each read on its own; no
correction is applied across claims (the report states this and how many primary tests it
judged).  The alternative, Holm's step-down correction over every part, would judge ~25
parts at levels down to 0.05/25 and let a secondary part veto a claim; a primary fixed in advance
keeps each claim's verdict about the statistic that states it.  A claim that states several
conditions at once (AD: the deposit head's drop large *and* every other head's small; E12: RoPE
above *each* additive PE) has one primary part that joins them
(:func:`~.conjunction.conjunction`): its null is the claim's negation, some condition failing.

**Run-to-run noise** (:func:`judge_standardized`): where a claim compares a change with the
noise of the runs rather than with 0 (RA's part (c), its primary in the earlier formulation: the relative
table's log change), the statistic is
the *standardised mean* ``delta = mean(d) / sd(d)`` -- the mean change in units of its
spread over seeds, i.e. of how far one run's value falls from another's when the runs differ
only in seed -- with the exact confidence interval of delta from the noncentral t
distribution (:func:`standardized_interval`); the threshold is then in units of that noise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional, Sequence
from .exact import sign_flip_p, exact_check
from .words import verdict_word

VERDICTS = ("confirmed", "against", "inconclusive", "ceiling")
#: points below its task's Bayes ceiling at or above which a PE's mean accuracy is at the ceiling
CEILING_MARGIN = 2.0
#: the Bayes ceiling (percent) of the clean samplers' tasks, and of runs that record none
CLEAN_BAYES = 100.0


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    n: int
    level: float = 0.95

    def __str__(self) -> str:
        if not math.isfinite(self.low):
            return f"{self.estimate:.2f} (n={self.n}, no interval)"
        return f"{self.estimate:.2f} [{self.low:.2f}, {self.high:.2f}] (n={self.n})"


def t_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Mean and Student-t interval of ``values`` (one per seed)."""
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        return Interval(float("nan"), float("-inf"), float("inf"), 0, level)
    mean = sum(vals) / n
    if n == 1:
        return Interval(mean, float("-inf"), float("inf"), 1, level)
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    half = _t_quantile(level, n) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, level)


def _t_quantile(level: float, n: int) -> float:
    from scipy.stats import t as student_t
    return float(student_t.ppf((1 + level) / 2, n - 1))


def bounded_interval(values: Sequence[float], low: float = 0.0, high: float = 100.0,
                     level: float = 0.95) -> Interval:
    """Mean of a quantity bounded to [low, high] with a logit-scale Student-t interval.

    With ``p`` the mean rescaled to (0, 1) and ``se`` its standard error, the interval is
    ``expit(logit(p) +- t_{(1+level)/2, n-1} * se / (p (1 - p)))`` mapped back (the delta
    method on the logit scale): it lies inside [low, high], contains the mean, is mirrored by
    ``v -> low + high - v`` and, for small spreads, agrees with the plain t interval.  A mean on
    a bound (every seed there) gives the point interval.
    """
    vals = [float(v) for v in values]
    n, width = len(vals), high - low
    if n < 2:
        return t_interval(vals, level)
    mean = sum(vals) / n
    p = min(max((mean - low) / width, 0.0), 1.0)
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1)) / width
    if p in (0.0, 1.0) or sd == 0.0:
        return Interval(mean, mean, mean, n, level)
    half = _t_quantile(level, n) * sd / math.sqrt(n) / (p * (1 - p))
    centre = math.log(p / (1 - p))

    def expit(x: float) -> float:
        return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
    return Interval(mean, low + width * min(expit(centre - half), p),
                    low + width * max(expit(centre + half), p), n, level)


def decide(interval: Interval, threshold: float = 0.0, predicted: str = "above") -> str:
    """The verdict word for an interval against ``threshold``."""
    if interval.n < 2 or not math.isfinite(interval.low):
        return "inconclusive"
    above = interval.low > threshold
    below = interval.high < threshold
    if predicted == "above":
        return "confirmed" if above else "against" if below else "inconclusive"
    if predicted == "below":
        return "confirmed" if below else "against" if above else "inconclusive"
    raise ValueError(f"predicted must be 'above' or 'below', not {predicted!r}")


def combine(words: Sequence[str]) -> str:
    """A conjunction of sub-verdicts: against if any part is, confirmed if all are, ceiling if
    the parts that are not confirmed are all at the ceiling."""
    if any(w == "against" for w in words):
        return "against"
    if words and all(w == "confirmed" for w in words):
        return "confirmed"
    if words and all(w in ("confirmed", "ceiling") for w in words):
        return "ceiling"
    return "inconclusive"


def ceiling_threshold(bayes: float = CLEAN_BAYES) -> float:
    """The accuracy (percent) at or above which a PE is at the ceiling of a task whose Bayes
    ceiling is ``bayes`` percent: :data:`CEILING_MARGIN` points below it (98 on a clean task)."""
    return bayes - CEILING_MARGIN


def ceiling_rule(bayes: float) -> str:
    """The ceiling rule of a task whose Bayes ceiling is ``bayes`` percent, as the verdicts print
    it: ">= 98%" on a task whose ceiling is 100%, else the threshold and where it comes from."""
    if bayes >= CLEAN_BAYES:
        return f">= {ceiling_threshold(bayes):g}%"
    return (f">= {ceiling_threshold(bayes):.1f}% ({CEILING_MARGIN:g} points below the task's "
            f"Bayes ceiling as its runs recorded it, {bayes:.1f}%)")


def at_ceiling(accuracies: dict[str, Sequence[float]],
               thresholds: Optional[dict[str, float]] = None) -> bool:
    """Whether every compared configuration's mean accuracy (percent) is at or above its
    threshold (``thresholds[name]``, percent; default and for a name not given:
    :func:`ceiling_threshold` of a task whose Bayes ceiling is 100%)."""
    thresholds = thresholds or {}
    return bool(accuracies) and all(
        len(v) > 0 and sum(v) / len(v) >= thresholds.get(k, ceiling_threshold())
        for k, v in accuracies.items())


def judge(values: Sequence[float], threshold: float = 0.0, predicted: str = "above",
          level: float = 0.95, bounds: Optional[tuple[float, float]] = None) -> dict[str, Any]:
    """One part of a claim judged on its per-seed statistic: the verdict word, the interval,
    the per-seed sign count (``agree`` of ``n`` seeds on the predicted side of ``threshold``),
    the resolution (the interval's half-width; None below two seeds) and the exact sign-flip
    test's two one-sided p-values (``sign_flip``, :func:`~.exact.sign_flip_p`).

    ``bounds``: the statistic's range (e.g. (-100, 100) for a difference of accuracies in
    points); the interval shown is clipped to it.  The verdict and the resolution come from the
    t interval itself -- clipping cannot change a verdict when the threshold lies in the range."""
    vals = [float(v) for v in values]
    iv = t_interval(vals, level)
    side = (lambda v: v > threshold) if predicted == "above" else (lambda v: v < threshold)
    shown = [iv.low, iv.high] if bounds is None else [max(iv.low, bounds[0]),
                                                       min(iv.high, bounds[1])]
    return {"verdict": decide(iv, threshold, predicted), "n": iv.n, "estimate": iv.estimate,
            "interval": shown, "values": vals, "threshold": threshold,
            "predicted": predicted, "agree": sum(1 for v in vals if side(v)),
            "resolution": (iv.high - iv.low) / 2 if math.isfinite(iv.low) else None,
            "sign_flip": sign_flip_p(vals, threshold, predicted) if vals else None}


def standardized_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """``delta = mean / sd`` of ``values`` (one per seed) with its exact ``level`` confidence
    interval: ``t = sqrt(n) mean / sd`` follows the noncentral t distribution with n - 1 degrees
    of freedom and noncentrality ``sqrt(n) delta`` (normal values), and the interval is every
    delta whose two-sided test at ``1 - level`` keeps the observed t (the endpoints solve
    ``P(T >= t | delta_low) = (1 - level) / 2`` and ``P(T <= t | delta_high) = (1 - level) / 2``,
    found by bisection: the noncentral t's cdf falls monotonically with the noncentrality).
    No interval below two seeds or for values without spread."""
    from scipy.optimize import brentq
    from scipy.stats import nct
    vals = [float(v) for v in values]
    n = len(vals)
    if n < 2:
        return Interval(float("nan"), float("-inf"), float("inf"), n, level)
    mean = sum(vals) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    if sd <= 1e-12 * abs(mean):  # equal values up to float rounding: no spread to measure by
        return Interval(float("nan"), float("-inf"), float("inf"), n, level)
    t, df, alpha = math.sqrt(n) * mean / sd, n - 1, (1 - level) / 2
    root_n = math.sqrt(n)

    def cdf(d: float) -> float:  # P(T <= t | delta = d); scipy's nct gives NaN far in a tail
        c = float(nct.cdf(t, df, root_n * d))
        return c if math.isfinite(c) else (0.0 if root_n * d > t else 1.0)

    def bound(target: Callable[[float], float]) -> float:
        lo, hi = t / root_n - 1.0, t / root_n + 1.0
        while target(lo) > 0:
            lo -= 2 * (hi - lo)
        while target(hi) < 0:
            hi += 2 * (hi - lo)
        return brentq(target, lo, hi, xtol=1e-10)
    # sf rises and cdf falls with the noncentrality
    low = bound(lambda d: 1.0 - cdf(d) - alpha)
    high = bound(lambda d: alpha - cdf(d))
    return Interval(mean / sd, low, high, n, level)


def judge_standardized(values: Sequence[float], threshold: float, predicted: str = "below",
                       level: float = 0.95) -> dict[str, Any]:
    """A part judged against the run-to-run noise of its statistic (see the module doc): the
    verdict compares the interval of ``delta = mean / sd`` (:func:`standardized_interval`) with
    ``threshold`` in units of sd; ``agree``: the seeds whose own value lies beyond
    ``threshold * sd`` on the predicted side; ``noise``: the sd over seeds."""
    vals = [float(v) for v in values]
    iv = standardized_interval(vals, level)
    common = {"values": vals, "threshold": threshold, "predicted": predicted, "scale": "sd"}
    if not math.isfinite(iv.low):
        return {"verdict": "inconclusive", "n": iv.n, "estimate": None, "interval": None,
                "note": "no run-to-run noise to compare with (fewer than two seeds, or no "
                        "spread over seeds)", "agree": None, "noise": None,
                "resolution": None, **common}
    mean = sum(vals) / len(vals)
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
    beyond = [v > threshold * sd if predicted == "above" else v < threshold * sd for v in vals]
    return {"verdict": decide(iv, threshold, predicted), "n": iv.n, "estimate": iv.estimate,
            "interval": [iv.low, iv.high], "agree": sum(beyond), "noise": sd,
            "resolution": (iv.high - iv.low) / 2, **common}


def binomial_se(accuracy: float, n: int) -> float:
    """Standard error (same units as ``accuracy`` in [0, 100]) of a test accuracy on n examples."""
    if n <= 0:
        return float("nan")
    p = min(max(accuracy / 100.0, 0.0), 1.0)
    return 100.0 * math.sqrt(p * (1 - p) / n)


@dataclass(frozen=True)
class Verdict:
    """One empirical claim's outcome, as shown in the report's verdict table."""

    claim: str
    statement: str
    statistic: str
    paper: str
    measured: str
    verdict: str
    seeds: int
    parts: list[dict[str, Any]] = field(default_factory=list)
    agreement: str = ""  # per part: "5 of 6 seeds > 0"
    resolution: str = ""  # per part: the smallest effect its seeds decide at the observed spread
    #: the exact sign-flip test of the judged part against its decision (:func:`~.exact.exact_check`)
    exact: Optional[dict[str, Any]] = None
    #: the preset whose runs the verdict judges (:func:`~.words.regime_of`); "" when not known
    regime: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.verdict!r}")

    @property
    def word(self) -> str:
        """What the report shows: the decision with its regime (:func:`~.words.verdict_word`)."""
        return verdict_word(self.verdict, self.regime)

    def to_dict(self) -> dict[str, Any]:
        """The report.json entry: ``verdict`` the word with its regime, ``decision`` the
        statistic's decision (one of :data:`VERDICTS`)."""
        out = asdict(self)
        out["decision"], out["verdict"] = self.verdict, self.word
        return out


def _label(p: dict[str, Any]) -> str:
    """A part's name, marked when it is shown and not judged."""
    return p["part"] if p.get("primary", True) else f"{p['part']} [shown, not judged]"


def measured_text(parts: Sequence[dict[str, Any]], digits: int = 1) -> str:
    """One line per claim: each part's estimate and interval (or why it has none); a
    :func:`conjunction` as ``name (all of): condition; condition``."""
    out = []
    for p in parts:
        name = _label(p)
        if p.get("conditions") and p["estimate"] is None:
            out.append(f"{name}: {p['note']}")
        elif p.get("conditions"):
            out.append(f"{name} (all of): " + measured_text(
                [{**c, "primary": True} for c in p["conditions"]], digits).replace("; ", ", ")
                + (f" ({p['note']})" if p.get("note") else ""))
        elif p["estimate"] is None:
            out.append(f"{name}: {p['note']}")
        elif p["n"] < 2:
            out.append(f"{name}: {p['estimate']:+.{digits}f} (1 seed, no interval)")
        else:
            lo, hi = p["interval"]
            unit = f" sd (sd {p['noise']:.{digits}f})" if p.get("scale") == "sd" else ""
            out.append(f"{name}: {p['estimate']:+.{digits}f} [{lo:+.{digits}f}, "
                       f"{hi:+.{digits}f}]{unit}" + (f" ({p['note']})" if p.get("note") else ""))
    return "; ".join(out)


def agreement_text(parts: Sequence[dict[str, Any]]) -> str:
    """Per part: on how many seeds the statistic lies on the predicted side of the threshold."""
    out = []
    for p in parts:
        if p.get("conditions"):
            held = (f"every condition on {p['agree']} of {p['agree_of']} seeds"
                    if p.get("agree") is not None else "no seed common to every condition")
            inner = agreement_text([{**c, "primary": True} for c in p["conditions"]])
            out.append(f"{_label(p)}: {held}" + ("" if inner == "-" else f" ({inner})"))
        elif p.get("agree") is not None:
            sign = ">" if p["predicted"] == "above" else "<"
            unit = " sd" if p.get("scale") == "sd" else ""
            out.append(f"{_label(p)}: {p['agree']} of {p['n']} seeds {sign} "
                       f"{p['threshold']:g}{unit}")
    return "; ".join(out) or "-"


def resolution_text(parts: Sequence[dict[str, Any]], digits: int = 1) -> str:
    """Per part with two or more seeds: the resolution ± (see :func:`judge`)."""
    out = []
    for p in parts:
        if p.get("conditions"):
            inner = resolution_text([{**c, "primary": True} for c in p["conditions"]], digits)
            if inner != "-":
                out.append(f"{_label(p)}: ({inner})")
        elif p.get("resolution") is not None:
            out.append(f"{_label(p)}: ±{p['resolution']:.{digits}f}")
    return "; ".join(out) or "-"


def reading_claim(claim: str, reading: str) -> str:
    """The claim id of one reading of an ambiguous claim: ``E10 (with MLA)``, and for a claim
    id that already qualifies itself ``E10 (code rope, with MLA)``; ``claim`` itself for the
    empty reading."""
    if not reading:
        return claim
    return f"{claim[:-1]}, {reading})" if claim.endswith(")") else f"{claim} ({reading})"


#: the word of a part that is shown and not judged (see the module doc, *Multiplicity*)
SHOWN = "shown"


def verdict_from_parts(claim: str, statement: str, statistic: str, paper: str,
                       parts: list[dict[str, Any]], digits: int = 1,
                       primary: Optional[int] = None) -> Verdict:
    """A claim's verdict: its primary part's verdict, over that part's seeds.

    ``primary``: the index of the judged part in ``parts`` -- required when there are several
    (the choice is part of the claim's definition, made where the claim is stated); the others
    are marked ``primary: False`` and their word becomes :data:`SHOWN` (their interval is
    printed; no word is given for it)."""
    if primary is None:
        if len(parts) != 1:
            raise ValueError(f"claim {claim}: {len(parts)} parts need a primary part fixed in advance")
        primary = 0
    if not 0 <= primary < len(parts):
        raise ValueError(f"claim {claim}: primary part {primary} of {len(parts)}")
    for i, p in enumerate(parts):
        p["primary"] = i == primary
        if i != primary:
            p["verdict"] = SHOWN
    judged = parts[primary]
    return Verdict(claim=claim, statement=statement, statistic=statistic, paper=paper,
                   measured=measured_text(parts, digits), verdict=combine([judged["verdict"]]),
                   seeds=judged["n"], parts=parts,
                   agreement=agreement_text(parts), resolution=resolution_text(parts, digits),
                   exact=exact_check(judged))
