"""Single-head ablation of every head in every layer, at ``hook_z``; deposit index; attention distances.

Modes (what replaces head h's output z_h, (seq, head_dim) per example):

* ``zero`` -- 0;
* ``mean`` -- the mean of z_h over the data set, per position;
* ``resample`` -- z_h of another example at the same positions (a seeded
  random derangement of the examples, so no example is its own source).

All H single-head ablations of a layer run as ONE forward pass: the model
computes layers below l once, and at layer l a gate (H, H) = 1 - I turns the
batch into H variants (see :class:`posenc.empirical.model.attention.HeadAblation`).
``batched=False`` runs the same gates one head at a time (the reference).

**Deposit index** (our definition, to make "one head carries it" a number):
with drops ``d_h = baseline - acc_h`` of a layer,

    deposit_index = max_h max(d_h, 0) / sum_h max(d_h, 0)      (0 if no head hurts)

It lies in {0} u [1/H, 1]: 1 when a single head's removal is the only one
that costs accuracy, 1/H when every head costs the same.  The table also
reports the deposit head (argmax d_h, lowest index on ties), the largest drop
and the **runner-up gap** ``d_(1) - d_(2)`` between the two largest drops (0 for one head).
A concentrated deposit is a large drop with an index near 1 and a gap close
to the drop itself (paper: about 60 points for RoPE on the distance task).

**Attention distance** of head h: mean over examples and (non-padding) query
positions i of ``sum_j pattern[h, i, j] * |i - j|``.

Mode ``latent-columns`` (MLA models only) is the paper code's MLA ablation, which removes no
head: variant v zeroes the latent dimensions [w v, w v + w) (w the head width) at the inputs of
the three up-projections, and is reported as "head" v, without attention distances; see
:mod:`.latent_ablation`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import torch

from ...atomic import atomic_write_text
from ...errors import PosencError
from ...limits import check_int, is_index
from ..model.attention import HeadAblation
from ..model.transformer import Transformer
from ..tasks import PAD, TaskData
from . import latent_ablation as latent_mode

#: the modes that replace a head's output at hook_z
HEAD_MODES = ("zero", "mean", "resample")
MODES = HEAD_MODES + (latent_mode.MODE,)


@dataclass(frozen=True)
class LayerAblation:
    layer: int
    baseline_acc: float
    head_acc: tuple[float, ...]
    drops: tuple[float, ...]
    largest_drop: float
    deposit_head: int
    deposit_index: float
    runner_up_gap: float
    mean_distance: Optional[tuple[float, ...]] = None


@dataclass(frozen=True)
class AblationTable:
    mode: str
    n_examples: int
    baseline_acc: float
    layers: tuple[LayerAblation, ...]

    def deposit(self) -> LayerAblation:
        """The layer whose single-head ablation costs most (first on ties)."""
        return max(self.layers, key=lambda la: (la.largest_drop, -la.layer))

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "n_examples": self.n_examples, "baseline_acc": self.baseline_acc,
                "layers": [asdict(la) for la in self.layers]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AblationTable":
        layers = tuple(LayerAblation(**{k: tuple(v) if isinstance(v, list) else v
                                        for k, v in la.items()}) for la in data["layers"])
        return cls(data["mode"], data["n_examples"], data["baseline_acc"], layers)

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")


def deposit_index(drops: Sequence[float]) -> tuple[float, int, float]:
    """(deposit index, deposit head, runner-up gap) of one layer's drops; see the module doc."""
    d = [float(x) for x in drops]
    if not d:
        raise ValueError("no heads")
    head = max(range(len(d)), key=lambda h: (d[h], -h))
    positive = sum(max(x, 0.0) for x in d)
    index = max(d[head], 0.0) / positive if positive > 0 else 0.0
    rest = sorted(d, reverse=True)
    gap = rest[0] - rest[1] if len(rest) > 1 else 0.0
    return index, head, gap


def derangement(n: int, seed: int) -> torch.Tensor:
    """A random permutation without fixed points (for n >= 2): a random cycle."""
    if n < 2:
        raise PosencError("resample ablation needs at least 2 examples")
    p = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    out = torch.empty(n, dtype=torch.long)
    out[p] = p.roll(-1)
    return out


def _zname(layer: int) -> str:
    return f"blocks.{layer}.attn.hook_z"


@torch.inference_mode()
def ablated_logits(model: Transformer, tokens: torch.Tensor, layer: int,
                   replacement: Optional[torch.Tensor] = None, batched: bool = True) -> torch.Tensor:
    """Logits (heads, batch, classes) with each head of ``layer`` replaced in turn."""
    H = model.cfg.n_heads
    B = tokens.shape[0]
    dev = tokens.device
    if batched:
        gate = 1.0 - torch.eye(H, device=dev)  # (H variants, H heads)
        return model(tokens, ablation=HeadAblation(layer, gate, replacement)).view(H, B, -1)
    rows = []
    for h in range(H):
        gate = torch.ones(1, H, device=dev)
        gate[0, h] = 0.0
        rows.append(model(tokens, ablation=HeadAblation(layer, gate, replacement)))
    return torch.stack(rows)


def _layers(layers: Any, L: int) -> list[int]:
    """``layers`` as a non-empty list of layer indices in 0..L-1, or one PosencError."""
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence) or not layers or \
            not all(is_index(l) and 0 <= int(l) < L for l in layers):
        raise PosencError(f"layers must be a non-empty list of layer indices in 0..{L - 1}; "
                          f"got {layers!r}")
    return [int(l) for l in layers]


