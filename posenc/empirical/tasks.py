"""Synthetic tasks of Gu et al. (arXiv 2505.13027), generated in memory, vectorised, seeded.

* ``distance`` (position-sensitive): filler tokens with trigger ``A`` then
  trigger ``B``; ``left`` filler before A (1..max_left), ``gap`` filler between
  them (1..max_gap), ``right`` filler after B (1..max_right); the label is
  ``gap + 1`` = pos(B) - pos(A).  Examples are right-padded with ``PAD`` to the
  task length.  Chance accuracy is 1 / max_gap.  Filler: with ``sampler="clean"``
  every token independently from the non-trigger tokens; with ``sampler="paper"``
  each segment without repeats from all non-PAD tokens, triggers included, as the
  paper's generator does (so an example may hold extra copies of A or B).
* ``count`` (position-agnostic): ``seq_len`` tokens of which ``k`` (0..max_count,
  uniform) are drawn from the ``n_triggers`` trigger tokens and the rest from
  the non-trigger filler, in random order; the label is ``k``.

Token ids: ``PAD = 0``; distance uses ``A = 1``, ``B = 2`` and filler
``3 .. vocab-1``; count uses triggers ``1 .. n_triggers`` and filler above.
``task.trigger_ids`` names other trigger ids (e.g. a tokenizer's); the filler is then every
other non-PAD id, and the random draws are the same as with the default ids (the i-th filler
id takes the place of id ``3 + i``, resp. ``n_triggers + 1 + i``).

The train/test split is made by seed and never leaks a duplicate: identical
examples are grouped (by a 64-bit row hash; equal rows always share a hash,
so a rare hash collision can only merge two groups, never split one) and
every group goes wholly to one side.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import PosencError
from .config import TaskConfig

PAD, TRIGGER_A, TRIGGER_B = 0, 1, 2


@dataclass(frozen=True)
class TaskData:
    """Examples of one task: ``tokens`` (N, T) long, ``labels`` (N,) long, ``lengths`` (N,) long."""

    tokens: torch.Tensor
    labels: torch.Tensor
    lengths: torch.Tensor
    n_classes: int

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def subset(self, index: torch.Tensor | slice) -> "TaskData":
        return TaskData(self.tokens[index], self.labels[index], self.lengths[index], self.n_classes)

    @property
    def pad_mask(self) -> torch.Tensor:
        """(N, T) bool, True at real (non-padding) tokens."""
        return self.tokens != PAD


@dataclass(frozen=True)
class Split:
    train: TaskData
    test: TaskData


def generate(task: TaskConfig, n: int, generator: torch.Generator) -> TaskData:
    """``n`` examples of ``task`` drawn with ``generator`` (no split, duplicates possible)."""
    if task.name == "distance":
        return _distance(task, n, generator)
    if task.name == "count":
        return _count(task, n, generator)
    raise PosencError(f"unknown task {task.name!r}")  # pragma: no cover - TaskConfig validates


def make_split(task: TaskConfig, seed: int = 0) -> Split:
    """Generate ``task.n_samples`` examples with seed ``task.data_seed`` (else ``seed``) and split."""
    data_seed = task.data_seed if task.data_seed is not None else seed
    gen = torch.Generator().manual_seed(int(data_seed))
    data = generate(task, task.n_samples, gen)
    train_idx, test_idx = split_indices(data.tokens, task.train_frac, gen)
    if len(test_idx) == 0 or len(train_idx) == 0:
        raise PosencError(f"task.n_samples {task.n_samples} is too small to split "
                          f"{task.train_frac:.0%}/{1 - task.train_frac:.0%}")
    return Split(data.subset(train_idx), data.subset(test_idx))


def carve_validation(train: TaskData, val_frac: float, seed: int) -> tuple[TaskData, TaskData]:
    """Split a *training* split into (train, validation), ``val_frac`` of it for validation, by
    :func:`split_indices` (identical rows stay on one side) with a generator of its own seed."""
    gen = torch.Generator().manual_seed(2 ** 40 + int(seed))  # apart from make_split's stream
    keep, val = split_indices(train.tokens, 1.0 - val_frac, gen)
    if len(keep) == 0 or len(val) == 0:
        raise PosencError(f"the training split ({len(train)} examples) is too small to hold out "
                          f"val_frac {val_frac:.0%} for validation")
    return train.subset(keep), train.subset(val)


def split_indices(tokens: torch.Tensor, train_frac: float,
                  generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices (sorted) of train and test rows; identical rows always fall on the same side."""
    n, t = tokens.shape
    # Row hash: sum of token * random weight, bounded so the int64 sum cannot overflow.
    bound = max(2, (2 ** 62) // (t * (int(tokens.max()) + 1)))
    weights = torch.randint(1, bound, (t,), generator=generator, dtype=torch.int64)
    row_hash = (tokens.to(torch.int64) * weights).sum(dim=1)  # (N,)
    _, group = torch.unique(row_hash, return_inverse=True)  # (N,) group id per row
    n_groups = int(group.max()) + 1
    order = torch.randperm(n_groups, generator=generator)  # random order of groups
    sizes = torch.bincount(group, minlength=n_groups)[order]
    cum = torch.cumsum(sizes, 0)
    target = int(round(train_frac * n))
    goes_train = torch.zeros(n_groups, dtype=torch.bool)
    goes_train[order[cum <= target]] = True
    is_train = goes_train[group]
    return torch.nonzero(is_train).flatten(), torch.nonzero(~is_train).flatten()


def _distance(task: TaskConfig, n: int, gen: torch.Generator) -> TaskData:
    T = task.length
    left = torch.randint(1, task.max_left + 1, (n,), generator=gen)
    gap = torch.randint(1, task.max_gap + 1, (n,), generator=gen)
    right = torch.randint(1, task.max_right + 1, (n,), generator=gen)
    pos_a, pos_b = left, left + gap + 1
    if task.sampler == "paper":
        tokens = _paper_fillers(task, pos_a, pos_b, gen)
    else:
        tokens = torch.randint(3, task.vocab_size, (n, T), generator=gen)  # filler
        if task.trigger_ids is not None:  # the i-th filler id in place of 3 + i
            tokens = torch.tensor((0, 0, 0) + task.fillers)[tokens]
    rows = torch.arange(n)
    a, b = task.triggers
    tokens[rows, pos_a] = a
    tokens[rows, pos_b] = b
    lengths = left + gap + right + 2
    tokens[torch.arange(T)[None, :] >= lengths[:, None]] = PAD
    return TaskData(tokens, pos_b - pos_a, lengths, task.n_classes)


#: rows per chunk of the paper sampler's (rows, 3, vocab) random keys (~24 MB at vocab 574)
_CHUNK = 4096


def _paper_fillers(task: TaskConfig, pos_a: torch.Tensor, pos_b: torch.Tensor,
                   gen: torch.Generator) -> torch.Tensor:
    """(N, T) filler of the paper's sampler for triggers at ``pos_a`` < ``pos_b`` (N,): each
    segment (before A, between, after B) is the first entries of a uniformly random ordering of
    the non-PAD tokens ``1 .. vocab-1`` (= a draw without replacement), independently per
    segment: the tokens of the ``width`` smallest of i.i.d. uniform keys, in key order."""
    n, T, V = len(pos_a), task.length, task.vocab_size - 1
    width = max(task.max_left, task.max_gap, task.max_right)
    segments = torch.empty((n, 3, width), dtype=torch.int64)  # (N, left|gap|right, width)
    for start in range(0, n, _CHUNK):
        rows = min(_CHUNK, n - start)
        keys = torch.rand((rows, 3, V), generator=gen)
        segments[start:start + rows] = 1 + keys.topk(width, dim=2, largest=False).indices
    t = torch.arange(T)[None, :]  # (1, T)
    a, b = pos_a[:, None], pos_b[:, None]  # (N, 1)
    seg = torch.where(t < a, 0, torch.where(t < b, 1, 2))  # (N, T) segment per position
    offset = torch.where(seg == 0, t, torch.where(seg == 1, t - a - 1, t - b - 1))
    tokens = segments.gather(2, offset.clamp(0, width - 1)[:, None, :].expand(n, 3, T))
    return tokens.gather(1, seg[:, None, :]).squeeze(1)  # (N, T)


def _count(task: TaskConfig, n: int, gen: torch.Generator) -> TaskData:
    T = task.content_length
    k = torch.randint(0, task.max_count + 1, (n,), generator=gen)
    # A uniformly random set of k positions per row: the k smallest of random keys.
    keys = torch.randint(0, 2 ** 30, (n, T), generator=gen, dtype=torch.int32)
    rank = torch.empty((n, T), dtype=torch.int64)
    rank.scatter_(1, keys.argsort(dim=1), torch.arange(T).expand(n, T).contiguous())
    is_trigger = rank < k[:, None]
    # One draw gives both a trigger choice and a filler choice per cell.
    n_fill = task.vocab_size - task.n_triggers - 1
    r = torch.randint(0, task.n_triggers * n_fill, (n, T), generator=gen)
    trig, filler = r % task.n_triggers, r // task.n_triggers  # indices into the id lists
    if task.trigger_ids is None:
        trig, filler = 1 + trig, task.n_triggers + 1 + filler
    else:
        trig, filler = torch.tensor(task.triggers)[trig], torch.tensor(task.fillers)[filler]
    tokens = torch.where(is_trigger, trig, filler)
    if task.length > T:  # task.pad_to: PAD after the example, as the paper's code pads to 128
        tokens = torch.cat([tokens, torch.full((n, task.length - T), PAD, dtype=tokens.dtype)], 1)
    return TaskData(tokens, k, torch.full((n,), T), task.n_classes)
