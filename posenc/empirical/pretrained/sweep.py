"""Every head (or key/value group) of a transformers model ablated in turn, on a probe.

What replaces the ablated heads' outputs z_h at the output projection's input (the same modes as
posenc's own ablation, :mod:`posenc.empirical.analysis.ablation`): ``zero``; ``mean`` -- z_h's
mean over the probe's rows at each position; ``resample`` -- z_h of another example at the same
positions (a seeded derangement of the examples).  A unit is one query head (``head``) or one
key/value group, all the query heads that share a key/value head (``kv-group``).

**One batch per layer, the residual stream below it computed once.**  A first (baseline) pass
runs the model on the probe and keeps every layer's output and every output projection's input.
For layer l, the probe's rows are repeated once per unit (unit-major), the layers below l are
replaced by their kept outputs (their ``forward`` returns the stored tensor: no computation),
and a pre-hook on layer l's output projection replaces unit v's heads in the v-th copy; layers
l+1 and up run as the model's own code runs them.  Only the scored positions go through the
unembedding (a pre-hook on the output embedding keeps those positions: Gemma 3's 262k-word
unembedding would otherwise dominate the pass).  :func:`naive_unit` is the reference: one full
forward of the unmodified model per unit, with the replacement alone.

Per layer and unit the result holds top-1 accuracy and the mean loss over the probe's
predictions; from the baseline pass's attention patterns (eager attention), per head: the mean
attended distance ``sum_j p_ij |i - j|``, the previous-token score (mean ``p_{i,i-1}``) and the
induction score (mean ``p_{i,j+1}`` over queries i whose token occurred before, at j < i - 1,
most recently).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

import torch

from ...errors import PosencError
from ...limits import check_memory
from ..analysis.ablation import HEAD_MODES as MODES, derangement
from .families import Layout, layout
from .probes import Probe

UNITS = ("head", "kv-group")
#: rows of one ablation pass (units x examples x rows per example), by default; measured on 2
#: CPU cores (benchmarks/pretrained_ablation.py) -- larger passes gain nothing there
ROWS_PER_PASS = 64


def unit_masks(lay: Layout, unit: str) -> torch.Tensor:
    """(units, heads) bool: which query heads each unit ablates."""
    if unit not in UNITS:
        raise PosencError(f"unknown ablation unit {unit!r}; known: {', '.join(UNITS)}")
    heads = torch.arange(lay.n_heads)
    if unit == "head":
        return heads[None, :] == heads[:, None]
    groups = torch.arange(lay.n_kv)
    return (heads[None, :] // lay.group_size) == groups[:, None]


class _Model:
    """How to run ``model`` on rows of a probe and read its scored output."""

    def __init__(self, model: Any, lay: Layout, probe: Probe):
        self.model, self.lay, self.probe = model, lay, probe
        self.readout = None if probe.kind == "order" else model.get_output_embeddings()
        if probe.kind != "order" and self.readout is None:
            raise PosencError(f"this {lay.model_type} model has no output embedding (no LM head): the "
                              f"{probe.name} probe needs one")

    @contextmanager
    def scored_only(self) -> Iterator[None]:
        """Only the probe's scored positions reach the unembedding."""
        if self.readout is None:
            yield
            return
        pos = self.probe.positions

        def keep(module: Any, args: tuple) -> tuple:
            return (args[0][:, pos],) + tuple(args[1:])
        handle = self.readout.register_forward_pre_hook(keep)
        try:
            yield
        finally:
            handle.remove()

    def forward(self, tokens: torch.Tensor, attentions: bool = False) -> tuple[torch.Tensor, Any]:
        """(scored output, attentions or None): logits (rows, K, vocab) or pooled embeddings
        (rows, d)."""
        mask = torch.ones_like(tokens)
        kw: dict[str, Any] = {"output_attentions": True} if attentions else {}
        if self.lay.family.kind == "decoder":
            out = self.model(input_ids=tokens, use_cache=False, **kw)
            return out.logits, getattr(out, "attentions", None)
        if self.probe.kind == "order":
            out = self.model.base_model(input_ids=tokens, attention_mask=mask, **kw)
            hidden = out.last_hidden_state
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            return pooled, getattr(out, "attentions", None)
        out = self.model(input_ids=tokens, attention_mask=mask, **kw)
        return out.logits, getattr(out, "attentions", None)

    def score(self, output: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(correct, loss) summed per example of ``rows`` (rows_per_example consecutive rows an
        example), float64."""
        if self.probe.kind == "order":
            emb = torch.nn.functional.normalize(output.double(), dim=-1).view(-1, 3, output.shape[-1])
            near, far = (emb[:, 0] * emb[:, 1]).sum(-1), (emb[:, 0] * emb[:, 2]).sum(-1)
            return (near > far).double(), far - near
        target = self.probe.targets[rows]
        logits = output.double()
        correct = (logits.argmax(-1) == target).double().sum(-1)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten(),
                                                 reduction="none").view(target.shape).sum(-1)
        return correct, loss


@contextmanager
def _skip_below(lay: Layout, layer: int, output: torch.Tensor) -> Iterator[None]:
    """Layers 0..layer-1 return ``output`` (layer-1's kept output, repeated) without computing."""
    saved = [lay.layers[j].__dict__.get("forward") for j in range(layer)]

    def stored(*args: Any, **kwargs: Any) -> torch.Tensor:
        return output
    for j in range(layer):
        lay.layers[j].forward = stored
    try:
        yield
    finally:
        for j, old in enumerate(saved):
            if old is None:
                del lay.layers[j].forward
            else:
                lay.layers[j].forward = old


@contextmanager
def _replace_heads(lay: Layout, layer: int, masks: torch.Tensor,
                   replacement: Optional[torch.Tensor]) -> Iterator[None]:
    """At layer ``layer``'s output projection, copy v of the rows gets unit v's heads replaced:
    by 0 (``replacement`` None), or by ``replacement`` -- (T, H, d_h) for every row, or
    (rows, T, H, d_h) per row."""
    V, H, dh = masks.shape[0], lay.n_heads, lay.head_dim
    gate = masks[:, None, None, :, None]

    def hook(module: Any, args: tuple) -> tuple:
        x = args[0]
        y = x.reshape(V, -1, x.shape[1], H, dh)
        if replacement is None:
            y = y.masked_fill(gate, 0.0)
        else:
            y = torch.where(gate, replacement.to(y.dtype), y)
        return (y.reshape(x.shape),) + tuple(args[1:])
    handle = lay.out_projs[layer].register_forward_pre_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def _heads(z: torch.Tensor, lay: Layout) -> torch.Tensor:
    return z.view(*z.shape[:-1], lay.n_heads, lay.head_dim)


@dataclass
class _Kept:
    outputs: list[torch.Tensor]  # per layer (rows, T, d)
    z: list[torch.Tensor]  # per layer (rows, T, H*d_h): the output projection's input
    correct: torch.Tensor  # per example
    loss: torch.Tensor  # per example
    scores: list[dict[str, list[Optional[float]]]]


def _induction_targets(tokens: torch.Tensor) -> torch.Tensor:
    """(Q, 3) rows of (row, query i, key j+1): j < i - 1 the most recent earlier position of
    token i."""
    out = []
    for r, row in enumerate(tokens.tolist()):
        last: dict[int, int] = {}
        for i, t in enumerate(row):
            j = last.get(t)
            if j is not None and j + 1 < i:
                out.append((r, i, j + 1))
            last[t] = i
    return torch.tensor(out, dtype=torch.long).view(-1, 3)


class _PatternSums:
    """Per layer and head: sums of attended distance, previous-token and induction attention."""

    def __init__(self, L: int, H: int):
        self.dist = torch.zeros(L, H, dtype=torch.float64)
        self.prev = torch.zeros(L, H, dtype=torch.float64)
        self.ind = torch.zeros(L, H, dtype=torch.float64)
        self.n_dist = self.n_prev = self.n_ind = 0

    def add(self, attentions: Sequence[torch.Tensor], tokens: torch.Tensor) -> None:
        R, T = tokens.shape
        pos = torch.arange(T)
        dist = (pos[:, None] - pos[None, :]).abs().double()
        targets = _induction_targets(tokens)
        for l, att in enumerate(attentions):
            p = att.double()  # (R, H, T, T)
            self.dist[l] += (p * dist).sum(-1).sum((0, 2))
            self.prev[l] += p[:, :, pos[1:], pos[:-1]].sum((0, 2))
            if len(targets):
                self.ind[l] += p[targets[:, 0], :, targets[:, 1], targets[:, 2]].sum(0)
        self.n_dist += R * T
        self.n_prev += R * (T - 1)
        self.n_ind += len(targets)

    def result(self) -> list[dict[str, list[Optional[float]]]]:
        def mean(s: torch.Tensor, n: int) -> list[Optional[float]]:
            return [float(v) / n if n else None for v in s]
        return [{"distance": mean(self.dist[l], self.n_dist),
                 "previous_token": mean(self.prev[l], self.n_prev),
                 "induction": mean(self.ind[l], self.n_ind)} for l in range(self.dist.shape[0])]


def _example_rows(probe: Probe, examples: torch.Tensor) -> torch.Tensor:
    k = probe.rows_per_example
    return (examples[:, None] * k + torch.arange(k)[None, :]).flatten()


def _baseline(m: _Model, batch_rows: int, patterns: bool) -> _Kept:
    lay, probe = m.lay, m.probe
    L = len(lay.layers)
    outputs: list[list[torch.Tensor]] = [[] for _ in range(L)]
    zs: list[list[torch.Tensor]] = [[] for _ in range(L)]
    handles = []
    for l in range(L):
        handles.append(lay.layers[l].register_forward_hook(
            lambda mod, args, out, l=l: outputs[l].append(out[0] if isinstance(out, tuple) else out)))
        handles.append(lay.out_projs[l].register_forward_pre_hook(
            lambda mod, args, l=l: zs[l].append(args[0])))
    sums = _PatternSums(L, lay.n_heads)
    correct, loss = [], []
    step = max(1, batch_rows // probe.rows_per_example)
    try:
        with m.scored_only():
            for s in range(0, probe.n_examples, step):
                rows = _example_rows(probe, torch.arange(s, min(s + step, probe.n_examples)))
                out, att = m.forward(probe.tokens[rows], attentions=patterns)
                c, lo = m.score(out, rows)
                correct.append(c)
                loss.append(lo)
                if patterns:
                    if att is None or len(att) != L:
                        raise PosencError(f"this {lay.model_type} model returned no attention patterns "
                                          f"(load it with attn_implementation='eager')")
                    sums.add(att, probe.tokens[rows])
    finally:
        for h in handles:
            h.remove()
    return _Kept([torch.cat(o) for o in outputs], [torch.cat(z) for z in zs], torch.cat(correct),
                 torch.cat(loss), sums.result() if patterns else [])


def _replacement(mode: str, kept: _Kept, lay: Layout, layer: int, probe: Probe,
                 perm: Optional[torch.Tensor], rows: torch.Tensor) -> Optional[torch.Tensor]:
    if mode == "zero":
        return None
    z = _heads(kept.z[layer], lay)
    if mode == "mean":
        return z.mean(0)
    assert perm is not None
    k = probe.rows_per_example
    source = perm[rows // k] * k + rows % k
    return z[source]


def paired_half_widths(base: torch.Tensor, ablated: torch.Tensor, predictions: int,
                       level: float = 0.95) -> tuple[Optional[float], ...]:
    """The half-width of the Student-t interval of each unit's drop ``(sum(base) -
    sum(ablated[v])) / predictions`` over the probe's examples: ``base`` (E,) and ``ablated`` (V, E) count the
    correct predictions per example, each example scoring ``predictions / E`` of them.  The
    examples are the independent draws (the predictions of one sequence are not), so the
    interval is over the E per-example drops; None when there is one example."""
    E = base.shape[0]
    if E < 2:
        return tuple(None for _ in range(ablated.shape[0]))
    from scipy.stats import t as student_t
    per_example = (base.double()[None, :] - ablated.double()) * (E / predictions)  # (V, E)
    sd = per_example.std(dim=1, unbiased=True)
    q = float(student_t.ppf((1 + level) / 2, E - 1))
    return tuple(float(q * x / E ** 0.5) for x in sd)


@dataclass(frozen=True)
class Sweep:
    """The raw result: per layer, per unit, accuracy and mean loss; the baseline; head scores;
    ``drop_half_width``: per layer, per unit, the 95% half-width of its drop over the probe's
    examples (:func:`paired_half_widths`)."""

    mode: str
    unit: str
    layers: tuple[int, ...]
    baseline_acc: float
    baseline_loss: float
    acc: tuple[tuple[float, ...], ...]
    loss: tuple[tuple[float, ...], ...]
    scores: tuple[dict[str, list[Optional[float]]], ...]
    n_predictions: int
    cpu_seconds: float
    wall_seconds: float
    drop_half_width: tuple[tuple[Optional[float], ...], ...] = ()


def cache_bytes(model: Any, probe: Probe) -> int:
    """Bytes the baseline pass keeps: every layer's output and output-projection input."""
    lay = layout(model)
    cfg = model.config
    hidden = getattr(cfg, "hidden_size", None) or getattr(cfg, "n_embd")
    rows, T = probe.tokens.shape
    return 4 * len(lay.layers) * rows * T * (hidden + lay.n_heads * lay.head_dim)


@torch.inference_mode()
def sweep(model: Any, probe: Probe, mode: str = "mean", *, unit: str = "head",
          layers: Optional[Sequence[int]] = None, seed: int = 0, rows_per_pass: int = ROWS_PER_PASS,
          patterns: bool = True, progress: Optional[Callable[[int, int], None]] = None,
          log: Optional[Callable[[str], None]] = None) -> Sweep:
    """Ablate each unit of each layer (or of ``layers``) of ``model`` in turn on ``probe``.

    ``progress(done, total)`` is called after each layer; ``log`` gets one line after the
    baseline pass: its CPU time and the sweep's estimated CPU time (each layer l costs about the
    baseline pass times the units, times the share (L - l) / L of the layers it runs)."""
    if mode not in MODES:
        raise PosencError(f"unknown ablation mode {mode!r}; known: {', '.join(MODES)}")
    lay = layout(model)
    masks = unit_masks(lay, unit)
    L = len(lay.layers)
    chosen = list(range(L)) if layers is None else [int(x) for x in layers]
    if not chosen or any(not 0 <= x < L for x in chosen):
        raise PosencError(f"layers must be layer indices in 0..{L - 1}; got {layers!r}")
    check_memory(cache_bytes(model, probe), "the ablation's kept activations")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    model.eval()
    m = _Model(model, lay, probe)
    kept = _baseline(m, rows_per_pass, patterns)
    if log is not None:
        base = time.process_time() - cpu0
        share = sum((L - l) / L for l in chosen)
        log(f"baseline pass {base:.1f} CPU s; {len(chosen)} layers x {masks.shape[0]} units to "
            f"ablate: about {base * masks.shape[0] * share / 60:.1f} CPU min")
    E, k, V = probe.n_examples, probe.rows_per_example, masks.shape[0]
    per_prediction = probe.n_predictions
    perm = derangement(E, seed) if mode == "resample" else None
    step = max(1, rows_per_pass // (V * k))
    uniform = per_prediction % E == 0   # the interval needs as many predictions in every example
    acc_rows, loss_rows, half_rows = [], [], []
    with m.scored_only():
        for l in chosen:
            loss = torch.zeros(V, dtype=torch.float64)
            per_example = []   # (V, examples) correct counts per batch of examples
            for s in range(0, E, step):
                rows = _example_rows(probe, torch.arange(s, min(s + step, E)))
                repl = _replacement(mode, kept, lay, l, probe, perm, rows)
                tokens = probe.tokens[rows].repeat(V, 1)
                below = kept.outputs[l - 1][rows].repeat(V, 1, 1) if l > 0 else None
                with _replace_heads(lay, l, masks, repl):
                    if below is None:
                        out, _ = m.forward(tokens)
                    else:
                        with _skip_below(lay, l, below):
                            out, _ = m.forward(tokens)
                c, lo = m.score(out, rows.repeat(V))
                per_example.append(c.view(V, -1))
                loss += lo.view(V, -1).sum(1)
            correct = torch.cat(per_example, dim=1)   # (V, E)
            acc_rows.append(tuple(float(x) / per_prediction for x in correct.sum(1)))
            half_rows.append(paired_half_widths(kept.correct, correct, per_prediction)
                             if uniform else (None,) * V)
            loss_rows.append(tuple(float(x) / per_prediction for x in loss))
            if progress is not None:
                progress(len(acc_rows), len(chosen))
    return Sweep(mode, unit, tuple(chosen), float(kept.correct.sum()) / per_prediction,
                 float(kept.loss.sum()) / per_prediction, tuple(acc_rows), tuple(loss_rows),
                 tuple(kept.scores[l] for l in chosen) if kept.scores else (), per_prediction,
                 time.process_time() - cpu0, time.perf_counter() - wall0, tuple(half_rows))


@torch.inference_mode()
def naive_unit(model: Any, probe: Probe, layer: int, heads: Sequence[int], mode: str = "zero",
               seed: int = 0) -> tuple[float, float]:
    """The reference: (accuracy, mean loss) with ``heads`` of ``layer`` replaced, from full
    forwards of the model on all rows, the replacement taken from a separate clean pass."""
    lay = layout(model)
    m = _Model(model, lay, probe)
    E, k = probe.n_examples, probe.rows_per_example
    rows = torch.arange(E * k)
    clean: list[torch.Tensor] = []
    handle = lay.out_projs[layer].register_forward_pre_hook(lambda mod, args: clean.append(args[0]))
    try:
        with m.scored_only():
            m.forward(probe.tokens)
    finally:
        handle.remove()
    z = _heads(clean[0], lay)
    if mode == "zero":
        repl = torch.zeros_like(z)
    elif mode == "mean":
        repl = z.mean(0, keepdim=True).expand_as(z)
    else:
        perm = derangement(E, seed)
        repl = z[perm[rows // k] * k + rows % k]
    hs = list(heads)

    def hook(module: Any, args: tuple) -> tuple:
        y = _heads(args[0].clone(), lay)
        y[:, :, hs] = repl[:, :, hs]
        return (y.flatten(-2),) + tuple(args[1:])
    handle = lay.out_projs[layer].register_forward_pre_hook(hook)
    try:
        with m.scored_only():
            out, _ = m.forward(probe.tokens)
    finally:
        handle.remove()
    c, lo = m.score(out, rows)
    return float(c.sum()) / probe.n_predictions, float(lo.sum()) / probe.n_predictions