@torch.inference_mode()
def ablate(model: Transformer, data: TaskData, mode: str = "zero", *,
           batch_size: Optional[int] = None,
           seed: int = 0, batched: bool = True, layers: Optional[Sequence[int]] = None,
           distances: bool = True, device: str | torch.device | None = None,
           expand: Optional[bool] = None) -> AblationTable:
    """Ablate every head of every layer (or of ``layers``) one at a time on ``data``.

    ``batch_size`` is the number of examples per forward pass of the baseline and
    one-by-one passes (default: 256 on CUDA, 32 otherwise).  A batched pass carries H variants of
    each of its examples:
    ``expand=False`` keeps its rows (examples x heads) near ``batch_size`` -- on a CPU the
    throughput per row falls off for large batches (benchmarks/ablation.py) -- and
    ``expand=True`` takes ``batch_size`` examples, i.e. H x batch_size rows, which fills an
    accelerator with H times fewer passes.  None (default): True on CUDA, False otherwise.
    The accuracies do not depend on it.

    Mode ``latent-columns`` (:mod:`.latent_ablation`; MLA models only, one PosencError
    otherwise) ablates the variants of each layer instead of its heads; ``seed`` and
    ``distances`` do not apply to it (its table has no attention distances).
    """
    if mode not in MODES:
        raise PosencError(f"unknown ablation mode {mode!r}; known: {', '.join(MODES)}")
    if len(data) == 0:
        raise PosencError("ablation needs at least one example")
    device = torch.device(device or next(model.parameters()).device)
    on_cuda = device.type == "cuda"
    if batch_size is None:
        batch_size = 256 if on_cuda else 32
    batch_size = check_int("batch_size", batch_size, 1 << 20)
    model.eval()
    L, H = len(model.blocks), model.cfg.n_heads
    layers = list(range(L)) if layers is None else _layers(layers, L)
    latent = mode == latent_mode.MODE
    run: dict[int, list[int]] = {}
    if latent:  # the variants each layer runs in a batched pass (all of them one by one)
        cols = {l: latent_mode.latent_columns(model, l) for l in layers}
        run = {l: cols[l].active() if batched else list(range(H)) for l in layers}
        distances = False
    N = len(data)
    names = {_zname(l) for l in range(L)}
    if distances:
        names |= {f"blocks.{l}.attn.hook_pattern" for l in range(L)}
    base_correct = 0
    z_sum = [0.0] * L
    dist_sum = torch.zeros(L, H, dtype=torch.float64)
    dist_count = 0.0
    for s in range(0, N, batch_size):
        tok, y = data.tokens[s:s + batch_size].to(device), data.labels[s:s + batch_size].to(device)
        logits, cache = model.run_with_cache(tok, names_filter=lambda n: n in names)
        base_correct += int((logits.argmax(-1) == y).sum())
        if mode == "mean":
            z_sum = [z_sum[l] + cache[_zname(l)].sum(0).double() for l in range(L)]
        if distances:
            valid = (tok != PAD) if model.cfg.mask_padding else torch.ones_like(tok, dtype=torch.bool)
            T = tok.shape[1]
            pos = torch.arange(T, device=device)
            dist = (pos[:, None] - pos[None, :]).abs().to(torch.float64)  # (T, T) |i - j|
            for l in range(L):
                pat = cache[f"blocks.{l}.attn.hook_pattern"].double()  # (B, H, T, T)
                per_query = (pat * dist).sum(-1)  # (B, H, T)
                dist_sum[l] += (per_query * valid[:, None, :]).sum((0, 2)).cpu()
            dist_count += float(valid.sum())
    baseline = base_correct / N
    means = [(z_sum[l] / N).float() for l in range(L)] if mode == "mean" else None
    perm = derangement(N, seed) if mode == "resample" else None
    correct = torch.zeros(L, H, dtype=torch.long)
    if expand is None:
        expand = on_cuda
    width = max(len(run[l]) for l in layers) if latent else H  # variants per batched pass
    step = batch_size if (expand or not batched) else max(1, batch_size // width)
    for s in range(0, N, step):
        tok, y = data.tokens[s:s + step].to(device), data.labels[s:s + step].to(device)
        source = None
        if perm is not None:
            src_tok = data.tokens[perm[s:s + step]].to(device)
            _, source = model.run_with_cache(src_tok, names_filter=lambda n: n in names
                                             and n.endswith("hook_z"))
        for l in layers:
            if latent:
                logits = latent_mode.latent_logits(model, tok, l, run[l], batched)  # (V, B, C)
                correct[l, run[l]] += (logits.argmax(-1) == y[None]).sum(1).cpu()
                continue
            repl = None if mode == "zero" else (means[l] if means is not None else source[_zname(l)])
            logits = ablated_logits(model, tok, l, repl, batched)  # (H, B, C)
            correct[l] += (logits.argmax(-1) == y[None]).sum(1).cpu()
    if latent:  # a variant that removes nothing is the unchanged model: the baseline
        for l in layers:
            correct[l, [v for v in range(H) if v not in run[l]]] = base_correct
    rows = []
    for l in layers:
        acc = [int(c) / N for c in correct[l]]
        drops = [baseline - a for a in acc]
        index, head, gap = deposit_index(drops)
        md = tuple(float(x) for x in dist_sum[l] / dist_count) if distances else None
        rows.append(LayerAblation(l, baseline, tuple(acc), tuple(drops), max(drops), head, index,
                                  gap, md))
    return AblationTable(mode, N, baseline, tuple(rows))
