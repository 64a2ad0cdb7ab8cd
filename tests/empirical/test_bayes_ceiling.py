"""The paper's distance sampler and the Bayes ceiling (posenc.empirical.bayes_ceiling), against
a brute-force enumeration of every example of small configurations, and the sampler's
statistics against a loop written from reading the paper's generator (dis_gen/data-gen.py:
per segment ``random.sample`` of its length from the whole vocabulary)."""

import itertools
import math
import random
from collections import Counter

import pytest
import torch
from scipy.stats import chisquare

from posenc.empirical.bayes_ceiling import bayes_ceiling, distance_posterior, length_only_rate
from posenc.empirical.config import TaskConfig, preset
from posenc.empirical.tasks import TRIGGER_A, TRIGGER_B, generate
from posenc.errors import PosencError


def paper_task(vocab, left, gap, right, n=1000):
    return TaskConfig(name="distance", sampler="paper", vocab_size=vocab, max_left=left,
                      max_gap=gap, max_right=right, n_samples=n)


def enumerate_examples(task):
    """Every (example, label) the paper sampler can draw, with its exact probability:
    uniform segment lengths, each segment an ordered draw without replacement."""
    V = task.vocab_size - 1
    tokens = range(1, V + 1)
    joint = {}
    for left in range(1, task.max_left + 1):
        for gap in range(1, task.max_gap + 1):
            for right in range(1, task.max_right + 1):
                p_len = 1 / (task.max_left * task.max_gap * task.max_right)
                for sl in itertools.permutations(tokens, left):
                    for sg in itertools.permutations(tokens, gap):
                        for sr in itertools.permutations(tokens, right):
                            p = p_len / (math.perm(V, left) * math.perm(V, gap)
                                         * math.perm(V, right))
                            x = sl + (TRIGGER_A,) + sg + (TRIGGER_B,) + sr
                            joint.setdefault(x, {}).setdefault(gap + 1, 0.0)
                            joint[x][gap + 1] += p
    return joint


SMALL = [paper_task(5, 2, 2, 2), paper_task(5, 2, 3, 1), paper_task(6, 1, 3, 2)]


@pytest.mark.parametrize("task", SMALL, ids=lambda t: f"V{t.vocab_size}-{t.max_left}{t.max_gap}"
                                                      f"{t.max_right}")
def test_posterior_equals_the_enumerated_one_for_every_example(task):
    joint = enumerate_examples(task)
    assert abs(sum(sum(d.values()) for d in joint.values()) - 1) < 1e-12
    uncertain = 0
    for x, by_label in joint.items():
        total = sum(by_label.values())
        want = {d: p / total for d, p in by_label.items()}
        got = distance_posterior(list(x) + [0, 0], task)  # padding is stripped
        assert got.keys() == want.keys(), x
        assert all(abs(got[d] - want[d]) < 1e-12 for d in want), (x, got, want)
        uncertain += max(want.values()) < 1
    assert uncertain > 0  # the configuration does hold examples with an uncertain label


def test_the_ceiling_matches_the_exact_one():
    task = SMALL[0]
    joint = enumerate_examples(task)
    exact = sum(max(d.values()) for d in joint.values())
    assert exact < 0.95  # far from 100%: the test can tell a wrong posterior
    c = bayes_ceiling(task, examples=40_000, seed=3)
    assert abs(c.accuracy - exact) < 4 * c.se, (c, exact)
    assert 0 < c.ambiguous < 1 and c.se < 0.003


def test_the_sampler_draws_the_enumerated_distribution():
    """Chi-square of 100,000 draws over every example of a small configuration."""
    task = paper_task(5, 1, 2, 1)
    joint = enumerate_examples(task)
    cells = sorted(joint)
    data = generate(task, 100_000, torch.Generator().manual_seed(11))
    rows = [tuple(r[:int(n)]) for r, n in zip(data.tokens.tolist(), data.lengths.tolist())]
    index = {x: i for i, x in enumerate(cells)}
    counts = [0] * len(cells)
    for r in rows:
        counts[index[r]] += 1  # a row the enumeration does not hold raises KeyError
    expected = [sum(joint[x].values()) * len(rows) for x in cells]
    assert chisquare(counts, expected).pvalue > 1e-4
    # labels: gap + 1, and the triggers sit where the label says
    for r, lab, n in zip(data.tokens[:500], data.labels[:500], data.lengths[:500]):
        a = [i for i in range(int(n)) if r[i] == TRIGGER_A]
        b = [i for i in range(int(n)) if r[i] == TRIGGER_B]
        assert any(j - i == int(lab) for i in a for j in b)


def reference_paper_rows(task, n, seed):
    """Written from reading dis_gen/data-gen.py: segment lengths randint(1, max) each, every
    segment random.sample(vocabulary, length) with the triggers in the vocabulary."""
    rng = random.Random(seed)
    vocab = list(range(1, task.vocab_size))
    out = []
    for _ in range(n):
        between = rng.randint(1, task.max_gap)
        left, right = rng.randint(1, task.max_left), rng.randint(1, task.max_right)
        out.append((rng.sample(vocab, left), rng.sample(vocab, between), rng.sample(vocab, right)))
    return out


