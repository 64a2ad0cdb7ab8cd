"""Training dynamics of the deposit pattern: positional gradient signals, head importance, margins.

Gu et al. (arXiv 2505.13027, Sec. 6) explain the single-head deposit pattern of RoPE by a
*gradient seed* (Prop. 6.1: some head gets a consistent positional learning signal from the
start; Prop. 6.2: under an additive bias such as ALiBi the per-example signals cancel) and a
layer-wise amplification (Thm. 6.1).  This module measures those quantities while a model trains.

**Positional gradient signal** (our definition, the same for every PE whose logits have a
separable positional part).  Give head h of layer l a *positional gain* tau that scales the
positional part of its logits -- RoPE: every angle ``p * theta_m`` becomes ``tau * p * theta_m``;
additive bias (ALiBi, relative tables, custom kernels): ``B[h]`` becomes ``tau * B[h]``.  The
signal of example e is the derivative of its loss at tau = 1::

    psi[e, l, h] = d loss_e / d tau_{l,h} = < dloss_e/dS[l,h], P[l,h] >_F      (S: the scores)

with the positional direction of the scores (post-rotation q, k of plane m on dims (a, b)):

    RoPE     P[i, j] = (i - j) * sum_m theta_m (q_ia k_jb - q_ib k_ja) / sqrt(d_qk)
    additive P[i, j] = B[h, i, j]

It is computed for all examples, layers and heads by ONE forward/backward: scores + eps[e, h] * P
with eps = 0 (so the forward is unchanged) and ``torch.autograd.grad`` of the summed loss with
respect to eps.  (MLA: the decoupled RoPE dims; NoPE / absolute PEs have no positional part in
the logits, so no signal.)  A negative signal means gradient descent would *raise* the head's
positional gain.

From the per-example signals of a fixed probe set of training examples, split into
``probe_batches`` batches, each record stores per layer and head:

``seed``            the batch mean of psi over the probe set (the paper's "seed")
``seed_batches``    the mean of psi over each probe batch (its sign consistency over batches)
``abs_signal``      mean |psi|
``coherence``       |seed| / abs_signal in [0, 1]: 1 when every example pushes the same way, about
                    sqrt(2 / (pi n)) when n signs are random (per-example signals cancel)
``agreement``       the fraction of examples whose psi has the sign of the seed
``sign_balance``    |#positive - #negative| / n of the examples' psi: the coherence the signs
                    alone give (records made before it existed have none; see
                    :mod:`.dynamics_summary`)
``attribution``     -mean d loss_e / d g_h for a gate g on the head output at hook_z: the
                    first-order estimate of the loss increase when the head is zeroed
``importance``      the measured loss increase (nats) when the head alone is zeroed on held-out
                    examples (the batched single-head ablation of :mod:`.ablation`), and
``acc_drop``        the accuracy drop -- every ``ablation_every``-th record and at the end
``margin``          per layer, top minus runner-up of |seed| (``signal``) and of ``importance``
``psi_q``           only in the records of the early window (``step <=``
                    :func:`~.early_window.default_early_steps`): the per-example signals
                    themselves, quantised per (layer, head) (:func:`.sign_flip.quantised`), for
                    the sign-flip randomisation of Prop. 6.1 (:mod:`.sign_flip`)

**File** ``dynamics.jsonl.gz`` in the run folder (gzip-compressed JSON lines,
:mod:`posenc.compressed`; a run recorded before keeps a plain ``dynamics.jsonl``, read the
same): line 1 a header (``kind: header``, format, the :class:`DynamicsConfig`, layers, heads,
PE, which layers have a signal, total steps), then one line per record (``kind: record``,
``step`` = optimiser updates done before the record, so step 0 is the initialisation;
``final: true`` on the record after the last update).  Records are kept in memory and the file
is rewritten atomically before every checkpoint, so a resumed run drops the records past its
checkpoint and records them again, identically.

Recording never changes training: it runs in eval mode (no dropout, no RNG draws), takes
gradients only with respect to its own eps and gates (``.grad`` of the parameters is never
touched), and uses its own seeded generator for the probe set.  When it is off nothing runs.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch
import torch.nn.functional as F

from ...coerce import is_int
from ...compressed import read_jsonl, stored_file, write_jsonl_gz
from ...errors import PosencError
from .ablation import ablated_logits
from .early_window import default_early_steps
from .sign_flip import quantised
from ..model.transformer import Transformer
from ..tasks import TaskData
from ..model.mla import MLAAttention

DYNAMICS = "dynamics.jsonl"  # the file's name before compression (stored_file finds either)
FORMAT = 1


def dynamics_file(folder: str | Path) -> Optional[Path]:
    """The dynamics file a run folder holds (compressed, or plain from before); None: none."""
    return stored_file(folder, DYNAMICS)


@dataclass(frozen=True)
class DynamicsConfig:
    """What the recorder measures and how often (see the module doc)."""

    every: int = 25                # record every N optimiser steps (and at step 0 and the end)
    probe_examples: int = 64       # fixed training examples for the positional signal
    probe_batches: int = 4         # ... split into this many batches (sign consistency)
    ablation_every: int = 8        # importance on every k-th record (and the final one)
    ablation_examples: int = 64    # held-out (test) examples for the importance
    # Costs at the quick preset (1 thread, in training steps of batch 64): a signal record ~1
    # step, an importance record ~6 steps -- about 9% of the training time with these defaults
    # (benchmarks/dynamics_overhead.py).

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not (is_int(v) and v >= 1):
                raise PosencError(f"dynamics.{f.name} must be a positive integer; got {v!r}")
        if self.probe_batches > self.probe_examples:
            raise PosencError(f"dynamics.probe_batches ({self.probe_batches}) exceeds "
                              f"dynamics.probe_examples ({self.probe_examples})")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> "DynamicsConfig":
        if not isinstance(data, dict):
            raise PosencError("dynamics settings must be a JSON object")
        names = {f.name for f in dataclasses.fields(cls)}
        bad = set(data) - names
        if bad:
            raise PosencError(f"unknown dynamics key(s) {', '.join(sorted(bad))}; known: "
                              f"{', '.join(sorted(names))}")
        return cls(**data)


# --- positional direction of the scores and the per-example signals --------------------------

def _rotary_layout(attn: torch.nn.Module) -> Optional[tuple[torch.Tensor, torch.Tensor,
                                                            torch.Tensor]]:
    """(dims a (P,), dims b (P,), thetas (H or 1, P)) of the rotary planes in hook_rot_q/_k."""
    rot = getattr(attn, "rotary", None)
    if rot is None:
        return None
    start = attn.head_dim if isinstance(attn, MLAAttention) else 0  # MLA: q = [content, rope]
    planes = rot.planes()
    a = torch.tensor([start + p[0] for p in planes], dtype=torch.long)
    b = torch.tensor([start + p[1] for p in planes], dtype=torch.long)
    return a, b, rot.thetas


def rope_direction(q: torch.Tensor, k: torch.Tensor, layout) -> torch.Tensor:
    """d scores / d tau for post-rotation q, k (B, H, T, d_qk): (B, H, T, T)."""
    a, b, thetas = layout
    a, b = a.to(q.device), b.to(q.device)
    th = thetas.to(q.device, q.dtype)[None, :, None, :]  # (1, H or 1, 1, P)
    qa, qb = q[..., a] * th, q[..., b] * th               # (B, H, T, P)
    inner = qa @ k[..., b].transpose(-1, -2) - qb @ k[..., a].transpose(-1, -2)  # (B, H, T, T)
    T = q.shape[-2]
    pos = torch.arange(T, device=q.device, dtype=q.dtype)
    return (pos[:, None] - pos[None, :]) * inner * (q.shape[-1] ** -0.5)


def signal_layers(model: Transformer) -> list[bool]:
    """Which layers have a positional part in their logits (rotary and/or additive bias)."""
    return [_rotary_layout(b.attn) is not None or getattr(b.attn, "bias", None) is not None
            for b in model.blocks]


def per_example_signals(model: Transformer, tokens: torch.Tensor,
                        labels: torch.Tensor) -> dict[str, torch.Tensor]:
    """One forward/backward: ``psi`` and ``gate`` (L, B, H) per example, ``loss`` (B,).

    ``psi[l, e, h]`` = d loss_e / d tau_{l,h} (NaN for layers without a positional part);
    ``gate[l, e, h]`` = d loss_e / d g_{l,h} for a gate g = 1 on the head output.
    The model's mode is left as it was; parameters' ``.grad`` are not touched.
    """
    L, H = len(model.blocks), model.cfg.n_heads
    B, T = tokens.shape
    has = signal_layers(model)
    dev = tokens.device
    was_training = model.training
    model.eval()
    eps = [torch.zeros(B, H, device=dev, requires_grad=True) if has[l] else None for l in range(L)]
    gates = [torch.ones(B, H, device=dev, requires_grad=True) for _ in range(L)]
    captured: dict[tuple[int, str], torch.Tensor] = {}
    hooks = []
    for l, block in enumerate(model.blocks):
        attn = block.attn
        hooks.append((f"blocks.{l}.attn.hook_z",
                      lambda z, hook, l=l: z * gates[l][:, None, :, None]))  # z (B, T, H, dh)
        if not has[l]:
            continue
        layout = _rotary_layout(attn)
        if layout is not None:
            for side in ("q", "k"):  # post-rotation, (B, T, H, d) -> (B, H, T, d)
                hooks.append((f"blocks.{l}.attn.hook_rot_{side}",
                              lambda x, hook, l=l, side=side:
                              captured.__setitem__((l, side), x.detach().transpose(1, 2))))

        def add_eps(scores, hook, l=l, attn=attn, layout=layout):
            with torch.no_grad():
                P = torch.zeros((), device=scores.device, dtype=scores.dtype)
                if layout is not None:
                    P = rope_direction(captured[(l, "q")], captured[(l, "k")], layout)
                bias = attn.positional_bias(T, 0, scores.dtype)
                if bias is not None:
                    P = P + bias.detach()[None]  # (1, H or 1, T, T)
            return scores + eps[l][:, :, None, None] * P

        hooks.append((f"blocks.{l}.attn.hook_attn_scores", add_eps))
    try:
        with torch.enable_grad(), model.hooks(hooks):
            logits = model(tokens)
            loss = F.cross_entropy(logits.float(), labels, reduction="none")  # (B,)
            wanted = [e for e in eps if e is not None] + gates
            grads = torch.autograd.grad(loss.sum(), wanted)
    finally:
        model.train(was_training)
    it = iter(grads)
    psi = torch.full((L, B, H), float("nan"), device=dev)
    for l in range(L):
        if has[l]:
            psi[l] = next(it)
    gate = torch.stack([next(it) for _ in range(L)])
    return {"psi": psi.detach(), "gate": gate.detach(), "loss": loss.detach()}


# --- importance and margins ------------------------------------------------------------------

@torch.inference_mode()
def head_importance(model: Transformer, data: TaskData, batch_size: int = 128) -> dict[str, Any]:
    """Zero-ablation of each head alone: loss increase and accuracy drop, (L, H) each.

    ``batch_size``: rows per pass (examples x heads); ~128 is fastest on a CPU at quick sizes."""
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    L, H = len(model.blocks), model.cfg.n_heads
    loss_sum = torch.zeros(L, H, dtype=torch.float64)
    correct = torch.zeros(L, H, dtype=torch.float64)
    base_loss, base_correct = 0.0, 0
    step = max(1, batch_size // H)
    try:
        for s in range(0, len(data), step):
            tok, y = data.tokens[s:s + step].to(dev), data.labels[s:s + step].to(dev)
            base = model(tok)
            base_loss += float(F.cross_entropy(base.float(), y, reduction="sum"))
            base_correct += int((base.argmax(-1) == y).sum())
            for l in range(L):
                ab = ablated_logits(model, tok, l).float()  # (H, B, C)
                ce = F.cross_entropy(ab.flatten(0, 1), y.repeat(H), reduction="none")
                loss_sum[l] += ce.view(H, -1).sum(1).double().cpu()
                correct[l] += (ab.argmax(-1) == y[None]).sum(1).double().cpu()
    finally:
        model.train(was_training)
    N = len(data)
    return {"importance": (loss_sum / N - base_loss / N).tolist(),
            "acc_drop": (base_correct / N - correct / N).tolist(),
            "baseline_loss": base_loss / N, "baseline_acc": base_correct / N}


def margin(values: list[float]) -> float:
    """Top minus runner-up of a layer's per-head values (0 for one head; NaN if any is NaN)."""
    v = sorted((float(x) for x in values), reverse=True)
    if any(math.isnan(x) for x in v):
        return float("nan")
    return v[0] - v[1] if len(v) > 1 else 0.0


