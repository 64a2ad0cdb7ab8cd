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
* ``refuted``      -- the whole interval lies on the other side;
* ``inconclusive`` -- the interval straddles ``tau``, or fewer than two seeds.

With two seeds ``t_{0.975,1} = 12.7``, so a verdict needs the seeds to agree
closely: few seeds give honest "inconclusive" verdicts rather than bare
single-run claims.  Test-set sampling error is reported beside it as the
binomial standard error of each accuracy.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

VERDICTS = ("confirmed", "refuted", "inconclusive")


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
    from scipy.stats import t as student_t

    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    half = float(student_t.ppf((1 + level) / 2, n - 1)) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, level)


def decide(interval: Interval, threshold: float = 0.0, predicted: str = "above") -> str:
    """The verdict word for an interval against ``threshold``."""
    if interval.n < 2 or not math.isfinite(interval.low):
        return "inconclusive"
    above = interval.low > threshold
    below = interval.high < threshold
    if predicted == "above":
        return "confirmed" if above else "refuted" if below else "inconclusive"
    if predicted == "below":
        return "confirmed" if below else "refuted" if above else "inconclusive"
    raise ValueError(f"predicted must be 'above' or 'below', not {predicted!r}")


def combine(words: Sequence[str]) -> str:
    """A conjunction of sub-verdicts: refuted if any part is, confirmed if all are."""
    if any(w == "refuted" for w in words):
        return "refuted"
    if words and all(w == "confirmed" for w in words):
        return "confirmed"
    return "inconclusive"


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

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.verdict!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def measured_text(parts: Sequence[dict[str, Any]], digits: int = 1) -> str:
    """One line per claim: each part's estimate and interval (or why it has none)."""
    out = []
    for p in parts:
        if p["estimate"] is None:
            out.append(f"{p['part']}: {p['note']}")
        elif p["n"] < 2:
            out.append(f"{p['part']}: {p['estimate']:+.{digits}f} (1 seed, no interval)")
        else:
            lo, hi = p["interval"]
            out.append(f"{p['part']}: {p['estimate']:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]")
    return "; ".join(out)


def verdict_from_parts(claim: str, statement: str, statistic: str, paper: str,
                       parts: list[dict[str, Any]], digits: int = 1) -> Verdict:
    """A claim's verdict: the conjunction of its parts, over the fewest seeds any part had."""
    return Verdict(claim=claim, statement=statement, statistic=statistic, paper=paper,
                   measured=measured_text(parts, digits),
                   verdict=combine([p["verdict"] for p in parts]),
                   seeds=min((p["n"] for p in parts), default=0), parts=parts)
