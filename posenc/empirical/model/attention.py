"""Multi-head attention with every catalogue PE, hook points and a per-head ablation gate: one
attention call, from the layer's input to its output, reads top to bottom in this file.

Scores for head h, query i, key j (what ``hook_attn_scores`` shows):

    s[h, i, j] = <rot_i(q_h(x_i)), rot_j(k_h(y_j))> / sqrt(d_qk) + B[h, i, j] + M[i, j]

with x the layer-normed query input (``hook_q_in``), y the layer-normed key /
value input (``hook_kv_in``: the same as x, or the normed input embeddings when
keys and values come from the input; in paper-code mode the raw input embeddings,
as the paper's code), ``q_h = W_q[h] x``, ``k_h = W_k[h] y`` (no projection
bias; with ``qkv_bias``, as the paper's code, plus one), ``rot_p`` the RoPE rotation at
position p (identity without RoPE), B the PE bias and M the padding / causal
mask (0 or -inf, :func:`attention_mask`, built once per forward).  Q, K, V come from one fused
projection ``qkv`` (rows W_q, W_k, W_v): one GEMM when keys come from the query input, two
(the rows of W_q, then those of W_k and W_v) when they come from another.

**The kernel is chosen once, when the model is built** (:func:`kernel_for`, as nanoGPT and
x-transformers do), for the device the model is built for (``Transformer(..., device=)``;
moving a built model later keeps its kernel): on a CPU ``"explicit"`` --
softmax(QK^T/sqrt(d) + B + M) V op by op -- for d_qk < :data:`CPU_SDPA_MIN_HEAD_DIM` = 32,
``"sdpa"`` (``torch.nn.functional.scaled_dot_product_attention``) from 32 on: the CPU
measurement of ``benchmarks/attention_kernel.py`` (the explicit kernel wins clearly at head dims
8 and 16 -- the presets' --, SDPA from 32 on at 2 threads; dated figures in
``benchmarks/results/attention_kernel_cpu_*.txt``).  On a GPU SDPA at every head dim, as the
model has always run there (the H200 runs of benchmarks/results/h200_2026-11-30.txt and of the
paper's-regime calibration); the explicit kernel was not measured on a GPU.
``module.kernel`` can be set by hand.

**Hooks are data**: hooking never changes the kernel or the projections' GEMMs.  With the
explicit kernel the scores and the pattern are its own intermediates, handed to
``hook_attn_scores`` / ``hook_pattern``; with SDPA, which forms neither, a hook on them gets them
from a side computation of the same formula (as x-transformers returns them as data), and SDPA's
output stands.  A hook that *edits* (returns a different tensor) asks for another computation
and gets it: a replaced ``hook_q_in`` / ``hook_kv_in`` makes the key input differ from the query
input (two GEMMs), an edited score or pattern (returned, or written in place) is what the output
is computed from.

Hook points follow TransformerLens (names, layouts, order):

=====================  ==========================================  ===============================
hook                   what                                        layout
=====================  ==========================================  ===============================
``hook_q``, ``hook_k``  queries / keys BEFORE the rotation           (batch, pos, head_index, d_qk)
``hook_v``             values                                      (batch, pos, head_index, d_head)
``hook_rot_q``/``_k``  queries / keys after RoPE (rotary PEs only)  (batch, pos, head_index, d_qk)
``hook_attn_scores``   s above (pre-softmax, scaled, bias, mask)   (batch, head_index, q_pos, k_pos)
``hook_pattern``       softmax(s)                                  (batch, head_index, q_pos, k_pos)
``hook_z``             per-head output, before ``W_O``              (batch, pos, head_index, d_head)
``hook_q_in``          x (ours, not TransformerLens's)             (batch, pos, d_model)
``hook_kv_in``         y (ours)                                    (batch, pos, d_model)
=====================  ==========================================  ===============================

For MLA (:mod:`.mla`, which supplies its own :meth:`AttentionBase.project`), d_qk = head_dim +
rope_dim: q = [content ; decoupled RoPE part] (``hook_q`` before, ``hook_rot_q`` after the
rotation of the RoPE part).

A :class:`HeadAblation` at a layer replaces heads right after ``hook_z``:
with gate g (variants, heads) and replacement r, variant v of example b gets
``z' = g[v, h] z + (1 - g[v, h]) r``; the batch grows to variants x batch
(variant-major), so the single-head ablations of one layer run as one pass.
An MLA layer's :class:`~.mla.LatentAblation` makes its variants earlier, in the projections
(a gate on the latent its up-projections read); both are an :class:`Ablation`.

The CPU fast path of training (:mod:`posenc.empirical.fast`) reads these modules from outside:
it calls :meth:`Attention.heads` / :meth:`AttentionBase.project` and runs its own kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from .hooks import HookPoint, run_hook

#: Smallest d_qk from which the SDPA kernel is chosen (measured on a CPU, see the module doc).
CPU_SDPA_MIN_HEAD_DIM = 32


def kernel_for(d_qk: int, device: str | torch.device = "cpu") -> str:
    """The attention kernel of a module with query/key width ``d_qk`` that will run on
    ``device``: ``"explicit"`` or ``"sdpa"`` (the measured rule, module doc)."""
    on_cpu = torch.device(device).type == "cpu"
    return "sdpa" if not on_cpu or d_qk >= CPU_SDPA_MIN_HEAD_DIM else "explicit"


def attention_mask(keep: Optional[torch.Tensor], causal: bool, seq: int, dtype: torch.dtype,
                   device: torch.device) -> Optional[torch.Tensor]:
    """M of one forward, additive (0 / -inf), broadcastable to (B, H, T, T), or None: ``keep``
    (B, T) bool (False = a padding key) gives (B, 1, 1, T), ``causal`` the triangle j > i
    (1, 1, T, T); both (B, 1, T, T)."""
    mask = None
    if keep is not None and not bool(keep.all()):  # no padding: no key mask
        mask = torch.zeros(keep.shape[0], 1, 1, seq, dtype=dtype, device=keep.device)
        mask = mask.masked_fill(~keep[:, None, None, :], float("-inf"))  # (B, 1, 1, T)
    if causal:
        above = torch.ones(seq, seq, dtype=torch.bool, device=device).triu(1)
        triangle = torch.zeros(1, 1, seq, seq, dtype=dtype, device=device).masked_fill(
            above, float("-inf"))  # (1, 1, T, T)
        mask = triangle if mask is None else mask + triangle
    return mask


class Ablation:
    """What an ablation does at its layer (``layer``): the queries, keys and values it projects
    (:meth:`project`; the module's own by default) and the head outputs it hands on
    (:meth:`apply`); :meth:`problem` says why it does not fit a layer's attention module (None:
    it fits).  :class:`HeadAblation` replaces heads at ``hook_z``;
    :class:`~.mla.LatentAblation` zeroes latent dimensions of MLA's up-projections."""

    layer: int

    @property
    def n_variants(self) -> int:
        raise NotImplementedError

    def problem(self, attn: "AttentionBase") -> Optional[str]:
        raise NotImplementedError

    def project(self, attn: "AttentionBase", x: torch.Tensor, kv: torch.Tensor, offset: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return attn.project(x, kv, offset)

    def apply(self, z: torch.Tensor) -> torch.Tensor:
        return z


@dataclass
class HeadAblation(Ablation):
    """Replace heads of ``layer`` at hook_z.

    ``gate`` (variants, heads): 1 keeps a head, 0 replaces it.  ``replacement``:
    None (zeros), (seq, heads, head_dim) (e.g. a data-set mean) or
    (batch, seq, heads, head_dim) (e.g. resampled from other examples) -- the
    layout of ``hook_z``.
    """

    layer: int
    gate: torch.Tensor
    replacement: Optional[torch.Tensor] = None

    @property
    def n_variants(self) -> int:
        return int(self.gate.shape[0])

    def problem(self, attn: "AttentionBase") -> Optional[str]:
        return None if self.gate.dim() == 2 and self.gate.shape[-1] == attn.n_heads else \
            f"gate {attn.n_heads} heads; got gate {tuple(self.gate.shape)}"

    def apply(self, z: torch.Tensor) -> torch.Tensor:
        """(batch, T, H, dh) -> (variants * batch, T, H, dh)."""
        B = z.shape[0]
        g = self.gate.to(z.dtype)[:, None, None, :, None]  # (V, 1, 1, H, 1)
        out = g * z[None]
        if self.replacement is not None:
            r = self.replacement.to(z.dtype)
            r = r[None, None] if r.dim() == 3 else r[None]  # (1, 1 or B, T, H, dh)
            out = out + (1 - g) * r
        return out.reshape(self.n_variants * B, *z.shape[1:])


def heads_last(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, d) <-> (B, T, H, d): a view (the hook layout vs the kernel layout)."""
    return x.transpose(1, 2)


def run_head_hook(point: HookPoint, x: torch.Tensor) -> torch.Tensor:
    """``point`` on (B, H, T, d) ``x``, shown to its hooks as (B, T, H, d)."""
    return heads_last(run_hook(point, heads_last(x))) if point.fns else x


def run_hook_seeing_edits(point: HookPoint, x: torch.Tensor, watch_edits: bool) -> tuple[torch.Tensor, bool]:
    """``point(x)`` and, with ``watch_edits``, whether a hook edited: returned another tensor or
    wrote into ``x`` (compared with a copy: inference tensors keep no version counter)."""
    if not point.fns:
        return x, False
    before = x.clone() if watch_edits else None
    out = point(x)
    return out, before is not None and (out is not x or not torch.equal(x, before))


class AttentionBase(nn.Module):
    """Hooks, the attention kernel, the ablation gate and the output projection; a subclass
    supplies :meth:`project` (the queries, keys and values of its heads)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float, bias: Optional[nn.Module],
                 d_qk: int, rotary_hooks: bool = False, out_bias: bool = True,
                 device: str | torch.device = "cpu"):
        super().__init__()
        self.d_model, self.n_heads = d_model, n_heads
        self.head_dim = d_model // n_heads
        self.dropout = dropout
        self.bias = bias
        self.kernel = kernel_for(d_qk, device)  # chosen once, for the device it will run on
        self.out = nn.Linear(n_heads * self.head_dim, d_model, bias=out_bias)
        names = ["hook_q_in", "hook_kv_in", "hook_q", "hook_k", "hook_v"]
        if rotary_hooks:  # as TransformerLens: only attention with a rotation has them
            names += ["hook_rot_q", "hook_rot_k"]
        for name in names + ["hook_attn_scores", "hook_pattern", "hook_z"]:
            setattr(self, name, HookPoint())

    def forward(self, x: torch.Tensor, kv: torch.Tensor, mask: Optional[torch.Tensor],
                offset: int = 0, ablation: Optional[Ablation] = None) -> torch.Tensor:
        """x (B, T, D) normed query input; kv (B or fewer, T, D) normed key/value input; mask
        (:func:`attention_mask`) -> (B', T, D) (B' = variants * B under an ablation)."""
        T = x.shape[1]
        # (Bq, H, T, d_qk), (Bk, H, T, d_qk), (Bk, H, T, dh); Bq = B, or variants * B when the
        # ablation acts in the projections
        q, k, v = self.project(x, kv, offset) if ablation is None else \
            ablation.project(self, x, kv, offset)
        B = q.shape[0]
        if k.shape[0] != B:  # keys/values from a shared (un-ablated) input: repeat over variants
            k, v = k.repeat(B // k.shape[0], 1, 1, 1), v.repeat(B // v.shape[0], 1, 1, 1)
        if mask is not None and mask.shape[0] not in (1, B):  # a key mask per example, variants
            mask = mask.repeat(B // mask.shape[0], 1, 1, 1)
        bias = self.positional_bias(T, offset, q.dtype)  # (H or 1, T, T) or None
        z = self.attend(q, k, v, mask, bias)  # (B, H, T, dh)
        z = run_hook(self.hook_z, heads_last(z))  # (B, T, H, dh)
        if ablation is not None:
            z = ablation.apply(z)  # (V * B, T, H, dh)
        return self.out(z.reshape(z.shape[0], T, -1))  # (B', T, D)

    def project(self, x: torch.Tensor, kv: torch.Tensor, offset: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, D), kv (Bk, T, D) -> q, k (post-rotation) and v, (B or Bk, H, T, d), with
        the hooks from ``hook_q_in`` to ``hook_rot_k`` (each subclass)."""
        raise NotImplementedError

    def positional_bias(self, seq: int, offset: int = 0,
                        dtype: torch.dtype = torch.float32) -> Optional[torch.Tensor]:
        """The PE bias this layer adds to the scores: (H or 1, seq, seq), or None."""
        return None if self.bias is None else self.bias(seq, offset, dtype)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               mask: Optional[torch.Tensor], bias: Optional[torch.Tensor]) -> torch.Tensor:
        """The kernel: q, k (B, H, T, d_qk), v (B, H, T, dh) -> z = softmax(s) v (B, H, T, dh)."""
        dropout = self.dropout if self.training else 0.0
        watched = self.hook_attn_scores.active or self.hook_pattern.active
        z = None
        if self.kernel == "sdpa":
            additive = bias if mask is None else mask if bias is None else bias + mask
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=additive, dropout_p=dropout)
            if not watched:
                return z
        # the explicit kernel, or the scores and pattern for the hooks beside SDPA (as data)
        scores = torch.matmul(q * q.shape[-1] ** -0.5, k.transpose(-1, -2))  # (B, H, T, T)
        if bias is not None:
            scores = scores + bias
        if mask is not None:
            scores = scores + mask
        scores, edited = run_hook_seeing_edits(self.hook_attn_scores, scores, watch_edits=z is not None)
        pattern = scores.softmax(dim=-1)
        pattern, edited_pattern = run_hook_seeing_edits(self.hook_pattern, pattern,
                                                        watch_edits=z is not None)
        if z is not None and not (edited or edited_pattern):
            return z  # only looked at: SDPA's output stands
        return torch.matmul(F.dropout(pattern, dropout) if dropout else pattern, v)


class Attention(AttentionBase):
    """Standard multi-head attention; optional RoPE ``rotary`` and additive ``bias``.
    ``qkv_bias``: Q, K, V projections with biases (the paper's code)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0,
                 rotary: Optional[nn.Module] = None, bias: Optional[nn.Module] = None,
                 qkv_bias: bool = False, device: str | torch.device = "cpu"):
        super().__init__(d_model, n_heads, dropout, bias, d_qk=d_model // n_heads,
                         rotary_hooks=rotary is not None, device=device)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=qkv_bias)  # rows: W_q, W_k, W_v
        self.rotary = rotary

    def project(self, x: torch.Tensor, kv: torch.Tensor, offset: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, D), kv (Bk, T, D) -> q, k (rotated), v (B or Bk, H, T, dh)."""
        x, kv = run_hook(self.hook_q_in, x), run_hook(self.hook_kv_in, kv)
        if kv is x:  # keys from the query input: one GEMM
            q, k, v = self.qkv(x).split(self.d_model, dim=-1)  # (B, T, D) each
        else:
            q, kv = self.split_projection(x, kv)  # (B, T, D), (Bk, T, 2D)
            k, v = kv.split(self.d_model, dim=-1)
        return self.heads(q, k, v, offset)

    def heads(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, offset: int
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Projected q (B, T, D), k, v (Bk, T, D) -> q, k, v (B or Bk, H, T, dh): split into
        heads, ``hook_q`` / ``_k`` / ``_v``, the rotation, ``hook_rot_q`` / ``_k``."""
        H, dh = self.n_heads, self.head_dim
        q = run_head_hook(self.hook_q, heads_last(q.unflatten(-1, (H, dh))))  # (B, H, T, dh)
        k = run_head_hook(self.hook_k, heads_last(k.unflatten(-1, (H, dh))))
        v = run_head_hook(self.hook_v, heads_last(v.unflatten(-1, (H, dh))))
        if self.rotary is not None:
            q, k = self.rotary.rotate_qk(q, k, offset)
            q, k = run_head_hook(self.hook_rot_q, q), run_head_hook(self.hook_rot_k, k)
        return q, k, v

    def split_projection(self, x: torch.Tensor, kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Q from ``x`` and K, V from ``kv`` (keys and values from another input): (.., D) and
        (.., 2D), two GEMMs with the rows of the fused projection."""
        D, W, b = self.d_model, self.qkv.weight, self.qkv.bias
        return (F.linear(x, W[:D], None if b is None else b[:D]),
                F.linear(kv, W[D:], None if b is None else b[D:]))

    def head_weights(self) -> dict[str, torch.Tensor]:
        """Per-head matrices: W_q, W_k, W_v (H, dh, D) and W_o (H, D, dh)."""
        H, dh, D = self.n_heads, self.head_dim, self.d_model
        Wq, Wk, Wv = self.qkv.weight.detach().split(D, dim=0)
        return {"W_q": Wq.reshape(H, dh, D), "W_k": Wk.reshape(H, dh, D),
                "W_v": Wv.reshape(H, dh, D),
                "W_o": self.out.weight.detach().reshape(D, H, dh).permute(1, 0, 2)}