def _r(x: float) -> Optional[float]:
    x = float(x)
    return None if math.isnan(x) else float(f"{x:.7g}")


def _grid(t: torch.Tensor) -> list:
    return [[_r(x) for x in row] for row in t.tolist()] if t.dim() == 2 else \
        [_grid(s) for s in t]


def signal_grids(P: torch.Tensor, probe_batches: int) -> dict[str, Any]:
    """A record's signal statistics from the per-example signals ``P`` (L, N, H) of the probe
    set (NaN for layers without a positional part): ``seed``, ``seed_batches``,
    ``abs_signal``, ``coherence``, ``agreement`` (see the module doc) and ``margin``
    {``signal``}."""
    n = P.shape[1]
    bounds = [round(i * n / probe_batches) for i in range(probe_batches + 1)]
    seed = P.mean(1)                                           # (L, H)
    abs_signal = P.abs().mean(1)
    coherence = seed.abs() / abs_signal.clamp(min=1e-30)
    coherence[torch.isnan(seed)] = float("nan")
    agreement = (torch.sign(P) == torch.sign(seed)[:, None, :]).double().mean(1)
    agreement[torch.isnan(seed)] = float("nan")
    balance = torch.sign(P).mean(1).abs()                     # |#positive - #negative| / n
    balance[torch.isnan(seed)] = float("nan")
    seed_batches = torch.stack([P[:, s:e].mean(1) for s, e in zip(bounds[:-1], bounds[1:])],
                               dim=-1)                         # (L, H, nb)
    return {"seed": _grid(seed), "seed_batches": _grid(seed_batches),
            "abs_signal": _grid(abs_signal), "coherence": _grid(coherence),
            "agreement": _grid(agreement), "sign_balance": _grid(balance),
            "margin": {"signal": [_r(margin(row)) for row in seed.abs().tolist()]}}


