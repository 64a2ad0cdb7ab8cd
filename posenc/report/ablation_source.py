"""Which examples a store's head ablations ran on, in words, read from what the runs recorded.

The report's setup section states it; it is read from the runs' configs (``ablation_data``:
the test split, or ``all`` -- train and test, as the paper code's ``*vis.py`` scripts ablate --
and ``ablation_examples``) and the ablation tables' own ``n_examples``, never assumed from the
preset's model code: ``paper`` ablates each run's whole data set, ``paper-small`` (the same model
code) the first 500 test examples.
"""

from __future__ import annotations

from typing import Any, Iterable

from .table import value_span


def ablation_source_text(configs: Iterable[dict[str, Any]], results: Iterable[Any],
                         paper_code: bool) -> str:
    """The examples the ablations ran on: ``configs``, the finished experiments' configs
    (:class:`~posenc.empirical.pipeline.experiment.ExperimentConfig` dicts, which leave out a
    default ``ablation_data``); ``results``, their results (the tables' ``n_examples``: what ran,
    the config's count capped at the source's size); ``paper_code``: the runs are the paper code's
    models, whose own scripts ablate the whole data set (said where these runs do not)."""
    configs = list(configs)
    data = sorted({str(c.get("ablation_data", "test")) for c in configs})
    ran = sorted({int(t["n_examples"]) for r in results for t in (r.ablation or {}).values()
                  if isinstance(t, dict) and isinstance(t.get("n_examples"), int)})
    whole = bool(configs) and data == ["all"] and all(
        int(c.get("ablation_examples", 0)) >= int(c["train"]["task"]["n_samples"]) for c in configs)
    if whole:
        return f"the whole data set of each run ({value_span(ran)} examples: train and test split, " \
               "as the paper code's `*vis.py` scripts ablate)"
    where = "test examples" if data == ["test"] else \
        "examples of " + " / ".join("the train and test splits" if d == "all" else
                                    f"the {d} split" for d in data)
    text = f"the first {value_span(ran)} {where} of each run"
    return text + (" (the paper code's `*vis.py` scripts ablate the whole data set)"
                   if paper_code else "")
