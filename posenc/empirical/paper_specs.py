"""Paper-code mode: which PEs the paper's code has, and the model fields each one implies.

``ModelConfig(code="paper")`` builds the models of the paper's public code
(Qihuai27/Deposit-Pattern-Research) exactly; see :mod:`.paper_code` for the
quirks and docs/reproduction.md ("Paper-code mode").  Two model families:

* ``dis_gen/trans.py`` and ``count_gen/partialrope.py`` (every PE but MLA): keys
  and values of every layer from the raw input embeddings (no LayerNorm),
  ReLU, no final LayerNorm, mean pooling over all positions including padding,
  no padding or causal mask, Q/K/V/O projections with biases;
* ``dis_gen/mla.py``: keys and values from the layer-normed residual stream,
  GELU, a final LayerNorm, padding masked out of attention and pooling, no
  projection biases.

Both classify over the vocabulary (the logits have ``vocab_size`` entries).
This module imports no torch: the config layer validates with it.
"""

from __future__ import annotations

from typing import Any

from ..encodings import MLA, ALiBi, Hybrid, LearnedAbsolute, NoPE, PESpec, RelativeBias, RoPE, Sinusoidal
from ..errors import PosencError
from ..training_presets import PAPER_CODE_PRESETS, training_preset

CODES = ("posenc", "paper")

_PLAIN_ROPE = RoPE()


def _plain_rope(spec: PESpec) -> bool:
    """RoPE as the paper code has it: interleaved, base 10000, whole head, any first-k heads."""
    return isinstance(spec, RoPE) and spec == RoPE(heads=spec.heads)


def paper_code_problem(spec: PESpec) -> str | None:
    """Why the paper's code has no model for ``spec`` (None: it has one)."""
    if isinstance(spec, NoPE) or (isinstance(spec, Sinusoidal) and spec == Sinusoidal()):
        return None
    if isinstance(spec, LearnedAbsolute):
        return None  # the code's "random": a learned table of max_len rows
    if isinstance(spec, ALiBi):
        return None if spec == ALiBi(slopes="exp0") else \
            "its alibi has slopes exp(-h/H) for h = 0..H-1 and no causal direction (alibi:slopes=exp0)"
    if isinstance(spec, RelativeBias):
        return None if spec.mode == "table" else \
            "its relative bias is one learned value per offset (relative_bias:mode=table)"
    if isinstance(spec, RoPE):
        return None if _plain_rope(spec) else \
            "its RoPE is interleaved, base 10000, on whole heads (rope or rope:heads=K)"
    if isinstance(spec, Hybrid):
        ok = spec.additive == Sinusoidal(layout="half") and spec.rope == _PLAIN_ROPE
        return None if ok else ("its only absolute+RoPE model adds a cat[sin, cos] table "
                                "(hybrid:additive=sinusoidal,additive.layout=half) to plain rope")
    if isinstance(spec, MLA):
        return None if spec.rope == "paper_code" and spec.absolute == "learned" else \
            "its MLA is mla:rope=paper_code,absolute=learned (named spec paper-mla)"
    return "it has no such model"


def check_paper_spec(spec: PESpec) -> None:
    problem = paper_code_problem(spec)
    if problem is not None:
        raise PosencError(f"paper-code mode has no model for PE {spec.to_string()!r}: {problem}")


def paper_code_fields(spec: PESpec) -> dict[str, Any]:
    """The model-config fields the paper's code fixes for ``spec`` (dotted keys)."""
    check_paper_spec(spec)
    if isinstance(spec, MLA):
        fields = {"kv_source": "previous", "mask_padding": True, "activation": "gelu"}
    else:
        fields = {"kv_source": "input", "mask_padding": False, "activation": "relu"}
    return {"model.code": "paper", "model.causal": False,
            **{f"model.{k}": v for k, v in fields.items()}}


def check_paper_config(model: Any) -> None:
    """A ModelConfig with ``code='paper'``: its PE has a paper-code model and its fields are
    the ones that model fixes (one PosencError naming the first wrong field)."""
    for key, want in paper_code_fields(model.spec).items():
        name = key.split(".", 1)[1]
        if getattr(model, name) != want:
            raise PosencError(f"paper-code mode with PE {model.pe!r} has model.{name} = {want!r} "
                              f"(the paper's code); got {getattr(model, name)!r}")


#: The paper code's padded length (``max_len = 128`` of dis_gen/trans.py and mla.py): every
#: example is padded to it, and its models pool over all of it unmasked, so in paper-code mode
#: the padding changes the function.
PAPER_CODE_LENGTH = 128

def paper_budget(preset: str, role: str) -> dict[str, Any]:
    """The training fields (dotted keys) of ``role``'s budget at ``preset``: the record's
    ``budgets`` (:mod:`posenc.training_presets`: the paper code's own MLA budget at ``paper``,
    dis_gen/mla.py's 150 epochs at batch 1024; their ratios at ``paper-small``), else none (the
    preset's)."""
    return dict(training_preset(preset).budgets.get(role, {}))


def paper_code_task_fields(preset: str, task: Any) -> dict[str, Any]:
    """The task fields (dotted keys) paper-code mode sets on ``task`` (a TaskConfig of
    ``preset``).  Its models classify over the vocabulary, so ``task.vocab_size`` is raised to
    the number of classes where smaller (the quick distance task: 42 classes).  The distance
    task's data come from the paper's sampler (``task.sampler = paper``: triggers among the
    fillers, no repeat inside a segment, which needs a vocabulary of at least the longest
    segment + 1).  At the ``paper`` and ``paper-small`` presets the examples of both tasks are padded to
    :data:`PAPER_CODE_LENGTH` as the code pads them (distance: ``task.seq_len``; count:
    ``task.pad_to``, its 120 tokens then 8 PAD), and the paper code's model pools every
    position, padding included."""
    need = task.n_classes
    fields: dict[str, Any] = {}
    if task.name == "distance":
        need = max(need, max(task.max_left, task.max_gap, task.max_right) + 1)
        fields["task.sampler"] = "paper"
        if preset in PAPER_CODE_PRESETS:
            fields["task.seq_len"] = max(PAPER_CODE_LENGTH, task.length)
    elif preset in PAPER_CODE_PRESETS and task.length < PAPER_CODE_LENGTH:
        fields["task.pad_to"] = PAPER_CODE_LENGTH
    if task.vocab_size < need:
        fields["task.vocab_size"] = need
    return fields