def measure(model: Transformer, probe: TaskData, held: Optional[TaskData],
            probe_batches: int, chunk: int = 32, keep_signals: bool = False) -> dict[str, Any]:
    """One record's measurements (see the module doc); ``held=None`` skips the importance;
    ``keep_signals``: the record keeps the per-example signals (``psi_q``)."""
    dev = next(model.parameters()).device
    n = len(probe)
    psi, gate, loss = [], [], []
    for s in range(0, n, chunk):  # per-example signals do not depend on the chunking (eval mode)
        out = per_example_signals(model, probe.tokens[s:s + chunk].to(dev),
                                  probe.labels[s:s + chunk].to(dev))
        psi.append(out["psi"].double().cpu())
        gate.append(out["gate"].double().cpu())
        loss.append(out["loss"].double().cpu())
    P = torch.cat(psi, dim=1)
    rec: dict[str, Any] = {"loss": _r(torch.cat(loss).mean()), **signal_grids(P, probe_batches),
                           "attribution": _grid(-torch.cat(gate, dim=1).mean(1))}
    if keep_signals:
        rec["psi_q"] = quantised(P.numpy())
    margins = rec.pop("margin")
    if held is not None:
        imp = head_importance(model, held)
        rec.update(importance=[[_r(x) for x in row] for row in imp["importance"]],
                   acc_drop=[[_r(x) for x in row] for row in imp["acc_drop"]],
                   baseline_loss=_r(imp["baseline_loss"]), baseline_acc=_r(imp["baseline_acc"]))
        margins["importance"] = [_r(margin(row)) for row in imp["importance"]]
    rec["margin"] = margins
    return rec


