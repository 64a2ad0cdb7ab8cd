"""The paper code's MLA ablation (``dis_gen/mlavis.py``): latent columns of the up-projections.

mlavis.py "ablates head h" of a layer by zeroing the input columns ``[w h, w h + w)`` of its three
up-projection weights ``W_UQ``, ``W_UK``, ``W_UV`` (``weight[:, w h : w (h + 1)] = 0``), with
``w = d_model // n_heads`` (the head width) and ``h = 0 .. n_heads - 1``.  An input column of an
up-projection is a latent dimension -- an entry of ``c^Q = W_DQ x`` or ``c^KV = W_DKV y`` -- which
every head reads: a variant removes part of the content query, the content key and the value of
every head, and no head in particular.  The decoupled RoPE path (``W_QR c^Q``, ``W_KR y``) and the
down-projections are not touched.

Where the latent is narrower than ``n_heads x w`` the column ranges run off its end; a slice keeps
what lies inside, so variant v removes ``[w v, min(w v + w, latent))`` and every variant from
``ceil(latent / w)`` on removes nothing.  At the paper code's sizes (d_model 256, 16 heads, so
``w = 16``; ``d_compress = 128``) variants 0-7 remove 16 latent dimensions each and variants 8-15
remove nothing.  Where the latent is wider than ``n_heads x w`` (posenc's ``paper-mla`` at the
``paper-small`` and ``quick`` sizes: 8 heads of width 8, latent 128) the dimensions from
``n_heads x w`` on are never removed.

posenc's MLA (:mod:`posenc.empirical.model.mla`) holds ``W_UQ``, ``W_UK``, ``W_UV`` as ``q_up``,
``k_up``, ``v_up`` (:mod:`posenc.empirical.training.paper_import` maps them so).  It may give the
query latent and the key/value latent different widths (the paper code has one, ``d_compress``):
each matrix's ranges are clipped to its own input width.  Its per-head ``q_rope`` (MLA other than
``rope=paper_code``) reads ``c^Q`` as the paper code's one ``W_QR`` does, and is not touched either.

Mode :data:`MODE` of :func:`posenc.empirical.analysis.ablation.ablate` reports variant v as "head"
v of the :class:`~posenc.empirical.analysis.ablation.AblationTable` (n_heads entries per layer, the
ones that remove nothing included: their drop is 0, which leaves the deposit index unchanged); it
records no attention distance (a variant is no head).

**Batched**: a zeroed input column of W is a 0 in a gate on W's input, ``W (g * c) = (W diag g) c``,
so the variants of a layer run as one pass
(:class:`~posenc.empirical.model.mla.LatentAblation`); the variants that remove nothing are the
unchanged model and are not run: they get the baseline's predictions.  ``batched=False`` is the
reference: on a copy of the model, put the weights back, zero the columns, run -- one variant at a
time, every variant run.  mlavis.py puts the weights back at the start of each variant, not after
the last, so a layer's last variant stays applied while the next layers are ablated; at the paper
code's sizes that variant removes nothing, so nothing carries over.  Here each variant changes its
own layer only.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from ...errors import PosencError
from ..model.mla import LatentAblation, MLAAttention
from ..model.transformer import Transformer

#: the ablation mode's name
MODE = "latent-columns"
#: posenc's names of the paper code's W_UQ, W_UK, W_UV, and which latent each reads
UP_PROJECTIONS = (("q_up", "q_latent"), ("k_up", "kv_latent"), ("v_up", "kv_latent"))


@dataclass(frozen=True)
class LatentColumns:
    """The variants of one MLA layer: ``n_variants`` (= n_heads) ranges of ``width`` (= head
    width) latent dimensions, clipped to the query latent and to the key/value latent."""

    width: int
    n_variants: int
    q_latent: int
    kv_latent: int

    def span(self, variant: int, latent: int) -> tuple[int, int]:
        """The latent dimensions [start, stop) variant ``variant`` zeroes in a latent of
        ``latent`` dimensions (start == stop: none)."""
        start = min(self.width * variant, latent)
        return start, min(self.width * (variant + 1), latent)

    def removes(self, variant: int) -> bool:
        """Whether the variant zeroes any column of any of the three up-projections."""
        return any(a < b for a, b in (self.span(variant, self.q_latent),
                                      self.span(variant, self.kv_latent)))

    def active(self) -> list[int]:
        """The variants that remove something."""
        return [v for v in range(self.n_variants) if self.removes(v)]

    def gates(self, variants: Sequence[int], device: torch.device | str = "cpu"
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """(len(variants), q_latent) and (len(variants), kv_latent) gates: 0 on each variant's
        span, 1 elsewhere."""
        q = torch.ones(len(variants), self.q_latent, device=device)
        kv = torch.ones(len(variants), self.kv_latent, device=device)
        for row, v in enumerate(variants):
            q[row, slice(*self.span(v, self.q_latent))] = 0.0
            kv[row, slice(*self.span(v, self.kv_latent))] = 0.0
        return q, kv


def latent_columns(model: Transformer, layer: int) -> LatentColumns:
    """The variants of ``layer``; one PosencError for a model without MLA attention."""
    attn = model.blocks[layer].attn
    if not isinstance(attn, MLAAttention):
        raise PosencError(f"the {MODE} ablation zeroes latent dimensions of MLA's up-projections; "
                          f"this model's PE {model.cfg.pe!r} has no latent (its modes: zero, mean, "
                          f"resample)")
    return LatentColumns(attn.head_dim, attn.n_heads, attn.q_latent, attn.kv_latent)


@torch.inference_mode()
def latent_logits(model: Transformer, tokens: torch.Tensor, layer: int,
                  variants: Optional[Sequence[int]] = None, batched: bool = True) -> torch.Tensor:
    """Logits (len(variants), batch, classes) with each variant of ``layer`` applied in turn
    (default: every variant).  ``batched``: one pass with a latent gate; else
    :func:`zeroed_column_logits`, the reference."""
    cols = latent_columns(model, layer)
    variants = list(range(cols.n_variants)) if variants is None else [int(v) for v in variants]
    if not batched:
        return zeroed_column_logits(model, tokens, layer, variants)
    q_gate, kv_gate = cols.gates(variants, tokens.device)
    logits = model(tokens, ablation=LatentAblation(layer, q_gate, kv_gate))
    return logits.view(len(variants), tokens.shape[0], -1)


@torch.no_grad()
def zeroed_column_logits(model: Transformer, tokens: torch.Tensor, layer: int,
                         variants: Sequence[int]) -> torch.Tensor:
    """The reference: on a copy of ``model``, for each variant, the original weights put back and
    the variant's input columns of ``q_up``, ``k_up``, ``v_up`` set to zero; no gate, no hook.
    (len(variants), batch, classes)."""
    cols = latent_columns(model, layer)
    twin = copy.deepcopy(model).eval()
    attn = twin.blocks[layer].attn
    saved = {name: getattr(attn, name).weight.detach().clone() for name, _ in UP_PROJECTIONS}
    rows = []
    for v in variants:
        for name, latent in UP_PROJECTIONS:
            weight = getattr(attn, name).weight.data  # (H * dh, latent): columns are its inputs
            weight.copy_(saved[name])
            start, stop = cols.span(v, getattr(attn, latent))
            weight[:, start:stop] = 0.0
        rows.append(twin(tokens))
    return torch.stack(rows)
