"""Synthetic tasks: labels against a per-example loop, seeding, and a split without leakage."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc.empirical.config import TaskConfig
from posenc.empirical.tasks import PAD, TRIGGER_A, TRIGGER_B, generate, make_split
from posenc.errors import PosencError


def _gen(task, n=300, seed=0):
    return generate(task, n, torch.Generator().manual_seed(seed))


@given(st.integers(1, 6), st.integers(1, 12), st.integers(1, 6), st.integers(4, 20), st.integers(0, 99))
def test_distance_examples_by_loop(L, G, R, vocab, seed):
    task = TaskConfig(name="distance", max_left=L, max_gap=G, max_right=R, vocab_size=vocab)
    d = _gen(task, 200, seed)
    assert d.tokens.shape == (200, L + G + R + 2) and d.n_classes == G + 2
    for row, label, length in zip(d.tokens.tolist(), d.labels.tolist(), d.lengths.tolist()):
        a, b = row.index(TRIGGER_A), row.index(TRIGGER_B)
        assert row.count(TRIGGER_A) == 1 and row.count(TRIGGER_B) == 1
        assert 1 <= a <= L and 1 <= b - a - 1 <= G and 1 <= length - b - 1 <= R
        assert label == b - a
        assert all(t >= 3 for k, t in enumerate(row[:length]) if k not in (a, b))
        assert all(t == PAD for t in row[length:])


@given(st.integers(1, 8), st.integers(0, 20), st.integers(20, 30), st.integers(0, 99))
def test_count_examples_by_loop(n_trig, K, T, seed):
    task = TaskConfig(name="count", n_triggers=n_trig, max_count=K, seq_len=T, vocab_size=n_trig + 5)
    d = _gen(task, 200, seed)
    assert d.tokens.shape == (200, T) and d.n_classes == K + 1
    for row, label in zip(d.tokens.tolist(), d.labels.tolist()):
        assert sum(1 <= t <= n_trig for t in row) == label <= K
        assert all(1 <= t < task.vocab_size for t in row)  # no padding in count


def test_count_labels_cover_the_range_uniformly_enough():
    task = TaskConfig(name="count", n_triggers=3, max_count=4, seq_len=10, vocab_size=8)
    counts = torch.bincount(_gen(task, 5000).labels, minlength=5)
    assert counts.min() > 800  # uniform would be 1000 each; 800 is > 6 sd below


def test_same_seed_same_data_other_seed_other_data():
    task = TaskConfig()
    a, b, c = make_split(task, 3), make_split(task, 3), make_split(task, 4)
    assert torch.equal(a.train.tokens, b.train.tokens) and torch.equal(a.test.labels, b.test.labels)
    assert not torch.equal(a.train.tokens, c.train.tokens)
    assert torch.equal(make_split(TaskConfig(data_seed=9), 1).train.tokens,
                       make_split(TaskConfig(data_seed=9), 2).train.tokens)


@given(st.integers(2, 4), st.integers(50, 600), st.floats(0.2, 0.9), st.integers(0, 99))
def test_split_never_leaks_a_duplicate(vocab_extra, n, frac, seed):
    # A tiny vocabulary and short sequences make duplicates common.
    task = TaskConfig(name="distance", max_left=1, max_gap=3, max_right=1, vocab_size=3 + vocab_extra,
                      n_samples=n, train_frac=frac)
    try:
        s = make_split(task, seed)
    except PosencError:
        return  # too few distinct examples to split: reported, not silently wrong
    train_rows = {tuple(r) for r in s.train.tokens.tolist()}
    test_rows = {tuple(r) for r in s.test.tokens.tolist()}
    assert not train_rows & test_rows
    assert len(s.train) + len(s.test) == n
    assert len(s.train) <= round(frac * n)


def test_large_split_is_close_to_the_fraction():
    s = make_split(TaskConfig(n_samples=5000, max_left=5, max_gap=20, max_right=5, vocab_size=30), 0)
    assert abs(len(s.train) - 3500) <= 5


@pytest.mark.parametrize("kw,match", [
    (dict(name="sorting"), "unknown task"),
    (dict(seq_len=5), "shorter than the longest"),
    (dict(name="count", n_triggers=10, vocab_size=8), "vocab_size"),
    (dict(name="count", max_count=30, seq_len=10), "exceeds"),
    (dict(n_samples=0), "positive integer"),
])
def test_bad_task_configs(kw, match):
    with pytest.raises(PosencError, match=match):
        TaskConfig(**kw)


# --- count examples padded as the paper's code pads them (task.pad_to) ---

@given(st.integers(1, 6), st.integers(0, 10), st.integers(10, 20), st.integers(0, 8),
       st.integers(0, 99))
def test_count_padding_appends_pad_and_keeps_the_example(n_trig, K, T, extra, seed):
    """pad_to: the example's T tokens, then PAD up to pad_to; labels, lengths and the tokens
    are those of the unpadded task drawn with the same seed (the padding draws nothing)."""
    base = TaskConfig(name="count", n_triggers=n_trig, max_count=K, seq_len=T, vocab_size=n_trig + 5)
    padded = TaskConfig(**{**base.__dict__, "pad_to": T + extra})
    a = generate(base, 40, torch.Generator().manual_seed(seed))
    b = generate(padded, 40, torch.Generator().manual_seed(seed))
    assert b.tokens.shape == (40, T + extra) and padded.length == T + extra
    assert torch.equal(b.tokens[:, :T], a.tokens) and bool((b.tokens[:, T:] == PAD).all())
    assert not bool((b.tokens[:, :T] == PAD).any())  # PAD is never a count token
    assert torch.equal(b.labels, a.labels) and torch.equal(b.lengths, a.lengths)
    assert bool((b.lengths == T).all())


def test_pad_to_is_checked_and_left_out_at_its_default():
    with pytest.raises(PosencError, match="task.pad_to is a count-task option"):
        TaskConfig(name="distance", pad_to=64)
    with pytest.raises(PosencError, match="task.pad_to 10 is shorter than the count example's 16"):
        TaskConfig(name="count", seq_len=16, pad_to=10)
    with pytest.raises(PosencError, match="task.pad_to must be"):
        TaskConfig(name="count", seq_len=16, pad_to=0)
    from posenc.empirical.config import TrainConfig
    assert "pad_to" not in TrainConfig(task=TaskConfig(name="count")).to_dict()["task"]
    assert TrainConfig(task=TaskConfig(name="count", seq_len=16, pad_to=20)).to_dict()["task"][
        "pad_to"] == 20
