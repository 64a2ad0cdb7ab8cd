"""Loading a real model from local disk into transformers' own classes, offline.

The config is read and its model type checked against the supported families *before* any
weight is loaded; the model is loaded in float32 with eager attention (the head scores need the
attention patterns), and ``HF_HUB_OFFLINE`` is set while loading, so nothing is fetched.  A
decoder loads as ``AutoModelForCausalLM``; an encoder as ``AutoModelForMaskedLM`` when its weights
hold a masked-LM head, else as ``AutoModel`` (the embedding probe alone then applies).  The
tokenizer comes from the folder or the GGUF file; a model without one runs the random-token
probes only.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from ...encodings.hf_local import LocalModel
from ...errors import PosencError
from .families import Family, family, layout
import torch
from ...encodings.hf_read import read_hf_config


#: the files a model folder's tokenizer is read from (one of them suffices)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model")


@dataclass
class Loaded:
    model: Any
    tokenizer: Any
    family: Family
    source: str
    has_lm_head: bool
    cpu_seconds: float


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _quiet() -> None:
    from transformers.utils import logging
    logging.set_verbosity_error()
    logging.disable_progress_bar()


def check_supported(where: LocalModel) -> Optional[Family]:
    """A folder model's family from its config.json alone (bounded read, no transformers), before
    anything is loaded; None for a GGUF file (its config is read when it loads)."""
    if where.config_path is None:
        return None

    config, _ = read_hf_config(where.config_path)
    return family(config.get("model_type"))


def load(where: LocalModel) -> Loaded:
    """The model at ``where``, ready for :func:`~.sweep.sweep`."""
    import transformers

    _quiet()
    cpu0 = time.process_time()
    kw = where.from_pretrained_kwargs()
    with _offline():
        try:
            config = transformers.AutoConfig.from_pretrained(where.folder, **kw)
        except (OSError, ValueError, KeyError) as exc:
            raise PosencError(f"cannot read the model's config at {where.name}: "
                              f"{str(exc).splitlines()[0][:200]}") from None
        fam = family(getattr(config, "model_type", None))
        load_kw = dict(kw, dtype=torch.float32, attn_implementation="eager")
        has_head = True
        try:
            if fam.kind == "decoder":
                model = transformers.AutoModelForCausalLM.from_pretrained(where.folder, **load_kw)
            else:
                model, info = transformers.AutoModelForMaskedLM.from_pretrained(
                    where.folder, output_loading_info=True, **load_kw)
                missing = info.get("missing_keys") or []
                if any(not k.startswith(model.base_model_prefix) for k in missing):
                    has_head = False
                    model = transformers.AutoModel.from_pretrained(where.folder, **load_kw)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise PosencError(f"cannot load the model at {where.name}: "
                              f"{str(exc).splitlines()[0][:200]}") from None
        tokenizer = None
        if where.gguf or any(os.path.isfile(os.path.join(where.folder, f)) for f in TOKENIZER_FILES):
            try:
                tokenizer = transformers.AutoTokenizer.from_pretrained(where.folder, **kw)
            except (OSError, ValueError, KeyError, TypeError):
                tokenizer = None
    model.eval()
    if getattr(model.config, "model_type", None) != config.model_type:
        raise PosencError(f"{where.name}: the config says {config.model_type!r} but transformers "
                          f"built a {model.config.model_type!r} model")
    return Loaded(model, tokenizer, fam, where.name, has_head, time.process_time() - cpu0)


def vocab_size(model: Any) -> int:
    """Rows of the model's input embedding (the ids a probe may use)."""
    return int(model.get_input_embeddings().weight.shape[0])


def describe(model: Any, source: Optional[str] = None) -> dict[str, Any]:
    lay = layout(model)
    return {"source": source, "model_type": lay.model_type, "class": type(model).__name__,
            "kind": lay.family.kind, "layers": len(lay.layers), "heads": lay.n_heads,
            "kv_heads": lay.n_kv, "head_dim": lay.head_dim,
            "parameters": int(sum(p.numel() for p in model.parameters()))}