# --- the recorder that train() drives --------------------------------------------------------

class DynamicsRecorder:
    """Records :func:`measure` every ``cfg.every`` steps of a run into ``dynamics.jsonl``."""

    def __init__(self, cfg: DynamicsConfig, out: Path, config, train_data: TaskData,
                 test_data: TaskData, total_steps: int, steps_per_epoch: int) -> None:
        self.cfg, self.path = cfg, Path(out) / DYNAMICS
        self.total, self.steps_per_epoch = total_steps, steps_per_epoch
        gen = torch.Generator().manual_seed(1_000_003 * config.seed + 7919)  # never the global RNG
        n_probe = min(cfg.probe_examples, len(train_data))
        self.probe = train_data.subset(torch.randperm(len(train_data), generator=gen)[:n_probe])
        self.held = test_data.subset(slice(0, min(cfg.ablation_examples, len(test_data))))
        self.batches = min(cfg.probe_batches, n_probe)
        self.header = {"kind": "header", "format": FORMAT, "dynamics": cfg.to_dict(),
                       "pe": config.model.pe, "task": config.task.name, "seed": config.seed,
                       "n_layers": config.model.n_layers, "n_heads": config.model.n_heads,
                       "total_steps": total_steps, "steps_per_epoch": steps_per_epoch,
                       "probe_examples": n_probe, "ablation_examples": len(self.held)}
        self.records: list[dict[str, Any]] = []
        self.seconds = 0.0  # wall time spent recording in this process (the report's phase)

    def start(self, model: Transformer, start_step: int) -> None:
        """Keep the records of a resumed run before ``start_step`` (the checkpoint's step)."""
        self.header["signal_layers"] = signal_layers(model)
        if start_step == 0:
            self.records = []
            return
        if dynamics_file(self.path.parent) is None:  # mid-training records would pass for early ones
            raise PosencError(f"{self.path.parent} holds a run trained {start_step} steps without "
                              f"dynamics recording, which starts at step 0; train it over "
                              f"(resume=False) or into a new folder")
        header, records = read_dynamics_file(self.path.parent)
        if header.get("dynamics") != self.cfg.to_dict():
            raise PosencError(f"{self.path} was recorded with other dynamics settings "
                              f"{header.get('dynamics')}; train again with resume=False")
        self.records = [r for r in records if r["step"] < start_step]

    def due(self, step: int) -> bool:
        return step % self.cfg.every == 0

    def record(self, step: int, model: Transformer, final: bool = False) -> None:
        t0 = time.perf_counter()
        with_importance = final or (step // self.cfg.every) % self.cfg.ablation_every == 0
        rec = {"kind": "record", "step": step, "epoch": round(step / self.steps_per_epoch, 4),
               "final": final}
        early = step <= default_early_steps(self.total, self.cfg.every)
        rec.update(measure(model, self.probe, self.held if with_importance else None,
                           self.batches, keep_signals=early))
        self.records.append(rec)
        self.seconds += time.perf_counter() - t0

    def flush(self) -> None:
        write_jsonl_gz(self.path, [self.header] + self.records)


def read_dynamics_file(path: str | Path, of: Optional[tuple[str, str, int]] = None
                       ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, records) of a run's dynamics file (``path``: the run folder or the file, either
    form); a missing or damaged file is a PosencError, and so is, given ``of`` = (task, pe,
    seed) of the run asked for, the file of another run."""
    path = Path(path)
    found = dynamics_file(path) if path.is_dir() else \
        path if path.is_file() else stored_file(path.parent, path.name)
    if found is None:
        folder = path if path.is_dir() else path.parent
        raise PosencError(f"{folder} has no {DYNAMICS}: the run was trained without dynamics "
                          f"recording (record one into a new folder: posenc dynamics NEW_DIR --record)")
    rows = read_jsonl(found)
    if not rows or not isinstance(rows[0], dict) or rows[0].get("kind") != "header" \
            or rows[0].get("format") != FORMAT:
        raise PosencError(f"{found} is not a posenc dynamics file (format {FORMAT})")
    held = tuple(rows[0].get(k) for k in ("task", "pe", "seed"))
    if of is not None and held != tuple(of):
        raise PosencError(f"{found} holds the dynamics of {held[1]} on {held[0]}, seed {held[2]}, "
                          f"not of the run it is in ({of[1]} on {of[0]}, seed {of[2]})")
    return rows[0], [r for r in rows[1:] if isinstance(r, dict) and r.get("kind") == "record"]
