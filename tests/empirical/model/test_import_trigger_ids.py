"""``import-checkpoint --trigger-ids`` / ``--triggers --vocab``: an imported paper model is scored
on data whose triggers are the ids it was trained with; an import whose data cannot match is
refused, one line, nothing written."""

import json
import random

import pytest
import torch
from test_paper_code import reference

import posenc
from posenc.cli import main
from posenc.empirical.training.train import evaluate
from posenc.empirical.config import TaskConfig
from posenc.empirical.tasks import generate

#: the smoke count task (16 tokens, 0..10 triggers, vocabulary 16) with the triggers at ids a
#: tokenizer could have given four random trigger words
IDS = (11, 3, 14, 6)
LEN, MAX_COUNT, VOCAB = 16, 10, 16


def paper_count_examples(ids, n, seed):
    """Count examples as ``count_gen/data-gen.py`` builds them, written from reading it (not
    with posenc's sampler): k uniform in 0..max, k draws of the trigger words with repetition,
    the rest from the other words, shuffled.  Every id but PAD (0) is a word."""
    rnd = random.Random(seed)
    others = [t for t in range(1, VOCAB) if t not in ids]
    rows, labels = [], []
    for _ in range(n):
        k = rnd.randint(0, MAX_COUNT)
        row = [rnd.choice(ids) for _ in range(k)] + rnd.choices(others, k=LEN - k)
        rnd.shuffle(row)
        rows.append(row)
        labels.append(k)
    return torch.tensor(rows), torch.tensor(labels)


@pytest.fixture(scope="module")
def trained_reference():
    """The paper code's NoPE model (independent re-implementation) trained on count data with
    triggers at IDS until it counts (Adam, 400 steps of 64; measured >= 0.9 test accuracy)."""
    torch.manual_seed(0)
    ref = reference("nope", seed=0).train()
    x, y = paper_count_examples(IDS, 4000, seed=1)
    opt = torch.optim.Adam(ref.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(2)
    for _ in range(400):
        idx = torch.randint(0, len(x), (64,), generator=gen)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ref(x[idx]), y[idx]).backward()
        opt.step()
    return ref.eval()


def _accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(-1) == y).double().mean().item()


def test_posenc_count_data_with_trigger_ids_holds_them_as_the_labels_say():
    task = TaskConfig(name="count", vocab_size=VOCAB, n_triggers=4, max_count=MAX_COUNT,
                      seq_len=LEN, trigger_ids=IDS)
    data = generate(task, 2000, torch.Generator().manual_seed(0))
    is_trigger = torch.isin(data.tokens, torch.tensor(IDS))
    assert torch.equal(is_trigger.sum(1), data.labels)  # exactly the labelled number of triggers
    assert not (data.tokens == 0).any()  # count rows are full; PAD is never a filler
    assert set(data.tokens.unique().tolist()) == set(range(1, VOCAB))  # every other id fills


def test_posenc_distance_data_puts_a_and_b_at_their_ids():
    task = TaskConfig(name="distance", vocab_size=VOCAB, trigger_ids=(9, 4))
    data = generate(task, 2000, torch.Generator().manual_seed(0))
    rows = torch.arange(len(data))
    a = (data.tokens == 9).int().argmax(1)
    b = (data.tokens == 4).int().argmax(1)
    assert ((data.tokens == 9).sum(1) == 1).all() and ((data.tokens == 4).sum(1) == 1).all()
    assert torch.equal(b - a, data.labels)
    assert (data.tokens[rows, a] == 9).all() and not torch.isin(data.tokens, torch.tensor([1, 2])).all()
    assert {1, 2} <= set(data.tokens.unique().tolist())  # the default ids are filler now


@pytest.mark.parametrize("name,vocab,ids", [("distance", 16, (1, 2)), ("count", 16, (1, 2, 3, 4)),
                                            ("distance", 40, (1, 2))])
def test_the_default_ids_stated_give_the_same_data_as_before(name, vocab, ids):
    plain = TaskConfig(name=name, vocab_size=vocab)
    stated = TaskConfig(name=name, vocab_size=vocab, trigger_ids=ids)
    a = generate(plain, 500, torch.Generator().manual_seed(3))
    b = generate(stated, 500, torch.Generator().manual_seed(3))
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.labels, b.labels)
    assert "trigger_ids" not in posenc.empirical.config.preset("smoke", task=name).to_dict()["task"]


def test_an_imported_model_scores_on_its_own_ids_as_the_reference_does(tmp_path, trained_reference):
    ref = trained_reference
    x, y = paper_count_examples(IDS, 1000, seed=5)
    ref_acc = _accuracy(ref, x, y)
    assert ref_acc >= 0.9, ref_acc  # the reference learned to count its triggers
    torch.save(ref.state_dict(), tmp_path / "model.pth")
    ids = ",".join(map(str, IDS))
    assert main(["import-checkpoint", str(tmp_path / "model.pth"), "--paper-code", "--pe", "nope",
                 "--task", "count", "--out", str(tmp_path / "run"), "--heads", "4",
                 "--preset", "smoke", "--trigger-ids", ids]) == 0
    run = posenc.load_run(tmp_path / "run")
    assert run.config.task.triggers == IDS
    test = run.data().test
    with torch.no_grad():  # the same function on the run's own data
        assert torch.equal(run.model(test.tokens).argmax(-1), ref(test.tokens).argmax(-1))
    own = evaluate(run.model, test)[1]
    assert abs(own - ref_acc) <= 0.05, (own, ref_acc)  # two samples of ~1000: se ~0.01
    # the same checkpoint scored on posenc's default ids is far worse: the refusal-free
    # import of before
    assert main(["import-checkpoint", str(tmp_path / "model.pth"), "--paper-code", "--pe", "nope",
                 "--task", "count", "--out", str(tmp_path / "wrong"), "--heads", "4",
                 "--preset", "smoke", "--trigger-ids", "1,2,4,5"]) == 0
    wrong = posenc.load_run(tmp_path / "wrong")
    assert evaluate(wrong.model, wrong.data().test)[1] <= own - 0.3


