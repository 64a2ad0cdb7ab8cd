"""The encoder: token embedding (+ absolute PE), pre-LayerNorm blocks, mean pooling, classifier.

Built from a :class:`~posenc.empirical.config.ModelConfig` and any catalogue
PE spec (see :mod:`posenc.empirical.model.pe.plan` for how a spec maps to parts).
Block l: ``h += Attn(LN1(h), LN1(kv_in)); h += MLP(LN2(h))`` with ``kv_in = h``
(standard) or the input embeddings ``x0`` in every layer (``kv_source='input'``;
the paper's code reads ``x0`` itself, without LN1: ``code='paper'`` below).  The input
embedding ``x0 = E[token] + P[position]``.
Padding (token 0) is masked out of attention keys and of the mean pooling when
``mask_padding``; otherwise it is an ordinary token.

``cfg.code == 'paper'`` builds the paper code's models exactly (see
:mod:`.paper_specs` and docs/reproduction.md "Paper-code mode"): for every PE but
MLA, keys and values from the raw ``x0`` (no LayerNorm), biased Q/K/V, ReLU, no
final LayerNorm; for MLA (``mla:rope=paper_code``) a dropout inside the MLP and
none after the attention; both classify over the vocabulary (``n_classes`` is
then ``vocab_size``).

This is the reference forward: one padded computation, (batch, pos, d_model) throughout and every
module called, with or without hooks or a head ablation -- a hook never changes what is computed.
The CPU fast path of training (packing, fused sub-layers: :mod:`posenc.empirical.fast`) reads these
modules and parameters from outside; nothing here knows about it.

Hook points (TransformerLens's names and layouts; see docs/usage.md):
``hook_embed`` E[token] and ``hook_pos_embed`` P[position] (batch, pos,
d_model; the latter only with an absolute PE); per block
``blocks.{l}.hook_resid_pre``, ``hook_attn_out``, ``hook_resid_mid``,
``hook_mlp_out``, ``hook_resid_post`` (batch, pos, d_model) and the attention
hooks of :mod:`.attention` under ``blocks.{l}.attn.``; ``hook_pooled`` (ours:
the pooled vector before the classifier, (batch, d_model)).  Dropout, when on,
acts after ``hook_attn_out`` / ``hook_mlp_out``.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from ...errors import PosencError
from .attention import Ablation, Attention, attention_mask
from ..config import ModelConfig
from .hooks import HookPoint, Hooked, run_hook
from .mla import MLAAttention
from .pe.plan import plan_for
from ..tasks import PAD


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, attn: nn.Module, paper_mla: bool = False):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attn = attn
        act = nn.GELU() if cfg.activation == "gelu" else nn.ReLU()
        inner = [nn.Dropout(cfg.dropout)] if paper_mla else []  # the paper's MLA: after GELU
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_ff), act, *inner,
                                 nn.Linear(cfg.d_ff, cfg.d_model))
        self.drop = nn.Dropout(cfg.dropout)
        self.drop_attn = nn.Dropout(0.0 if paper_mla else cfg.dropout)
        self.kv_from_input = cfg.kv_source == "input"
        self.kv_norm = cfg.code != "paper"  # the paper's code: K, V from the raw embeddings
        for name in ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out",
                     "hook_resid_post"):
            setattr(self, name, HookPoint())

    def forward(self, h: torch.Tensor, x0: torch.Tensor, mask: Optional[torch.Tensor], offset: int,
                ablation: Optional[Ablation]) -> torch.Tensor:
        """h, x0 (B, T, D), mask (:func:`.attention.attention_mask`) -> (B', T, D) (B' = variants
        * B from an ablation at this layer)."""
        h = run_hook(self.hook_resid_pre, h)
        a = self.ln1(h)
        kv = self.kv_input(a, x0)
        out = self.attn(a, kv, mask, offset, ablation)  # (B', T, D)
        out = run_hook(self.hook_attn_out, out)
        if out.shape[0] != h.shape[0]:  # ablation variants: residual repeated variant-major
            h = h.repeat(out.shape[0] // h.shape[0], 1, 1)
        h = run_hook(self.hook_resid_mid, h + self.drop_attn(out))
        m = run_hook(self.hook_mlp_out, self.mlp(self.ln2(h)))
        return run_hook(self.hook_resid_post, h + self.drop(m))

    def kv_input(self, a: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
        """The attention's key / value input: ``a = LN1(h)``, or the input embeddings ``x0``
        (``kv_source='input'``; through LN1 unless paper-code mode)."""
        if not self.kv_from_input:
            return a
        return self.ln1(x0) if self.kv_norm else x0


class Transformer(Hooked):
    """Encoder classifier.  ``forward(tokens (B, T)) -> logits (B, n_classes)``."""

    def __init__(self, cfg: ModelConfig, vocab_size: int, n_classes: int, max_len: int,
                 device: str | torch.device = "cpu"):
        super().__init__()
        paper = cfg.code == "paper"
        if paper and n_classes > vocab_size:
            raise PosencError(f"paper-code mode classifies over the vocabulary ({vocab_size} "
                              f"tokens), which has fewer entries than the {n_classes} classes")
        n_classes = vocab_size if paper else n_classes
        self.cfg, self.vocab_size, self.n_classes, self.max_len = cfg, vocab_size, n_classes, max_len
        self.spec = cfg.spec
        self.plan = plan_for(self.spec)
        D, H = cfg.d_model, cfg.n_heads
        self.embed = nn.Embedding(vocab_size, D)
        self.pos_embed = self.plan.make_absolute(D, max_len)
        paper_mla = paper and self.plan.mla is not None
        if paper_mla and self.pos_embed is not None:
            nn.init.zeros_(self.pos_embed.weight)  # the paper's MLA: a zero-initialised table
        blocks = []
        # Parameter-free parts (the rotation, a fixed bias) are one module shared by all layers.
        # Their buffers are not persistent, so the state dict is the same as with one module per
        # layer.
        rotary = self.plan.make_rotary(cfg.head_dim, H)
        fixed_bias = None if self.plan.bias_learned else self.plan.make_bias(H)
        for _ in range(cfg.n_layers):
            if self.plan.mla is not None:
                # the paper's MLA has no dropout on the attention weights
                attn: nn.Module = MLAAttention(D, H, self.plan.mla, 0.0 if paper_mla else cfg.dropout,
                                               device=device)
            else:
                bias = self.plan.make_bias(H) if self.plan.bias_learned else fixed_bias
                attn = Attention(D, H, cfg.dropout, rotary=rotary, bias=bias, qkv_bias=paper,
                                 device=device)
            blocks.append(Block(cfg, attn, paper_mla=paper_mla))
        self.blocks = nn.ModuleList(blocks)
        self.ln_f = nn.Identity() if paper and not paper_mla else nn.LayerNorm(D)
        self.classifier = nn.Linear(D, n_classes)
        self.hook_embed, self.hook_pooled = HookPoint(), HookPoint()
        if self.pos_embed is not None:
            self.hook_pos_embed = HookPoint()
        self.name_hooks()

    def input_embedding(self, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """x0 = token embedding + absolute PE of positions offset.. : (B, T, D)."""
        x = run_hook(self.hook_embed, self.embed(tokens))  # (B, T, D)
        if self.pos_embed is not None:
            p = self.pos_embed(tokens.shape[1], offset, x.dtype)  # (T, D)
            x = x + run_hook(self.hook_pos_embed, p.expand(x.shape))
        return x

    def forward(self, tokens: torch.Tensor, *, offset: int = 0,
                ablation: Optional[Ablation] = None) -> torch.Tensor:
        """tokens (B, T) -> logits (B, C), or (V * B, C) variant-major under an ablation."""
        if tokens.dim() != 2:
            raise PosencError(f"tokens must be (batch, seq); got shape {tuple(tokens.shape)}")
        B, T = tokens.shape
        if ablation is not None:
            L = len(self.blocks)
            problem = ablation.problem(self.blocks[ablation.layer].attn) \
                if 0 <= ablation.layer < L else f"got layer {ablation.layer}"
            if problem is not None:
                raise PosencError(f"ablation must name a layer in 0..{L - 1} and fit its "
                                  f"attention: {problem}")
        keep = (tokens != PAD) if self.cfg.mask_padding else None  # (B, T) bool
        mask = attention_mask(keep, self.cfg.causal, T, self.embed.weight.dtype, tokens.device)
        h = x0 = self.input_embedding(tokens, offset)  # (B, T, D)
        for l, block in enumerate(self.blocks):
            ab = ablation if ablation is not None and ablation.layer == l else None
            h = block(h, x0, mask, offset, ab)
            if ab is not None and h.shape[0] != B:  # variants created at this layer
                rep = h.shape[0] // B
                B = h.shape[0]
                if mask is not None and mask.shape[0] > 1:  # a key mask: one per example
                    mask = mask.repeat(rep, 1, 1, 1)
                if keep is not None:
                    keep = keep.repeat(rep, 1)
        h = self.ln_f(h)
        if keep is None:
            pooled = h.mean(dim=1)
        else:
            w = keep.to(h.dtype)[:, :, None]  # (B, T, 1)
            pooled = (h * w).sum(dim=1) / w.sum(dim=1).clamp(min=1)
        return self.classifier(run_hook(self.hook_pooled, pooled))

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def build_model(cfg: ModelConfig, vocab_size: int, n_classes: int, max_len: int,
                device: str | torch.device = "cpu") -> Transformer:
    """Build the model (its attention kernel chosen for ``device``; it is built on the CPU: move
    it there); a PE the model cannot realise raises PosencError (one line)."""
    return Transformer(cfg, vocab_size, n_classes, max_len, device)

