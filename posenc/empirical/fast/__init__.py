"""The CPU fast path of training, behind one door: :func:`forward`.

``forward(model, tokens)`` returns what ``model(tokens)`` -- the reference forward of
:mod:`posenc.empirical.model.transformer` -- returns, up to float rounding, computed packed
(:mod:`.packed`: the real tokens only, short examples sharing attention rows, fused sub-layer
functions with hand-written backwards).  A model whose padding is not masked
(``mask_padding=False``: the paper code's models but MLA) runs packed as every token real, one
dense row per example.  Where it does not cover the model or the batch it falls back to
``model(tokens)`` and logs why (logger ``posenc.fast``, once per reason; a warning for a PE or
module it does not know, info for the by-design cases):

* a device other than the CPU (packing was measured on a CPU only; on a GPU it costs host
  synchronisations);
* a hook attached (hook points or torch module hooks see the padded layouts: :mod:`.watchers`);
* a PE part kind not in :data:`COVERED_PART_KINDS` (a new PE: parity with the reference not yet
  shown), or an attention module type not in :data:`COVERED_ATTENTION_TYPES`.

Training picks it with ``TrainConfig.step`` (``fast``, the default, or ``reference``).  The
reference modules never import this package (a test checks); it reads their modules and
parameters from outside.
"""

from __future__ import annotations

import logging
from typing import Optional

import torch

from ..model.attention import Attention
from ..model.mla import MLAAttention
from ..model.transformer import Transformer
from .packed import merges_rows, packed_forward
from .watchers import watcher

__all__ = ["forward", "why_not", "merges_rows", "COVERED_PART_KINDS", "COVERED_ATTENTION_TYPES", "log"]

log = logging.getLogger("posenc.fast")

#: The part kinds (posenc.encodings.parts) whose packed forward the parity tests cover.  A kind added to the
#: catalogue runs the reference until it is listed here (and passes the parity and Toeplitz
#: tests: tests/empirical/fast/test_fast.py, tests/test_fast_toeplitz.py).
COVERED_PART_KINDS = frozenset({"sinusoidal", "learned", "alibi", "t5", "table", "kernel",
                                "kerple_log", "rope", "frequencies", "xpos", "mla", "mla_paper_code"})

#: The attention module types the packed forward knows how to run.
COVERED_ATTENTION_TYPES = (Attention, MLAAttention)

_logged: set[str] = set()


def why_not(model: torch.nn.Module, tokens: torch.Tensor) -> Optional[tuple[int, str]]:
    """(log level, reason) when :func:`forward` does not cover ``model`` on ``tokens``, else
    None."""
    if type(model) is not Transformer:
        return logging.WARNING, f"{type(model).__name__} is not a posenc Transformer"
    unknown = sorted({p.kind for p in model.spec.parts()} - COVERED_PART_KINDS)
    if unknown:
        return (logging.WARNING, f"PE {model.cfg.pe!r}: part kind(s) {', '.join(unknown)} not "
                                 f"covered by posenc.empirical.fast.COVERED_PART_KINDS")
    odd = sorted({type(b.attn).__name__ for b in model.blocks
                  if type(b.attn) not in COVERED_ATTENTION_TYPES})
    if odd:
        return logging.WARNING, f"attention module(s) {', '.join(odd)} have no packed forward"
    if tokens.device.type != "cpu":
        return logging.INFO, f"packing is measured on a CPU only; {tokens.device.type} runs the reference"
    watching = watcher(model)
    if watching is not None:
        return logging.INFO, f"{watching} is attached: hooks see the reference's padded layouts"
    return None


def forward(model: Transformer, tokens: torch.Tensor, *, offset: int = 0) -> torch.Tensor:
    """tokens (B, T) -> logits (B, C): the packed forward where it covers ``model`` and
    ``tokens``, else ``model(tokens, offset=offset)`` with the reason logged (module doc)."""
    if tokens.dim() != 2:
        return model(tokens, offset=offset)  # the reference refuses it, in one line
    reason = why_not(model, tokens)
    if reason is None:
        return packed_forward(model, tokens, offset)
    level, text = reason
    if text not in _logged:
        _logged.add(text)
        log.log(level, "fast path not taken, the reference forward runs: %s", text)
    return model(tokens, offset=offset)
