"""The empirical layer (torch): synthetic tasks, a Transformer with every catalogue PE,
deterministic training, batched single-head ablation.  Implements the catalogue of
:mod:`posenc.encodings` independently of ``posenc.theory`` and ``posenc.numerics``.

The layer's names::

    cfg = preset("quick", task="distance", pe="rope", seed=0)      # TrainConfig
    run = load_run("runs/x")                                        # Run (config, model, metrics)

Training and ablating are ``posenc.train`` and ``posenc.ablate`` (one of each in the public API):
they take a preset or a config, check their arguments and return a Run / an AblationTable.  The
loops they call, ``training.train.train(cfg, out)`` and ``analysis.ablation.ablate(model, data,
mode)``, are this layer's internals and are not exported here.
"""

from .analysis.ablation import AblationTable, LayerAblation, deposit_index  # noqa: F401
from .model.attention import HeadAblation  # noqa: F401
from .config import (ModelConfig, TaskConfig, TrainConfig, config_from_dict,  # noqa: F401
                     load_config, preset)
from .model.transformer import Transformer, build_model  # noqa: F401
from .training.runs import Run, dataset_for, load_run, model_for  # noqa: F401
from .tasks import Split, TaskData, make_split  # noqa: F401
from .training.train import RunResult, evaluate  # noqa: F401
