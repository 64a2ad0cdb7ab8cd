"""RA's functional part (posenc.empirical.analysis.table_mean): the accuracy of a model whose
learned relative tables are replaced by each head's mean over offsets, on a hand-built smoke
model whose labels are its own predictions (accuracy 1 as built), so that the tables matter."""

import copy

import pytest
import torch

from posenc.empirical.analysis.table_mean import mean_table_accuracy, relative_tables
from posenc.empirical.config import preset
from posenc.empirical.tasks import TaskData
from posenc.empirical.training.runs import dataset_for, model_for
from posenc.empirical.training.train import evaluate


def built(pe):
    cfg = preset("smoke", task="count", pe=pe, seed=0, **{"task.n_samples": 400})
    torch.manual_seed(0)
    model = model_for(cfg).eval()
    test = dataset_for(cfg).test
    return model, test


def labelled_by(model, data):
    """``data`` relabelled with the model's own predictions (its accuracy on it is 1)."""
    with torch.no_grad():
        labels = model(data.tokens).argmax(-1)
    return TaskData(data.tokens, labels, data.lengths, data.n_classes)


def test_flattening_the_tables_is_removing_their_position_signal():
    model, test = built("relative_bias:mode=table")
    tables = relative_tables(model)
    assert len(tables) == 2
    with torch.no_grad():  # a strong position signal, so that the tables decide the answers
        for t in tables:
            t.weight.copy_(torch.randn(t.weight.shape, generator=torch.Generator().manual_seed(1))
                           * 4.0 + 0.3)
    data = labelled_by(model, test)
    before = [t.weight.detach().clone() for t in tables]
    seq_len = int(test.tokens.shape[1])
    got = mean_table_accuracy(model, data, seq_len, evaluate, batch_size=128)
    assert got["baseline_acc"] == 1.0 and got["n_test"] == len(data)
    assert got["test_acc"] < 0.9  # the tables mattered, and were flattened
    assert all(torch.equal(t.weight, w) for t, w in zip(tables, before))  # restored
    # independently: each head's row set to its mean over the reached offsets by hand, and the
    # tables zeroed (a constant per head shifts every logit of a query alike: the same model)
    for fill in ("mean", "zero"):
        other = copy.deepcopy(model)
        with torch.no_grad():
            for t in relative_tables(other):
                cols = t.used_columns(seq_len)
                level = t.weight[:, cols].mean(1, keepdim=True) if fill == "mean" else 0.0
                t.weight[:] = level
        assert evaluate(other, data, 128)[1] == pytest.approx(got["test_acc"], abs=1e-12)


def test_a_model_without_a_learned_table_has_none():
    model, test = built("rope")
    assert relative_tables(model) == [] and mean_table_accuracy(model, test, 16, evaluate) is None
