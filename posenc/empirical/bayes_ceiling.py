"""The best accuracy any model can reach on a task configuration (its Bayes ceiling).

With the clean samplers (:mod:`posenc.empirical.tasks`) the label is a function of the input --
one A and one B per distance example, exactly k triggers per count example -- so the ceiling is
100%.  The paper's distance sampler (``TaskConfig.sampler = "paper"``) draws fillers from the
whole vocabulary, triggers included, so an example may hold extra copies of A or B and then more
than one reading (*parse*) of where the real pair is.

**Posterior of one example.**  A parse of an unpadded example ``x`` of length ``L`` is a pair of
positions ``a < b`` with ``x[a] = A``, ``x[b] = B``, segment lengths ``left = a``,
``gap = b - a - 1``, ``right = L - b - 1`` in ``1..max_left``, ``1..max_gap``, ``1..max_right``,
and no token repeated inside a segment (each is a draw without replacement).  Its likelihood is
``P(left) P(gap) P(right) * prod_seg 1 / (V)_len(seg)`` with ``V = vocab_size - 1`` non-PAD
tokens and ``(V)_k = V! / (V-k)!`` the falling factorial; the length priors are uniform, so
``P(d | x)`` is the normalised sum of ``prod_seg 1 / (V)_len(seg)`` over the parses with
``b - a = d``.

**Ceiling.**  The Bayes rule predicts ``argmax_d P(d | x)``; its accuracy is
``E_x[max_d P(d | x)]``.  :func:`bayes_ceiling` estimates that expectation by Monte Carlo over
examples drawn with the task's own sampler, each term exact, and gives its standard error.
(tests/empirical/test_bayes_ceiling.py checks the posterior and the ceiling against a
brute-force enumeration of every example of small configurations.)

**The floor of an order-blind model.**  :func:`length_only_rate` is the other end: the best
accuracy from an example's length alone, ``sum_L max_d P(L, d)``.  A model that cannot tell the
order of its tokens -- NoPE, or any PE whose model learned nothing of position -- still reads the
length (a token attending to all puts weight 1/L on each), and with the clean samplers the
fillers are drawn independently of the label, so it can do no better; a distance model at that
level has learned nothing of positions although it is far above chance (14.7% against 2.5% at
the quick size).  The verdicts use it as the floor a PE must clear to count as having learned
(:meth:`posenc.verdicts.accuracy_runs.Runs.floor`).

**What a run records.**  :func:`recorded_ceiling` is the ceiling each run stores in its summary
(``bayes_ceiling``) and the verdicts read as the top of their ceiling rule
(:meth:`posenc.verdicts.accuracy_runs.Runs.ceiling_threshold`): exact for the clean samplers, a
fixed-seed estimate over :data:`RECORDED_EXAMPLES` examples for the paper's sampler, cached per
task configuration, so a report of a store whose runs predate the field computes it once per
configuration and the same every time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import torch

from .config import TaskConfig
from .tasks import PAD, generate

#: examples of the Monte Carlo estimate (standard error <= 0.5 / sqrt(N) ~ 0.0011 at 200,000)
DEFAULT_EXAMPLES = 200_000
#: examples of the estimate a run records (:func:`recorded_ceiling`): at the paper's sizes
#: (vocabulary 574, gaps 1..70, sides 1..25) a standard error of 0.10 points, 2-4 s on one core
RECORDED_EXAMPLES = 10_000


@dataclass(frozen=True)
class Ceiling:
    """The best accuracy on a task configuration: ``accuracy`` (a fraction), its Monte Carlo
    standard error ``se`` (0 where exact), the ``examples`` it averaged (0 where exact) and
    ``ambiguous``, the fraction of examples whose label is uncertain (parses with different
    labels: ``max_d P(d | x) < 1``)."""

    accuracy: float
    se: float
    examples: int
    ambiguous: float
    method: str

    def describe(self) -> str:
        if self.examples == 0:
            return f"{100 * self.accuracy:.1f}% ({self.method})"
        return (f"{100 * self.accuracy:.2f}% +- {100 * self.se:.2f} ({self.method}; "
                f"{100 * self.ambiguous:.1f}% of examples have an uncertain label)")


def _log_falling(v: int, k: int) -> float:
    return math.lgamma(v + 1) - math.lgamma(v - k + 1)


def distance_posterior(row: Sequence[int], task: TaskConfig) -> dict[int, float]:
    """``P(label | x)`` for one distance example ``row`` (padding allowed, stripped); empty
    when no parse fits (an example the task's sampler cannot produce)."""
    x = [int(t) for t in row]
    while x and x[-1] == PAD:
        x.pop()
    L, V = len(x), task.vocab_size - 1
    weights: dict[int, float] = {}
    logs: list[tuple[int, float]] = []
    A, B = task.triggers
    a_pos = [i for i, t in enumerate(x) if t == A and 1 <= i <= task.max_left]
    b_pos = [i for i, t in enumerate(x) if t == B and 1 <= L - i - 1 <= task.max_right]
    for a in a_pos:
        for b in b_pos:
            gap = b - a - 1
            if not 1 <= gap <= task.max_gap:
                continue
            segs = (x[:a], x[a + 1:b], x[b + 1:])
            if any(len(set(s)) != len(s) for s in segs):
                continue
            logs.append((b - a, -sum(_log_falling(V, len(s)) for s in segs)))
    if not logs:
        return {}
    top = max(w for _, w in logs)
    for d, w in logs:
        weights[d] = weights.get(d, 0.0) + math.exp(w - top)
    total = sum(weights.values())
    return {d: w / total for d, w in sorted(weights.items())}


def length_only_rate(task: TaskConfig) -> float:
    """The best accuracy of an answer from the example's length alone (module doc), exact: the
    distance task's length is ``left + gap + right + 2`` with the three uniform and independent,
    and the label ``gap + 1``; every count example has the same length, so there it is the chance
    rate ``1 / (max_count + 1)``.  The same for both samplers (the paper's fillers do not change a
    length; its extra trigger copies let an order-blind model see a little more than the length,
    so there it is a lower bound of that model's best)."""
    if task.name != "distance":
        return 1.0 / (task.max_count + 1)
    lefts, rights = range(1, task.max_left + 1), range(1, task.max_right + 1)
    sides: dict[int, int] = {}  # left + right -> ways
    for left in lefts:
        for right in rights:
            sides[left + right] = sides.get(left + right, 0) + 1
    best: dict[int, int] = {}  # length -> ways of its most frequent gap
    for gap in range(1, task.max_gap + 1):
        for s, ways in sides.items():
            length = s + gap + 2
            best[length] = max(best.get(length, 0), ways)
    return sum(best.values()) / (len(lefts) * len(rights) * task.max_gap)


def bayes_ceiling(task: TaskConfig, examples: int = DEFAULT_EXAMPLES, seed: int = 0) -> Ceiling:
    """The Bayes ceiling of ``task`` (see the module doc): exact (100%) for the clean samplers,
    else a Monte Carlo estimate over ``examples`` examples drawn with seed ``seed``."""
    if task.sampler == "clean":
        what = "one A and one B per example" if task.name == "distance" else \
            "the label is the number of triggers"
        return Ceiling(1.0, 0.0, 0, 0.0, f"exact: {what}")
    data = generate(task, examples, torch.Generator().manual_seed(int(seed)))
    A, B = task.triggers
    copies = ((data.tokens == A).sum(1) > 1) | ((data.tokens == B).sum(1) > 1)
    best = torch.ones(examples, dtype=torch.float64)  # one A and one B: one parse, posterior 1
    for i in torch.nonzero(copies).flatten().tolist():
        post = distance_posterior(data.tokens[i, :int(data.lengths[i])].tolist(), task)
        best[i] = max(post.values())
    ambiguous = float((best < 1.0).double().mean())
    mean = float(best.mean())
    se = float(best.std(unbiased=True)) / math.sqrt(examples) if examples > 1 else float("inf")
    return Ceiling(mean, se, examples, ambiguous,
                   f"Monte Carlo over {examples:,} examples of the paper sampler, exact posteriors")


@lru_cache(maxsize=None)
def recorded_ceiling(task: TaskConfig) -> float:
    """The Bayes ceiling (a fraction) that a run of ``task`` records in its summary: 1.0 for the
    clean samplers, without computing; for the paper's sampler :func:`bayes_ceiling` over
    :data:`RECORDED_EXAMPLES` examples drawn with seed 0 (deterministic).  Cached per task
    configuration (a sweep's worker and a report compute it once per configuration)."""
    return bayes_ceiling(task, RECORDED_EXAMPLES, seed=0).accuracy
