"""The empirical layer (torch): synthetic tasks, a Transformer with every catalogue PE,
deterministic training, batched single-head ablation.  Implements the catalogue of
:mod:`posenc.encodings` independently of ``posenc.theory`` and ``posenc.numerics``.

Public API::

    cfg = preset("quick", task="distance", pe="rope", seed=0)      # TrainConfig
    result = train(cfg, "runs/x")                                   # RunResult
    run = load_run("runs/x")                                        # Run (config, model, metrics)
    table = ablate(run.model, run.data().test, mode="zero")         # AblationTable
"""

from .analysis.ablation import AblationTable, LayerAblation, ablate, deposit_index  # noqa: F401
from .model.attention import HeadAblation  # noqa: F401
from .config import (ModelConfig, TaskConfig, TrainConfig, config_from_dict,  # noqa: F401
                     load_config, preset)
from .model.transformer import Transformer, build_model  # noqa: F401
from .training.runs import Run, dataset_for, load_run, model_for  # noqa: F401
from .tasks import Split, TaskData, make_split  # noqa: F401
from .training.train import RunResult, evaluate, train  # noqa: F401
