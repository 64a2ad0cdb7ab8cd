"""RA's functional part: a model's accuracy with its learned relative tables flattened.

Every learned per-offset bias table (:class:`~posenc.empirical.model.pe.bias.TableBias`, one
per layer) has each head's row replaced by that head's mean over the offsets the data reach
(|k| <= min(max_distance, T - 1), the offsets the training trace measures): a constant per head
adds the same amount to every attention logit of a query, which the softmax ignores, so the
position signal is removed and the table's level kept (the attention is then exactly that of the
model without its tables).  The accuracy on the same data before and after says how much the
trained model uses the table's position signal; a table attenuated toward zero would cost
nothing.  The model's weights are restored afterwards.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from ..model.pe.bias import TableBias


def relative_tables(model: torch.nn.Module) -> list[TableBias]:
    """The model's learned per-offset tables, in layer order (empty when it has none)."""
    biases = (getattr(block.attn, "bias", None) for block in getattr(model, "blocks", []))
    return [b for b in biases if isinstance(b, TableBias)]


def mean_table_accuracy(model: torch.nn.Module, data: Any, seq_len: int,
                        evaluate: Callable[..., tuple[float, float]],
                        **evaluate_kw: Any) -> Optional[dict[str, Any]]:
    """``{"test_acc", "baseline_acc", "n_test"}``: the accuracy on ``data`` (a TaskData) with
    every head's table replaced by its mean over the offsets ``seq_len`` tokens reach, and as
    trained (the same evaluation both times: ``evaluate(model, data, **evaluate_kw)`` returning
    (loss, accuracy), e.g. :func:`~posenc.empirical.training.train.evaluate`, which the caller
    passes: the analysis layer does not import the training layer, which imports it); None when
    the model has no learned per-offset table."""
    tables = relative_tables(model)
    if not tables:
        return None
    _, baseline = evaluate(model, data, **evaluate_kw)
    saved = [t.weight.detach().clone() for t in tables]
    try:
        with torch.no_grad():
            for t in tables:
                level = t.weight[:, t.used_columns(seq_len)].mean(1, keepdim=True)
                t.weight.copy_(level.expand_as(t.weight))
        _, flat = evaluate(model, data, **evaluate_kw)
    finally:
        with torch.no_grad():
            for t, w in zip(tables, saved):
                t.weight.copy_(w)
    return {"test_acc": flat, "baseline_acc": baseline, "n_test": len(data)}
