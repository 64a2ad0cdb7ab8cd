"""The trigger token ids of an imported checkpoint, from the ids or from its tokenizer's vocabulary.

The paper's data generators (``dis_gen/data-gen.py``, ``count_gen/data-gen.py``) pick the
trigger *words* at random from their vocabulary, and a ``tokenizers`` tokenizer turns the text
into ids; so a checkpoint saved by the paper's scripts was trained with triggers at whatever ids
that tokenizer gave those words, not at posenc's default ids (distance A = 1, B = 2; count
1 .. n_triggers).  :func:`trigger_ids` takes them either as ids or as words looked up in the
tokenizer's vocabulary file, and refuses what cannot match the data posenc builds:

* a vocabulary file: a flat ``{token: id}`` JSON object (``Tokenizer.get_vocab()``) or a
  ``tokenizers`` ``tokenizer.json`` whose ``model.vocab`` is that object (WordLevel, BPE,
  WordPiece) or a list of ``[token, score]`` pairs whose index is the id (Unigram, the paper's
  ``vocab-gen.py``);
* refused: ids outside ``1 .. rows-1`` (0 is PAD; ``rows`` is the checkpoint's embedding rows),
  repeated ids, the wrong number of triggers for the task, words the vocabulary lacks, a
  vocabulary with ids beyond the embedding, or one that does not give every id ``1 .. rows-1``
  a token (posenc draws filler from all of them, so the model would be scored on ids it never
  saw).

What posenc cannot check without the tokenizer itself: that each filler *word* of the paper's
data was one token (a Unigram tokenizer may split a word into pieces); the import states the
assumption, it does not verify it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

from ...errors import PosencError


def trigger_ids(task: str, rows: int, ids: Optional[Sequence[int]] = None,
                vocab: Optional[str | Path] = None,
                words: Optional[Sequence[str]] = None) -> tuple[int, ...]:
    """The trigger ids for ``task`` (distance: A, B; count: every trigger) of a checkpoint with
    ``rows`` embedding rows: ``ids`` as given, or ``words`` looked up in the vocabulary file
    ``vocab`` (exactly one of the two ways).  PosencError names what does not match."""
    if (ids is None) == (words is None):
        raise PosencError("give the trigger ids (--trigger-ids) or the trigger words with their "
                          "vocabulary (--triggers with --vocab), one of the two")
    if words is not None:
        if vocab is None:
            raise PosencError("--triggers needs --vocab, the tokenizer's vocabulary file")
        mapping = read_vocab(vocab)
        _check_covers(mapping, rows, vocab)
        missing = [w for w in words if w not in mapping]
        if missing:
            raise PosencError(f"the vocabulary {vocab} has no token {missing[0]!r}")
        ids = [mapping[w] for w in words]
    elif vocab is not None:
        raise PosencError("--vocab goes with --triggers (the trigger words to look up)")
    ids = list(ids)
    if task == "distance" and len(ids) != 2:
        raise PosencError(f"the distance task has two triggers (A, then B); got {len(ids)} ids")
    if task == "count" and not ids:
        raise PosencError("the count task needs at least one trigger id")
    if any(not isinstance(t, int) or isinstance(t, bool) for t in ids):
        raise PosencError(f"trigger ids must be integers; got {ids!r}")
    if len(set(ids)) != len(ids):
        raise PosencError(f"trigger ids must be distinct; got {ids}")
    bad = [t for t in ids if not 1 <= t < rows]
    if bad:
        raise PosencError(f"trigger id {bad[0]} is not a token of the checkpoint, whose embedding "
                          f"has {rows} rows (ids 1 .. {rows - 1}; 0 is PAD)")
    return tuple(ids)


def read_vocab(path: str | Path) -> dict[str, int]:
    """``{token: id}`` from a vocabulary file (see the module doc); PosencError otherwise."""
    path = Path(path)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PosencError(f"cannot read vocabulary {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise PosencError(f"vocabulary {path} is not JSON text") from None
    if isinstance(data, dict) and isinstance(data.get("model"), dict) and "vocab" in data["model"]:
        data = data["model"]["vocab"]  # a tokenizers tokenizer.json
    if isinstance(data, list):  # Unigram: [[token, score], ...], the index is the id
        if not all(isinstance(p, list) and p and isinstance(p[0], str) for p in data):
            raise PosencError(f"vocabulary {path}: a list vocabulary must hold [token, score] "
                              "pairs (a Unigram tokenizer's model.vocab)")
        data = {p[0]: i for i, p in enumerate(data)}
    if not isinstance(data, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in data.values()):
        raise PosencError(f"vocabulary {path} is not a {{token: id}} map (Tokenizer.get_vocab()) "
                          "nor a tokenizer.json with model.vocab")
    if len(set(data.values())) != len(data):
        raise PosencError(f"vocabulary {path} gives two tokens the same id")
    return data


def _check_covers(mapping: dict[str, int], rows: int, where: Any) -> None:
    ids = set(mapping.values())
    over = [i for i in ids if not 0 <= i < rows]
    if over:
        raise PosencError(f"the vocabulary {where} has id {max(over)}, but the checkpoint's "
                          f"embedding has only {rows} rows")
    holes = [i for i in range(1, rows) if i not in ids]
    if holes:
        raise PosencError(f"the vocabulary {where} gives no token to {len(holes)} of the ids "
                          f"1 .. {rows - 1} (first {holes[0]}); posenc draws filler from all of "
                          "them, so the imported model would be scored on tokens it never saw")