def test_statistics_at_the_paper_size_match_the_reference_loop():
    """Vocabulary 574 (the paper's distance code), gaps 1..70, sides 1..25: the fraction of
    examples with an extra trigger copy anywhere and inside the gap, within 4 binomial SE."""
    task = paper_task(574, 25, 70, 25, n=20_000)
    n = 20_000
    ref = reference_paper_rows(task, n, seed=5)
    trig = (TRIGGER_A, TRIGGER_B)
    ref_any = sum(any(t in trig for s in segs for t in s) for segs in ref) / n
    ref_gap = sum(any(t in trig for t in segs[1]) for segs in ref) / n
    data = generate(task, n, torch.Generator().manual_seed(5))
    toks, lab, ln = data.tokens, data.labels, data.lengths
    n_trig = ((toks == TRIGGER_A) | (toks == TRIGGER_B)).sum(1)
    ours_any = float((n_trig > 2).double().mean())
    # the data do not store where the real A is: the gap of a row holds a trigger copy when
    # every A..B pair at the label's distance has one between (a copy makes the pair ambiguous
    # only rarely, and then both readings see a trigger in between or the bound is loose by
    # far less than the SE)
    in_gap = []
    for r, d, m in zip(toks.tolist(), lab.tolist(), ln.tolist()):
        pairs = [i for i in range(1, m - d) if r[i] == TRIGGER_A and r[i + d] == TRIGGER_B]
        in_gap.append(all(any(t in trig for t in r[i + 1:i + d]) for i in pairs))
    ours_gap = sum(in_gap) / n
    for ours, theirs in ((ours_any, ref_any), (ours_gap, ref_gap)):
        se = math.sqrt(2 * theirs * (1 - theirs) / n)
        assert abs(ours - theirs) < 4 * se, (ours, theirs)
    assert 0.17 < ref_any < 0.22 and 0.10 < ref_gap < 0.14


def test_clean_ceiling_is_exact_and_the_option_is_checked():
    clean = preset("quick", task="distance").task
    c = bayes_ceiling(clean)
    assert c.accuracy == 1.0 and c.se == 0 and c.examples == 0
    assert bayes_ceiling(preset("quick", task="count").task).accuracy == 1.0
    # clean configs are written as before the field existed: stored run ids stay valid
    assert "sampler" not in preset("quick").to_dict()["task"]
    paper = preset("quick", **{"task.sampler": "paper", "task.vocab_size": 41})
    assert paper.to_dict()["task"]["sampler"] == "paper" and paper.run_id() != preset("quick").run_id()
    with pytest.raises(PosencError, match="distance-task option"):
        TaskConfig(name="count", sampler="paper")
    with pytest.raises(PosencError, match="vocab_size must be >= 71"):
        paper_task(40, 25, 70, 25)
    with pytest.raises(PosencError, match="task.sampler must be one of clean, paper"):
        TaskConfig(sampler="code")


# --- the floor of an order-blind model: the best accuracy from the example's length alone ---

def held_out_length_rule(task, n=60_000, seed=5):
    """The length -> most frequent label rule fitted on one sample of ``task``'s own sampler and
    scored on a second (an unbiased estimate of that rule's accuracy), with its standard error."""
    def draw(s):
        d = generate(task, n, torch.Generator().manual_seed(s))
        return list(zip(d.lengths.tolist(), d.labels.tolist()))
    fit, score = draw(seed), draw(seed + 1)
    by_length = {}
    for length, label in fit:
        by_length.setdefault(length, Counter())[label] += 1
    rule = {length: c.most_common(1)[0][0] for length, c in by_length.items()}
    acc = sum(rule.get(length) == label for length, label in score) / n
    return acc, math.sqrt(acc * (1 - acc) / n)


@pytest.mark.parametrize("task", [
    TaskConfig(name="distance", max_left=3, max_gap=8, max_right=3),
    TaskConfig(name="distance", max_left=1, max_gap=5, max_right=4),
    TaskConfig(name="distance", max_left=8, max_gap=40, max_right=8, vocab_size=32),
    paper_task(12, 4, 6, 2),
    TaskConfig(name="count", n_triggers=4, max_count=10, seq_len=16, vocab_size=16)],
    ids=["smoke-size", "left-1", "quick-size", "paper-sampler", "count"])
def test_length_only_rate_is_what_the_best_length_rule_scores(task):
    """Exact value against the task's own sampler: a length rule fitted on one sample scores it on
    another (within 4 standard errors).  Fails for the chance rate, for the last gap's ways in
    place of the most frequent one's, or for left and right counted as one segment."""
    exact = length_only_rate(task)
    acc, se = held_out_length_rule(task)
    assert abs(acc - exact) < 4 * se + 0.002, (acc, exact)
    if task.name == "distance":
        chance = 1 / task.max_gap
        assert exact > chance + 0.02  # the length tells something: the floor is not chance


def test_length_only_rate_by_hand():
    """The quick size by hand: a length L holds the gap L - 11 in 8 of its (left, right) ways
    for L = 12..51 (the most frequent sum left + right = 9), and 28 more ways at each end."""
    quick = preset("quick", task="distance").task
    assert length_only_rate(quick) == pytest.approx((40 * 8 + 2 * 28) / (8 * 40 * 8))
    assert length_only_rate(preset("quick", task="count").task) == pytest.approx(1 / 31)
