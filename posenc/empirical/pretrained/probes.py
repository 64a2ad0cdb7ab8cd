"""Probes that need position, for real pretrained models: token batches with the positions scored.

Decoders (next-token prediction, top-1 accuracy and cross-entropy at the scored positions):

* ``induction`` -- ``[BOS] A A`` with A ``length`` distinct random tokens: at the second copy's
  k-th token the target is A's (k+1)-th, which only the first copy shows, ``length - 1`` tokens
  back (scored: the second copy's first ``length - 1`` tokens).
* ``recency`` -- the order probe: each of ``keys`` distinct key tokens x_k appears twice before
  the query block, followed by a different random token each time (``x_k a_k`` early, ``x_k b_k``
  later, two random filler tokens after each pair, the later pairs in another order); the query
  block repeats each key once (``x_k b_k``, in a third order) and the target at x_k is b_k, the
  token after the key's *more recent* occurrence.  a_k and b_k are equally frequent and equally
  matched by content: only their order tells them apart (a model that ignores order scores at most
  about half).
* ``text`` -- next-token loss on a text (a file the user gives, or the short public-domain text
  posenc ships): non-overlapping windows of ``length`` tokens after BOS, the last ``scored``
  positions of each scored (those with the longest context).

Encoders (BERT-style):

* ``masked-induction`` -- ``[CLS] A A [SEP]`` with every ``MASK_EVERY``-th token of the second
  copy masked; the target is the masked token, which the first copy holds ``length`` tokens back.
* ``masked-text`` -- windows of a text with every ``MASK_EVERY``-th token masked.
  Both need the model's masked-LM head.
* ``order`` -- embeddings (mean-pooled last hidden state, as sentence-transformers pools): per
  example a random sequence S of ``length`` tokens, its half-rotation R (the same tokens, in
  another order) and an anchor (S with one token replaced); correct when the anchor's embedding is
  nearer (cosine) S than R.  The anchor differs from S and from R by one token as a bag of tokens,
  so a model blind to order is at chance (50%); its "loss" is the mean of cos(anchor, R) -
  cos(anchor, S).

Random tokens come from a pool of word-like tokens of the tokenizer (alphabetic, two letters or
more, not special, not a word-piece continuation) when one is given, else from the whole
vocabulary less the special ids; every probe is a function of its seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import torch

from ...errors import PosencError

DECODER_PROBES = ("induction", "recency", "text")
ENCODER_PROBES = ("masked-induction", "masked-text", "order")
PROBES = DECODER_PROBES + ENCODER_PROBES
#: the default probe of each kind of model
DEFAULT_PROBE = {"decoder": "induction", "encoder": "order"}
#: default sizes: examples, length (tokens of A / of a window / keys), scored (text probes)
DEFAULTS = {"induction": (16, 32), "recency": (24, 6), "text": (12, 64),
            "masked-induction": (16, 32), "masked-text": (12, 64), "order": (128, 16)}
TEXT_SCORED = 16
MASK_EVERY = 4
SHIPPED_TEXT = Path(__file__).with_name("probe_text.txt")
MIN_POOL = 16


@dataclass(frozen=True)
class Probe:
    """``tokens`` (rows, T) with ``rows = examples * rows_per_example``; for the next-token and
    masked probes ``positions`` (K,) are the scored positions (the same in every row) and
    ``targets`` (rows, K) the token to predict there; the order probe scores embeddings
    (``positions`` and ``targets`` empty, three rows an example: anchor, S, R)."""

    name: str
    kind: str  # "next" | "masked" | "order"
    tokens: torch.Tensor
    positions: torch.Tensor
    targets: torch.Tensor
    rows_per_example: int = 1
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def n_examples(self) -> int:
        return self.tokens.shape[0] // self.rows_per_example

    @property
    def n_predictions(self) -> int:
        return self.n_examples if self.kind == "order" else int(self.targets.numel())


@dataclass(frozen=True)
class Vocabulary:
    """What a probe needs of a tokenizer: the pool of random tokens and the special ids."""

    pool: tuple[int, ...]
    bos: Optional[int] = None
    cls: Optional[int] = None
    sep: Optional[int] = None
    mask: Optional[int] = None
    tokenizer: Any = None

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            raise PosencError("the text probes need the model's tokenizer, and none was found in the "
                              "model folder or GGUF file")
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def _word_like(token: Any) -> bool:
    if not isinstance(token, str) or token.startswith("##"):
        return False
    word = token.lstrip("\u0120\u2581 ")  # GPT-2's and SentencePiece's word-start marks
    return len(word) >= 2 and word.isascii() and word.isalpha()


def vocabulary(vocab_size: int, tokenizer: Any = None, config: Any = None) -> Vocabulary:
    """The :class:`Vocabulary` of a model: from its tokenizer when given, else its config."""
    def special(name: str) -> Optional[int]:
        for src in (tokenizer, config):
            value = getattr(src, f"{name}_token_id", None) if src is not None else None
            if isinstance(value, int) and 0 <= value < vocab_size:
                return value
        return None

    specials = {v for v in (special(n) for n in ("bos", "eos", "pad", "unk", "mask", "cls", "sep"))
                if v is not None}
    if tokenizer is not None:
        specials |= {i for i in getattr(tokenizer, "all_special_ids", []) if isinstance(i, int)}
        ids = list(range(min(vocab_size, len(tokenizer))))
        pool = [i for i, t in zip(ids, tokenizer.convert_ids_to_tokens(ids))
                if i not in specials and _word_like(t)]
        if len(pool) < MIN_POOL:
            pool = [i for i in ids if i not in specials]
    else:
        pool = [i for i in range(vocab_size) if i not in specials]
    if len(pool) < MIN_POOL:
        raise PosencError(f"the vocabulary has {len(pool)} ordinary tokens; the random probes need at "
                          f"least {MIN_POOL}")
    return Vocabulary(tuple(pool), special("bos"), special("cls"), special("sep"), special("mask"),
                      tokenizer)


def _draw(pool: torch.Tensor, rows: int, k: int, gen: torch.Generator) -> torch.Tensor:
    """``rows`` x ``k`` tokens of ``pool``, distinct within a row."""
    if k > pool.numel():
        raise PosencError(f"a probe row needs {k} distinct tokens; the pool holds {pool.numel()}")
    keys = torch.rand(rows, pool.numel(), generator=gen)
    return pool[keys.argsort(dim=1)[:, :k]]


def _prefix(vocab: Vocabulary, rows: int) -> torch.Tensor:
    return torch.full((rows, 1 if vocab.bos is not None else 0), vocab.bos or 0, dtype=torch.long)


def _next(name: str, tokens: torch.Tensor, positions: Sequence[int], params: dict) -> Probe:
    pos = torch.tensor(list(positions), dtype=torch.long)
    return Probe(name, "next", tokens, pos, tokens[:, pos + 1], 1, params)


def induction(vocab: Vocabulary, examples: int, length: int, seed: int) -> Probe:
    gen = torch.Generator().manual_seed(seed)
    a = _draw(torch.tensor(vocab.pool), examples, length, gen)
    head = _prefix(vocab, examples)
    tokens = torch.cat([head, a, a], dim=1)
    start = head.shape[1] + length
    return _next("induction", tokens, range(start, start + length - 1),
                 {"seed": seed, "examples": examples, "length": length})


def recency(vocab: Vocabulary, examples: int, keys: int, seed: int) -> Probe:
    gen = torch.Generator().manual_seed(seed)
    m = keys
    draw = _draw(torch.tensor(vocab.pool), examples, 3 * m + 4 * m, gen)
    x, a, b, filler = draw[:, :m], draw[:, m:2 * m], draw[:, 2 * m:3 * m], draw[:, 3 * m:]
    orders = [torch.arange(m)] + [torch.randperm(m, generator=gen) for _ in range(2)]
    blocks, fill = [], iter(filler.split(2, dim=1))
    for values, order in ((a, orders[0]), (b, orders[1])):
        for k in order.tolist():
            blocks += [x[:, k:k + 1], values[:, k:k + 1], next(fill)]
    head = _prefix(vocab, examples)
    query_start = head.shape[1] + 8 * m
    for k in orders[2].tolist():
        blocks += [x[:, k:k + 1], b[:, k:k + 1]]
    tokens = torch.cat([head] + blocks, dim=1)
    return _next("recency", tokens, range(query_start, query_start + 2 * m, 2),
                 {"seed": seed, "examples": examples, "keys": keys})


def _text_ids(vocab: Vocabulary, text: Optional[str]) -> tuple[list[int], str]:
    if text is None:
        return vocab.encode(SHIPPED_TEXT.read_text(encoding="utf-8")), "posenc's probe text"
    return vocab.encode(text), "the given text"


def _windows(ids: list[int], examples: int, length: int, source: str) -> torch.Tensor:
    need = examples * length
    if len(ids) < need:
        raise PosencError(f"{source} has {len(ids)} tokens; {examples} windows of {length} need {need} "
                          f"(give fewer --examples, a shorter --length or a longer --text)")
    return torch.tensor(ids[:need], dtype=torch.long).view(examples, length)


def text(vocab: Vocabulary, examples: int, length: int, seed: int, source: Optional[str] = None,
         scored: int = TEXT_SCORED) -> Probe:
    ids, what = _text_ids(vocab, source)
    body = _windows(ids, examples, length, what)
    head = _prefix(vocab, examples)
    tokens = torch.cat([head, body], dim=1)
    T = tokens.shape[1]
    scored = min(scored, T - 1)
    return _next("text", tokens, range(T - 1 - scored, T - 1),
                 {"seed": seed, "examples": examples, "length": length, "scored": scored,
                  "text": what})


def _masked(name: str, vocab: Vocabulary, body: torch.Tensor, masked: Sequence[int],
            params: dict) -> Probe:
    if vocab.mask is None or vocab.cls is None or vocab.sep is None:
        raise PosencError(f"the {name} probe needs the tokenizer's [CLS], [SEP] and [MASK] tokens")
    rows = body.shape[0]
    tokens = torch.cat([torch.full((rows, 1), vocab.cls), body, torch.full((rows, 1), vocab.sep)], dim=1)
    pos = torch.tensor([1 + p for p in masked], dtype=torch.long)
    targets = tokens[:, pos].clone()
    tokens[:, pos] = vocab.mask
    return Probe(name, "masked", tokens, pos, targets, 1, params)


def masked_induction(vocab: Vocabulary, examples: int, length: int, seed: int) -> Probe:
    gen = torch.Generator().manual_seed(seed)
    a = _draw(torch.tensor(vocab.pool), examples, length, gen)
    return _masked("masked-induction", vocab, torch.cat([a, a], dim=1),
                   range(length, 2 * length, MASK_EVERY),
                   {"seed": seed, "examples": examples, "length": length, "mask_every": MASK_EVERY})


def masked_text(vocab: Vocabulary, examples: int, length: int, seed: int,
                source: Optional[str] = None) -> Probe:
    ids, what = _text_ids(vocab, source)
    body = _windows(ids, examples, length, what)
    return _masked("masked-text", vocab, body, range(MASK_EVERY - 1, length, MASK_EVERY),
                   {"seed": seed, "examples": examples, "length": length, "mask_every": MASK_EVERY,
                    "text": what})


def order(vocab: Vocabulary, examples: int, length: int, seed: int) -> Probe:
    if vocab.cls is None or vocab.sep is None:
        raise PosencError("the order probe needs the tokenizer's [CLS] and [SEP] tokens")
    if length < 4:
        raise PosencError(f"the order probe needs --length of at least 4; got {length}")
    gen = torch.Generator().manual_seed(seed)
    draw = _draw(torch.tensor(vocab.pool), examples, length + 1, gen)
    s, new = draw[:, :length], draw[:, length]
    rotated = s.roll(length // 2, dims=1)
    anchor = s.clone()
    where = torch.randint(0, length, (examples,), generator=gen)
    anchor[torch.arange(examples), where] = new
    rows = torch.stack([anchor, s, rotated], dim=1).reshape(3 * examples, length)
    tokens = torch.cat([torch.full((3 * examples, 1), vocab.cls), rows,
                        torch.full((3 * examples, 1), vocab.sep)], dim=1)
    empty = torch.zeros(0, dtype=torch.long)
    return Probe("order", "order", tokens, empty, empty, 3,
                 {"seed": seed, "examples": examples, "length": length})


def make_probe(name: str, kind: str, vocab: Vocabulary, *, examples: Optional[int] = None,
               length: Optional[int] = None, seed: int = 0, text_source: Optional[str] = None) -> Probe:
    """The probe ``name`` for a model of ``kind`` (decoder | encoder), sizes defaulting to
    :data:`DEFAULTS`."""
    allowed = DECODER_PROBES if kind == "decoder" else ENCODER_PROBES
    if name not in allowed:
        raise PosencError(f"probe {name!r} is not for {kind} models; for a {kind}: {', '.join(allowed)}")
    if text_source is not None and name not in ("text", "masked-text"):
        raise PosencError(f"--text goes with the text probes (text, masked-text), not {name}")
    d_examples, d_length = DEFAULTS[name]
    examples = d_examples if examples is None else examples
    length = d_length if length is None else length
    if examples < 2:
        raise PosencError(f"a probe needs at least 2 examples; got {examples}")
    least = 1 if name == "recency" else 2
    if length < least:
        raise PosencError(f"the {name} probe needs --length of at least {least}; got {length}")
    if name == "induction":
        return induction(vocab, examples, length, seed)
    if name == "recency":
        return recency(vocab, examples, length, seed)
    if name == "text":
        return text(vocab, examples, length, seed, text_source)
    if name == "masked-induction":
        return masked_induction(vocab, examples, length, seed)
    if name == "masked-text":
        return masked_text(vocab, examples, length, seed, text_source)
    return order(vocab, examples, length, seed)