def _write_vocab(path, tokens):
    path.write_text(json.dumps(tokens), encoding="utf-8")
    return path


def test_trigger_words_are_looked_up_in_the_tokenizer_vocabulary(tmp_path, trained_reference):
    torch.save(trained_reference.state_dict(), tmp_path / "model.pth")
    words = {f"w{i}": i for i in range(1, VOCAB)} | {"[PAD]": 0}
    flat = _write_vocab(tmp_path / "vocab.json", words)
    # a Unigram tokenizer.json: model.vocab is [token, score] pairs, the index is the id
    pairs = sorted(words, key=words.get)
    uni = _write_vocab(tmp_path / "tokenizer.json", {"model": {"type": "Unigram", "vocab": [
        [w, -1.0] for w in pairs]}})
    for vocab, out in ((flat, "a"), (uni, "b")):
        assert main(["import-checkpoint", str(tmp_path / "model.pth"), "--paper-code", "--pe",
                     "nope", "--task", "count", "--out", str(tmp_path / out), "--heads", "4",
                     "--preset", "smoke", "--vocab", str(vocab),
                     "--triggers", ",".join(f"w{i}" for i in IDS)]) == 0
        assert posenc.load_run(tmp_path / out).config.task.triggers == IDS
        record = json.loads((tmp_path / out / "imported.json").read_text())
        assert record["trigger_ids"] == list(IDS) and record["trigger_words"][0] == "w11"


@pytest.mark.parametrize("args,match", [
    ([], "give the trigger ids (--trigger-ids) or the trigger words"),
    (["--trigger-ids", "1"], "two triggers (A, then B)"),
    (["--trigger-ids", "1,1"], "must be distinct"),
    (["--trigger-ids", "0,2"], "0 is PAD"),
    (["--trigger-ids", "1,16"], "embedding has 16 rows"),
    (["--trigger-ids", "1,x"], "token ids separated by commas"),
    (["--triggers", "w1,w2"], "--triggers needs --vocab"),
    (["--trigger-ids", "1,2", "--vocab", "V"], "--vocab goes with --triggers"),
    (["--triggers", "w1,nothere", "--vocab", "V"], "has no token 'nothere'"),
    (["--triggers", "w1,w2", "--vocab", "SHORT"], "gives no token to 3 of the ids"),
    (["--triggers", "w1,w2", "--vocab", "LONG"], "has id 20, but the checkpoint's embedding"),
    (["--triggers", "w1,w2", "--vocab", "BAD"], "is not a {token: id} map"),
    (["--triggers", "w1,w2", "--vocab", "MISSING"], "cannot read vocabulary"),
])
def test_an_import_whose_data_cannot_match_is_refused(tmp_path, capsys, args, match):
    torch.save(reference("nope").state_dict(), tmp_path / "model.pth")
    words = {f"w{i}": i for i in range(VOCAB)}
    files = {"V": _write_vocab(tmp_path / "v.json", words),
             "SHORT": _write_vocab(tmp_path / "s.json", {w: i for w, i in words.items() if i < 13}),
             "LONG": _write_vocab(tmp_path / "l.json", words | {"w20": 20}),
             "BAD": _write_vocab(tmp_path / "b.json", {"w1": "one"}),
             "MISSING": tmp_path / "none.json"}
    args = [str(files.get(a, a)) for a in args]
    out = tmp_path / "out"
    code = main(["import-checkpoint", str(tmp_path / "model.pth"), "--paper-code", "--pe", "nope",
                 "--task", "distance", "--out", str(out), "--heads", "4", "--preset", "smoke",
                 *args])
    err = capsys.readouterr().err
    assert code == 2 and match in err and err.count("\n") == 1, err  # one line, no traceback
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_the_api_refuses_a_missing_trigger_id_with_the_cli_line(tmp_path, capsys):
    torch.save(reference("nope").state_dict(), tmp_path / "model.pth")
    with pytest.raises(posenc.PosencError) as api:
        posenc.import_checkpoint(tmp_path / "model.pth", "nope", "distance", tmp_path / "a",
                                 heads=4, preset="smoke")
    assert main(["import-checkpoint", str(tmp_path / "model.pth"), "--paper-code", "--pe", "nope",
                 "--task", "distance", "--out", str(tmp_path / "b"), "--heads", "4",
                 "--preset", "smoke"]) == 2
    assert capsys.readouterr().err == f"posenc: error: {api.value}\n"
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
