"""``posenc.ablate`` on a real pretrained model: a transformers model object, a local model folder
or a GGUF file (offline; :mod:`posenc.empirical.pretrained`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ..encodings.hf_local import LocalModel, local_model
from ..errors import PosencError
from ..limits import check_int
from dataclasses import replace
from ..verdicts.accuracy_deposit import one_head_carries

if TYPE_CHECKING:  # torch is imported only when a function runs
    from ..empirical.pretrained.result import PretrainedAblation

PRETRAINED_OPTIONS = frozenset({"unit", "probe", "examples", "length", "seed", "text", "layers",
                                "rows_per_pass", "patterns", "tokenizer", "progress", "log"})
#: the default mode for a real model: its heads' mean output stands in for each (zero ablation
#: confounds "the head's average output matters" with "its information matters")
DEFAULT_MODE = "mean"


def is_pretrained(obj: Any) -> bool:
    """A transformers model, a folder holding a config.json but no posenc run (run.json), or a
    GGUF file."""
    if hasattr(obj, "config") and hasattr(getattr(obj, "config"), "model_type") and \
            hasattr(obj, "base_model"):
        return True
    if isinstance(obj, LocalModel):
        return True
    if isinstance(obj, (str, os.PathLike)):
        path = os.fspath(obj)
        if os.path.isfile(path) and path.endswith(".gguf"):
            return True
        return os.path.isfile(os.path.join(path, "config.json")) and \
            not os.path.exists(os.path.join(path, "run.json"))
    return False


def _where(source: Any) -> LocalModel:
    if isinstance(source, LocalModel):
        return source
    path = os.fspath(source)
    if os.path.isfile(path):
        return local_model(None, path, what="ablate")
    return local_model(path, None, what="ablate")


def ablate_pretrained(source: Any, mode: Optional[str] = None, *, unit: str = "head",
                      probe: Optional[str] = None, examples: Optional[int] = None,
                      length: Optional[int] = None, seed: int = 0, text: Optional[str] = None,
                      layers: Optional[Sequence[int]] = None, rows_per_pass: Optional[int] = None,
                      patterns: bool = True, tokenizer: Any = None,
                      progress: Optional[Callable[[int, int], None]] = None,
                      log: Optional[Callable[[str], None]] = None) -> PretrainedAblation:
    """Ablate every head (``unit="head"``) or key/value group (``"kv-group"``) of every layer of
    a real model, one at a time, on a probe that needs position.

    ``source``: a transformers model (``tokenizer`` beside it for the text probes and the
    word-like token pool), a local model folder, a GGUF file or a
    :class:`~posenc.encodings.hf_local.LocalModel`.  ``mode``: mean (default), zero or resample.
    ``probe``: induction (decoders' default), recency, text; masked-induction, masked-text, order
    (encoders' default) -- see :mod:`posenc.empirical.pretrained.probes`; ``examples`` and
    ``length`` its size, ``seed`` its draw (and resample's derangement), ``text`` the text of the
    text probes (default: the text posenc ships).  Returns a
    :class:`~posenc.empirical.pretrained.result.PretrainedAblation`."""
    from ..empirical.pretrained import probes as P
    from ..empirical.pretrained.loading import describe, load, vocab_size
    from ..empirical.pretrained.result import assemble
    from ..empirical.pretrained.sweep import ROWS_PER_PASS, sweep

    from ..empirical.pretrained.sweep import MODES, UNITS

    mode = DEFAULT_MODE if mode is None else mode
    if mode not in MODES:
        raise PosencError(f"unknown ablation mode {mode!r}; known: {', '.join(MODES)}")
    if unit not in UNITS:
        raise PosencError(f"unknown ablation unit {unit!r}; known: {', '.join(UNITS)}")
    if probe is not None and probe not in P.PROBES:
        raise PosencError(f"unknown probe {probe!r}; known: {', '.join(P.PROBES)}")
    if layers is not None and (isinstance(layers, (str, bytes)) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in layers)):
        raise PosencError(f"layers must be a list of layer indices; got {layers!r}")
    seed = check_int("seed", seed, 2**63 - 1, minimum=0)
    if examples is not None:
        examples = check_int("examples", examples, 100_000, minimum=2)
    if length is not None:
        length = check_int("length", length, 8192, minimum=2)
    rows = ROWS_PER_PASS if rows_per_pass is None else check_int("rows_per_pass", rows_per_pass, 1 << 16)
    if text is not None and not isinstance(text, str):
        raise PosencError(f"text must be a string; got {type(text).__name__}")
    notes: list[str] = []
    if hasattr(source, "config") and hasattr(source, "base_model"):
        model, name, has_head = source, None, True
    else:
        loaded = load(_where(source))
        model, tokenizer, name, has_head = loaded.model, loaded.tokenizer, loaded.source, loaded.has_lm_head
        notes.append(f"loaded in {loaded.cpu_seconds:.0f} CPU s (float32, eager attention)")
        if tokenizer is None:
            notes.append("no tokenizer found: random tokens from the whole vocabulary")
    info = describe(model, name)
    kind = info["kind"]
    probe_name = P.DEFAULT_PROBE[kind] if probe is None else probe
    if kind == "encoder" and not has_head and probe_name != "order":
        raise PosencError(f"this encoder has no masked-LM head in its weights: the {probe_name} probe "
                          f"needs one; the order probe needs none")
    vocab = P.vocabulary(vocab_size(model), tokenizer, model.config)
    pr = P.make_probe(probe_name, kind, vocab, examples=examples, length=length, seed=seed,
                      text_source=text)
    result = assemble(sweep(model, pr, mode, unit=unit, layers=layers, seed=seed, rows_per_pass=rows,
                            patterns=patterns, progress=progress, log=log), pr, info)
    single = tuple(la.layer for la in result.table.layers if one_head_carries(list(la.drops)))
    return replace(result, single_head_layers=single, notes=tuple(notes))
