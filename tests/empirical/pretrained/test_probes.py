"""The probes' structure (:mod:`posenc.empirical.pretrained.probes`): what each target is, by
construction, for any seed and size."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc.empirical.pretrained import probes as P
from posenc.errors import PosencError

POOL = tuple(range(10, 110))
DEC = P.Vocabulary(POOL, bos=1)
ENC = P.Vocabulary(POOL, cls=2, sep=3, mask=4)


@given(st.integers(0, 2**32), st.integers(2, 12), st.integers(2, 30))
def test_induction_target_is_the_token_after_the_first_copy(seed, examples, length):
    p = P.make_probe("induction", "decoder", DEC, examples=examples, length=length, seed=seed)
    tok = p.tokens
    assert tok.shape == (examples, 1 + 2 * length) and (tok[:, 0] == 1).all()
    assert len(p.positions) == length - 1
    for r in range(examples):
        row = tok[r].tolist()
        assert len(set(row[1:1 + length])) == length            # A's tokens distinct
        for k, pos in enumerate(p.positions.tolist()):
            assert row[pos] == row[1 + k]                         # the query repeats A's k-th token
            assert int(p.targets[r, k]) == row[pos + 1] == row[2 + k]   # target: A's next, length-1 back
    assert torch.equal(p.tokens, P.make_probe("induction", "decoder", DEC, examples=examples,
                                              length=length, seed=seed).tokens)


@given(st.integers(0, 2**32), st.integers(2, 10), st.integers(1, 8))
def test_recency_target_follows_the_more_recent_occurrence(seed, examples, keys):
    p = P.make_probe("recency", "decoder", DEC, examples=examples, length=keys, seed=seed)
    assert p.tokens.shape[1] == 1 + 10 * keys and len(p.positions) == keys
    for r in range(examples):
        row = p.tokens[r].tolist()
        for k, pos in enumerate(p.positions.tolist()):
            key = row[pos]
            earlier = [i for i in range(pos) if row[i] == key]
            assert len(earlier) == 2                              # the key twice before the query
            recent, old = row[earlier[1] + 1], row[earlier[0] + 1]
            assert int(p.targets[r, k]) == recent != old          # the more recent continuation
            assert row.count(recent) == 2 and row.count(old) == 1  # b_k: once before and as answer


@given(st.integers(0, 2**32), st.integers(2, 8), st.integers(4, 20))
def test_order_views_share_their_bag_of_tokens(seed, examples, length):
    p = P.make_probe("order", "encoder", ENC, examples=examples, length=length, seed=seed)
    assert p.rows_per_example == 3 and p.n_predictions == examples
    for e in range(examples):
        anchor, s, rot = (p.tokens[3 * e + v, 1:-1].tolist() for v in range(3))
        assert sorted(s) == sorted(rot) and s != rot              # same tokens, other order
        assert sum(a != b for a, b in zip(anchor, s)) == 1        # the anchor: one token replaced
        assert len(set(anchor) - set(s)) == 1 and len(set(s) - set(anchor)) == 1


@given(st.integers(0, 2**32), st.integers(2, 6), st.integers(4, 24))
def test_masked_induction_masks_the_second_copy(seed, examples, length):
    p = P.make_probe("masked-induction", "encoder", ENC, examples=examples, length=length, seed=seed)
    tok = p.tokens
    assert (tok[:, 0] == 2).all() and (tok[:, -1] == 3).all()
    for r in range(examples):
        for k, pos in enumerate(p.positions.tolist()):
            assert int(tok[r, pos]) == 4 and pos > length            # masked, in the second copy
            assert int(p.targets[r, k]) == int(tok[r, pos - length])  # the first copy shows it


class _WordTokenizer:
    """A whitespace tokenizer over a fixed word list (what the text probes need of one)."""

    all_special_ids = [0]
    bos_token_id = 0

    def __init__(self, words):
        self.words = ["<s>"] + words

    def __len__(self):
        return len(self.words)

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [self.words.index(w) for w in text.split()]}

    def convert_ids_to_tokens(self, ids):
        return [self.words[i] for i in ids]


def test_text_windows_and_vocabulary():
    words = [f"w{chr(97 + i)}{chr(97 + j)}" for i in range(26) for j in range(3)] + ["x1", "##ab", "a"]
    tok = _WordTokenizer(words)
    vocab = P.vocabulary(len(tok.words), tok)
    ids = set(range(1, len(tok.words)))
    assert set(vocab.pool) == ids - {tok.words.index(w) for w in ("x1", "##ab", "a")}   # word-like only
    text = " ".join(words[i % 78] for i in range(300))
    p = P.make_probe("text", "decoder", vocab, examples=4, length=50, seed=0, text_source=text)
    assert p.tokens.shape == (4, 51) and len(p.positions) == P.TEXT_SCORED
    assert p.positions.tolist() == list(range(50 - P.TEXT_SCORED, 50))
    assert p.tokens[1, 1:].tolist() == tok(text)["input_ids"][50:100]
    with pytest.raises(PosencError, match="has 300 tokens; 7 windows of 50 need 350"):
        P.make_probe("text", "decoder", vocab, examples=7, length=50, seed=0, text_source=text)


def test_probe_refusals():
    with pytest.raises(PosencError, match="not for decoder models"):
        P.make_probe("order", "decoder", DEC)
    with pytest.raises(PosencError, match="needs the tokenizer's"):
        P.make_probe("order", "encoder", DEC)
    with pytest.raises(PosencError, match="need the model's tokenizer"):
        P.make_probe("text", "decoder", DEC)
    with pytest.raises(PosencError, match="distinct tokens"):
        P.make_probe("induction", "decoder", DEC, length=101)
    with pytest.raises(PosencError, match="--text goes with the text probes"):
        P.make_probe("induction", "decoder", DEC, text_source="a b")
    with pytest.raises(PosencError, match="at least 2 examples"):
        P.make_probe("induction", "decoder", DEC, examples=1)


def test_shipped_text_is_long_enough_for_the_defaults():
    words = P.SHIPPED_TEXT.read_text(encoding="utf-8").split()
    examples, length = P.DEFAULTS["text"]
    assert len(words) >= examples * length * 0.6   # subword tokenizers give more tokens than words
