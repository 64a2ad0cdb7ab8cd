"""Seed-batched training: the seeds of one configuration train as one stacked model.

:class:`SeedGroup` builds the S single models exactly as a single run does (``torch.manual_seed(s)``
then :func:`~posenc.empirical.training.runs.model_for`), so every seed's initialisation is its own, and
stacks their parameters with a leading seed axis: one flat (S, P) buffer whose row s holds seed s's
parameters (in ``named_parameters`` order), each parameter a (S, *shape) view of it, and the
gradients land in a flat (S, P) buffer of the same layout.  Per-seed operations are then single
tensor operations over rows: the gradient norm of seed s is ``||grad[s]||``
(:func:`clip_per_seed`), and AdamW steps row s with seed s's learning rate and step count -- a
seed that has stopped is simply not stepped, so it neither moves nor decays.

The forward (:meth:`SeedGroup.forward`, tokens (S, B, T) -> logits (S, B, C): each seed its own
batch) is the padded reference forward of
:class:`~posenc.empirical.model.transformer.Transformer` written over the seed axis: the
token-wise parts (embedding, LayerNorm, Linear) are batched GEMMs over the seeds (``baddbmm``),
and attention, which has no parameters, runs once over all seeds' examples
flattened into its batch (S * B); a PE part with parameters (a learned absolute table, a learned
bias) is evaluated per seed with :func:`torch.func.functional_call` on the single model's module,
a parameter-free one (a rotation, a fixed bias or table) is the single model's module itself.  It
walks the single model's module tree, so any catalogue entry the model builds is covered; it
takes no hooks and no ablation (a trained seed is :meth:`SeedGroup.unstack`-ed into an ordinary
:class:`~posenc.empirical.model.transformer.Transformer` for those).

:func:`train_group` runs a single run's loop (:func:`posenc.empirical.training.train.train`) for all seeds
at once: each seed's own data (``make_split(task, seed)``, a carved validation split with
``patience``), its own epoch order (``randperm`` seeded with ``seed * 1_000_003 + epoch``), its own
lr schedule and step count, gradient clipping by its own norm, early stopping on its own
validation accuracies with its best weights kept, and per-epoch metrics shaped like
``train.py``'s.  It writes nothing: the caller writes ordinary per-seed run folders from the
returned metrics and state dicts.

Equalities (tests/empirical/test_seed_group.py): at the same weights and batch each seed's loss and
gradients are the single model's (float64, 1e-10); training tracks S single runs up to float
rounding.  Not equal: dropout masks (the group draws them from one generator, so a run with
dropout is a statistically equivalent run, not the single run's bit for bit).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ...errors import PosencError
from ..config import TrainConfig
from .runs import dataset_for, model_for
from ..tasks import PAD, TaskData, carve_validation

__all__ = ["SeedGroup", "GroupRun", "build_seed_models", "clip_per_seed", "clip_shared", "train_group",
           "epoch_order", "stack_batches"]


def build_seed_models(configs: Sequence[TrainConfig]) -> list[nn.Module]:
    """The single models of ``configs``, each initialised as its single run would be."""
    models = []
    for c in configs:
        torch.manual_seed(c.seed)
        models.append(model_for(c))
    return models


def epoch_order(seed: int, epoch: int, n: int) -> torch.Tensor:
    """The order of epoch ``epoch`` of a run with seed ``seed`` over ``n`` examples (train.py's)."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch))


def clip_per_seed(grad: torch.Tensor, max_norm: float) -> torch.Tensor:
    """Clip each row of ``grad`` (S, P) -- one seed's gradient -- to norm ``max_norm`` in place, as
    ``torch.nn.utils.clip_grad_norm_`` does for that seed alone; returns the norms before (S,)."""
    norms = torch.linalg.vector_norm(grad, dim=1)
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    grad.mul_(coef[:, None].to(grad.dtype))
    return norms


def clip_shared(grad: torch.Tensor, max_norm: float) -> torch.Tensor:
    """The wrong clip (one norm over all seeds' gradients, as one clip over the stacked model would
    be); kept for the test that shows per-seed clipping is what the group does."""
    total = torch.linalg.vector_norm(grad)
    grad.mul_((max_norm / (total + 1e-6)).clamp(max=1.0))
    return total.expand(grad.shape[0])


class SeedGroup(nn.Module):
    """S single models of one configuration as one stacked model (module doc).

    ``configs``: one :class:`TrainConfig` per seed, equal but for ``seed`` (the seeds distinct).
    ``models``: the single models to stack instead of building them (tests).
    ``device`` / ``dtype``: where and in what float type the stacked parameters live.
    """

    def __init__(self, configs: Sequence[TrainConfig], *, models: Optional[Sequence[nn.Module]] = None,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32):
        super().__init__()
        configs = list(configs)
        if not configs:
            raise PosencError("a seed group needs at least one config")
        base = configs[0].replace(seed=0)
        if any(c.replace(seed=0) != base for c in configs):
            raise PosencError("the configs of a seed group must differ only in their seed")
        if len({c.seed for c in configs}) != len(configs):
            raise PosencError("the seeds of a seed group must be distinct")
        self.configs = configs
        models = list(models) if models is not None else build_seed_models(configs)
        if len(models) != len(configs):
            raise PosencError("one model per config")
        self.n_seeds = S = len(models)
        # the first model's module tree: the structure and the parameter-free parts of the forward
        self.template = models[0].to(device=device, dtype=dtype)
        self.names = [n for n, _ in self.template.named_parameters()]
        shapes = [p.shape for _, p in self.template.named_parameters()]
        sizes = [math.prod(s) for s in shapes]
        self.n_params = P = sum(sizes)
        self.flat = torch.empty(S, P, device=device, dtype=dtype)
        with torch.no_grad():
            for s, m in enumerate(models):
                own = dict(m.named_parameters())
                self.flat[s] = torch.cat([own[n].detach().reshape(-1).to(device, dtype)
                                          for n in self.names])
        self.grad = torch.zeros_like(self.flat)
        self.params: dict[str, torch.Tensor] = {}
        off = 0
        for name, shape, size in zip(self.names, shapes, sizes):
            view = self.flat[:, off:off + size].view(S, *shape)
            view.requires_grad_(True)
            view.grad = self.grad[:, off:off + size].view(S, *shape)
            self.params[name] = view
            off += size
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)
        self.steps = torch.zeros(S, dtype=torch.int64)  # optimiser steps taken, per seed
        self._step_t = [torch.zeros((), dtype=torch.float32, device=device) for _ in range(S)]
        self._seed_index = torch.arange(S, device=device)

    # ----------------------------------------------------------------------- weights

    def parameters_of(self, s: int) -> dict[str, torch.Tensor]:
        """Seed ``s``'s parameters (views of the stack, no copy)."""
        return {n: p[s] for n, p in self.params.items()}

    def unstack(self, s: int) -> dict[str, torch.Tensor]:
        """Seed ``s``'s weights as an ordinary :class:`Transformer` state dict (copies)."""
        sd = {k: v.detach().clone() for k, v in self.template.state_dict().items()}
        for n, p in self.params.items():
            sd[n] = p[s].detach().clone()
        return sd

    def load_seed(self, s: int, state: dict[str, torch.Tensor]) -> None:
        """Put a :class:`Transformer` state dict's parameters into seed ``s``'s slice."""
        with torch.no_grad():
            for n, p in self.params.items():
                p[s].copy_(state[n])

    def single_model(self, s: int) -> nn.Module:
        """Seed ``s`` as an ordinary :class:`Transformer` (a new module with copied weights)."""
        m = model_for(self.configs[s]).to(device=self.flat.device, dtype=self.flat.dtype)
        m.load_state_dict(self.unstack(s))
        return m

    def zero_grad(self) -> None:
        self.grad.zero_()  # the parameters' .grad are views of it: autograd accumulates in place

    # ----------------------------------------------------------------------- forward

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (S, B, T) -> logits (S, B, C): seed s's model on its batch ``tokens[s]``."""
        t = self.template
        cfg = t.cfg
        if tokens.dim() != 3 or tokens.shape[0] != self.n_seeds:
            raise PosencError(f"tokens must be (seeds={self.n_seeds}, batch, seq); got "
                              f"{tuple(tokens.shape)}")
        S, B, T = tokens.shape
        keep = (tokens != PAD) if cfg.mask_padding else None
        if keep is not None:  # trailing columns that are padding everywhere: masked, dropped
            real = keep.reshape(S * B, T).any(dim=0).nonzero()
            T = int(real[-1]) + 1 if len(real) else T
            tokens, keep = tokens[..., :T], keep[..., :T]
        dtype = self.flat.dtype
        E = self.params["embed.weight"]  # (S, V, D)
        V, D = E.shape[1], E.shape[2]
        flat_tok = (tokens + (self._seed_index * V)[:, None, None]).reshape(S, B * T)
        x = F.embedding(flat_tok, E.reshape(S * V, D))  # (S, B*T, D)
        if t.pos_embed is not None:
            pe = self._pe(t.pos_embed, "pos_embed.", T, 0, dtype)  # (S or 1, T, D)
            x = (x.view(S, B, T, D) + pe[:, None]).view(S, B * T, D)
        x0 = x
        mask = self._mask(keep, cfg.causal, S, B, T, dtype)
        h = x0
        for l, block in enumerate(t.blocks):
            h = self._block(block, f"blocks.{l}.", h, x0, mask, S, B, T)
        h = self._module(t.ln_f, "ln_f.", h)
        h = h.view(S, B, T, D)
        if keep is None:
            pooled = h.mean(dim=2)
        else:
            w = keep.to(h.dtype)[..., None]  # (S, B, T, 1)
            pooled = (h * w).sum(dim=2) / w.sum(dim=2).clamp(min=1)
        return self._linear("classifier.", pooled)  # (S, B, C)

    def _mask(self, keep: Optional[torch.Tensor], causal: bool, S: int, B: int, T: int,
              dtype: torch.dtype) -> Optional[torch.Tensor]:
        """The additive padding / causal mask, broadcastable to (S, B, H, T, T), or None."""
        m = None
        if keep is not None and not bool(keep.all()):
            m = torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(
                ~keep, float("-inf"))[:, :, None, None, :]  # (S, B, 1, 1, T)
        if causal:
            tri = torch.zeros(T, T, dtype=dtype, device=self.flat.device).masked_fill(
                torch.ones(T, T, dtype=torch.bool, device=self.flat.device).triu(1), float("-inf"))
            m = tri if m is None else m + tri
        return m

    def _block(self, block: nn.Module, prefix: str, h: torch.Tensor, x0: torch.Tensor,
               mask: Optional[torch.Tensor], S: int, B: int, T: int) -> torch.Tensor:
        a = self._layer_norm(prefix + "ln1.", block.ln1, h)
        if block.kv_from_input:
            kv = self._layer_norm(prefix + "ln1.", block.ln1, x0) if block.kv_norm else x0
        else:
            kv = a
        out = self._attention(block.attn, prefix + "attn.", a, kv, mask, S, B, T)
        h = h + _dropout(block.drop_attn, out)
        m = self._module(block.mlp, prefix + "mlp.", self._layer_norm(prefix + "ln2.", block.ln2, h))
        return h + _dropout(block.drop, m)

    def _attention(self, attn: nn.Module, prefix: str, x: torch.Tensor, kv: torch.Tensor,
                   mask: Optional[torch.Tensor], S: int, B: int, T: int) -> torch.Tensor:
        """x, kv (S, B*T, D) -> the attention sub-layer's output (S, B*T, D)."""
        H, dh, D = attn.n_heads, attn.head_dim, attn.d_model

        def heads(t: torch.Tensor) -> torch.Tensor:  # (S, B*T, H*d) -> (S*B, H, T, d)
            return t.reshape(S * B, T, H, -1).transpose(1, 2)

        if hasattr(attn, "qkv"):  # plain attention
            W = self.params[prefix + "qkv.weight"]
            b = self.params.get(prefix + "qkv.bias")
            if kv is x:
                q, k, v = _bmm_linear(x, W, b).split(D, dim=-1)
            else:
                q = _bmm_linear(x, W[:, :D], None if b is None else b[:, :D])
                k, v = _bmm_linear(kv, W[:, D:], None if b is None else b[:, D:]).split(D, dim=-1)
            q, k, v = heads(q), heads(k), heads(v)
            if attn.rotary is not None:
                _check_param_free(attn.rotary, prefix + "rotary")
                q, k = attn.rotary.rotate_qk(q, k, 0)
        else:  # MLA (posenc.empirical.model.mla), the same computation over the seed axis
            r = attn.rope_dim
            c_q = self._linear(prefix + "q_down.", x)
            c_kv = self._linear(prefix + "kv_down.", kv)
            q_c = heads(self._linear(prefix + "q_up.", c_q))
            q_r = self._linear(prefix + "q_rope.", c_q).reshape(S * B, T, -1, r).transpose(1, 2)
            k_c = heads(self._linear(prefix + "k_up.", c_kv))
            k_r = self._linear(prefix + "k_rope.", kv).reshape(S * B, T, -1, r).transpose(1, 2)
            v = heads(self._linear(prefix + "v_up.", c_kv))
            q_r, k_r = q_r.expand(S * B, H, T, r), k_r.expand(S * B, H, T, r)
            _check_param_free(attn.rotary, prefix + "rotary")
            q = torch.cat([q_c, attn.rotary(q_r, 0)], dim=-1)
            k = torch.cat([k_c, attn.rotary(k_r, 0)], dim=-1)
        bias = None
        if attn.bias is not None:
            bias = self._pe(attn.bias, prefix + "bias.", T, 0, q.dtype)  # (S or 1, H or 1, T, T)
        z = _attend(q, k, v, mask, bias, attn.dropout if self.training else 0.0, S, B)
        z = z.transpose(1, 2).reshape(S, B * T, H * dh)
        return self._linear(prefix + "out.", z)

    def _pe(self, module: nn.Module, prefix: str, *args) -> torch.Tensor:
        """A PE module's output with a leading seed axis: (1, ...) for a parameter-free module (the
        same for every seed), else (S, ...) -- each seed's module by ``functional_call``."""
        if _param_free(module):
            return module(*args)[None]
        names = [n for n, _ in module.named_parameters()]
        return torch.stack([torch.func.functional_call(
            module, {n: self.params[prefix + n][s] for n in names}, args)
            for s in range(self.n_seeds)])

    def _module(self, module: nn.Module, prefix: str, x: torch.Tensor) -> torch.Tensor:
        """A token-wise module (Linear, LayerNorm, a Sequential of them and parameter-free ones)
        on (S, N, D) with each seed's parameters."""
        if isinstance(module, nn.Linear):
            return self._linear(prefix, x)
        if isinstance(module, nn.LayerNorm):
            return self._layer_norm(prefix, module, x)
        if isinstance(module, nn.Sequential):
            for i, m in enumerate(module):
                x = self._module(m, f"{prefix}{i}.", x)
            return x
        _check_param_free(module, prefix)
        return module(x)  # activation, Dropout (by its own training flag), Identity

    def _linear(self, prefix: str, x: torch.Tensor) -> torch.Tensor:
        return _bmm_linear(x, self.params[prefix + "weight"], self.params.get(prefix + "bias"))

    def _layer_norm(self, prefix: str, module: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        y = F.layer_norm(x, module.normalized_shape, None, None, module.eps)
        w, b = self.params.get(prefix + "weight"), self.params.get(prefix + "bias")
        if w is not None:
            y = y * w[:, None]
        return y if b is None else y + b[:, None]

    def train(self, mode: bool = True) -> "SeedGroup":
        super().train(mode)
        self.template.train(mode)
        return self

    # ----------------------------------------------------------------------- a training step

    def loss(self, tokens: torch.Tensor, labels: torch.Tensor,
             weight: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-seed mean cross-entropy (S,) over the examples with weight 1 (``weight`` (S, B) of
        0 / 1, None: all), and the logits (S, B, C)."""
        logits = self(tokens)
        if logits.dtype not in (torch.float32, torch.float64):
            logits = logits.float()  # a bfloat16 forward: the loss in float32, as train.py
        S, B, C = logits.shape
        ce = F.cross_entropy(logits.reshape(S * B, C), labels.reshape(S * B), reduction="none")
        ce = ce.view(S, B)
        if weight is None:
            return ce.mean(dim=1), logits
        return (ce * weight).sum(dim=1) / weight.sum(dim=1).clamp(min=1), logits

    def backward(self, losses: torch.Tensor) -> None:
        """Gradients of every seed's own loss into :attr:`grad` (seeds are independent, so the sum's
        gradient in row s is seed s's)."""
        self.zero_grad()
        with warnings.catch_warnings():  # the parameter views are strided (rows of the stack)
            warnings.filterwarnings("ignore", message=".*gradient layout contract.*")
            losses.sum().backward()

    def train_step(self, tokens: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor,
                   lrs: Sequence[float], active: Sequence[bool], config: TrainConfig,
                   clip: Optional[Callable[[torch.Tensor, float], torch.Tensor]] = None
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One optimiser step of every active seed on its batch: forward (under the config's
        precision), backward, clipping by each seed's own norm (``clip``, default
        :func:`clip_per_seed`), AdamW.  Returns the losses (S,), logits (S, B, C) and the gradient
        norms before clipping (S,)."""
        from .train import autocast
        clip = clip_per_seed if clip is None else clip
        with autocast(config.precision, self.flat.device):
            losses, logits = self.loss(tokens, labels, weight)
        # a seed whose loss is not finite is not stepped (train.py stops before the update);
        # the seeds' rows are independent, so its NaN gradient reaches no other seed
        finite = torch.isfinite(losses.detach()).tolist()
        self.backward(losses)
        if config.grad_clip is not None:
            norms = clip(self.grad, config.grad_clip)
        else:
            norms = torch.linalg.vector_norm(self.grad, dim=1)
        self.adamw_step(lrs, [a and f for a, f in zip(active, finite)], config.betas,
                        config.weight_decay)
        return losses.detach(), logits.detach(), norms

    @torch.no_grad()
    def adamw_step(self, lrs: Sequence[float], active: Sequence[bool], betas: tuple[float, float],
                   weight_decay: float, eps: float = 1e-8) -> None:
        """AdamW on the active seeds' rows (each with its own lr and step count; torch's AdamW
        update); an inactive (stopped) seed's parameters and state are left exactly as they are."""
        beta1, beta2 = betas
        for s in range(self.n_seeds):
            if not active[s]:
                continue
            self.steps[s] += 1
            p, g, m, v = self.flat[s], self.grad[s], self.exp_avg[s], self.exp_avg_sq[s]
            if hasattr(torch, "_fused_adamw_") and p.device.type in ("cpu", "cuda"):
                step = self._step_t[s]
                step.fill_(float(self.steps[s]))
                torch._fused_adamw_([p], [g], [m], [v], [], [step], amsgrad=False, lr=float(lrs[s]),
                                    beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps,
                                    maximize=False, grad_scale=None, found_inf=None)
            else:  # torch's single-tensor AdamW formula
                n = int(self.steps[s])
                p.mul_(1 - lrs[s] * weight_decay)
                m.lerp_(g, 1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                denom = (v.sqrt() / math.sqrt(1 - beta2 ** n)).add_(eps)
                p.addcdiv_(m, denom, value=-lrs[s] / (1 - beta1 ** n))

    # ----------------------------------------------------------------------- evaluation

    @torch.inference_mode()
    def evaluate(self, datas: Sequence[TaskData], batch_size: int = 512,
                 precision: str = "float32") -> list[tuple[float, float]]:
        """(mean cross-entropy, accuracy) of each seed on its own data set (train.evaluate's)."""
        from .train import autocast
        was = self.training
        self.train(False)
        device = self.flat.device
        S = self.n_seeds
        loss_sum, correct = [0.0] * S, [0] * S
        longest = max(len(d) for d in datas)
        for start in range(0, longest, batch_size):
            tok, lab, w = stack_batches([d.tokens for d in datas], [d.labels for d in datas],
                                         [torch.arange(start, min(start + batch_size, len(d)))
                                          for d in datas], device)
            with autocast(precision, device):
                logits = self(tok).float()
            ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1),
                                 reduction="none").view(w.shape) * w
            hits = ((logits.argmax(-1) == lab).to(w.dtype) * w).sum(dim=1)
            for s in range(S):
                loss_sum[s] += float(ce[s].sum())
                correct[s] += int(hits[s])
        self.train(was)
        return [(loss_sum[s] / len(datas[s]), correct[s] / len(datas[s])) for s in range(S)]


def stack_batches(tokens: Sequence[torch.Tensor], labels: Sequence[torch.Tensor],
                   index: Sequence[torch.Tensor], device: torch.device
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seed s's rows ``index[s]`` of its data as (S, B, T) tokens, (S, B) labels and (S, B) weights
    (1 real, 0 filler): a seed with fewer rows (a short last batch, a stopped seed: none) is filled
    up with copies of a row of its data set (real tokens, so no all-padding row; weight 0)."""
    B = max(1, max(len(i) for i in index))
    T = max(t.shape[1] for t in tokens)
    tok, lab, w = [], [], []
    for t, y, i in zip(tokens, labels, index):
        fill = B - len(i)
        full = torch.cat([i, i.new_zeros(fill)]) if fill else i
        rows = t[full]
        if rows.shape[1] < T:
            rows = F.pad(rows, (0, T - rows.shape[1]), value=PAD)
        tok.append(rows)
        lab.append(y[full])
        w.append(torch.cat([torch.ones(len(i)), torch.zeros(fill)]))
    return (torch.stack(tok).to(device), torch.stack(lab).to(device), torch.stack(w).to(device))


def _bmm_linear(x: torch.Tensor, W: torch.Tensor, b: Optional[torch.Tensor]) -> torch.Tensor:
    """x (S, N, in), W (S, out, in), b (S, out) or None -> (S, N, out): one batched GEMM."""
    if b is None:
        return torch.bmm(x, W.transpose(1, 2))
    return torch.baddbmm(b[:, None, :], x, W.transpose(1, 2))


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor],
            bias: Optional[torch.Tensor], dropout: float, S: int, B: int) -> torch.Tensor:
    """softmax(q k^T / sqrt(d_qk) + B + M) v over all seeds' examples (S*B, H, T, d): the PE bias
    (S or 1, H or 1, T, T) and the mask (S, B, 1, 1, T) and / or (T, T) broadcast per seed."""
    SB, H, T, d = q.shape
    add = None
    if bias is not None:
        add = bias[:, None]  # (S or 1, 1, H or 1, T, T)
    if mask is not None:
        add = mask if add is None else add + mask
    if q.device.type != "cpu":  # SDPA's fused kernels on a GPU
        m = None
        if add is not None:
            while add.dim() < 5:
                add = add[None]
            m = add.expand(S, B, add.shape[2], T, T).reshape(SB, add.shape[2], T, T)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=dropout)
    scores = torch.matmul(q, k.transpose(-1, -2)).mul_(d ** -0.5)  # (S*B, H, T, T)
    if add is not None:
        scores = (scores.view(S, B, H, T, T) + add).view(SB, H, T, T)
    pattern = scores.softmax(dim=-1)
    if dropout:
        pattern = F.dropout(pattern, dropout)
    return torch.matmul(pattern, v)


def _quiet_model(group: "SeedGroup", s: int) -> nn.Module:
    """Seed ``s`` as a single model, built without drawing from torch's RNG (building a model
    initialises it; the group's dropout masks come from that RNG, so recording the trace must not
    change them)."""
    with torch.random.fork_rng(devices=[]):
        return group.single_model(s)


def _dropout(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return module(x)  # nn.Dropout: its own p and training flag


def _param_free(module: nn.Module) -> bool:
    return next(module.parameters(), None) is None


def _check_param_free(module: nn.Module, where: str) -> None:
    if not _param_free(module):
        raise PosencError(f"the seed-group forward has no rule for {where} "
                          f"({type(module).__name__} with parameters)")



# --------------------------------------------------------------------------- the training loop

@dataclass
class GroupRun:
    """One seed's outcome of :func:`train_group`: what ``train.py`` would have written for it."""

    config: TrainConfig
    metrics: list[dict[str, Any]]  # one entry per epoch trained, train.py's keys
    state_dict: dict[str, torch.Tensor]  # the final model (the best-validation one with patience)
    n_params: int
    early_stopping: Optional[dict[str, Any]] = None  # train.py's summary; None when off
    n_train: int = 0
    n_test: int = 0
    norms: list[float] = field(default_factory=list)  # the gradient norm before clipping, per step
    diverged: Optional[dict[str, Any]] = None  # train.py's {step, epoch, kept_finite}; None if not
    #: the seed's AdamW state at the end: its rows of the group's moments (P,) in the order of
    #: ``named_parameters``, its step count and last learning rate
    optimizer: dict[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> dict[str, Any]:
        if self.early_stopping is not None:
            return self.metrics[self.early_stopping["best_epoch"] - 1]
        return self.metrics[-1]


def train_group(configs: Sequence[TrainConfig], *, device: torch.device | str | None = None,
                dtype: torch.dtype = torch.float32,
                clip: Optional[Callable[[torch.Tensor, float], torch.Tensor]] = None,
                on_step: Optional[Callable[[int, torch.Tensor], None]] = None,
                record_norms: bool = False,
                trace_dirs: Optional[Sequence[str | Path]] = None) -> list[GroupRun]:
    """Train the seeds of one configuration as one :class:`SeedGroup` (module doc) and return one
    :class:`GroupRun` per config, in order.

    Per seed it is the loop of :func:`posenc.empirical.training.train.train` (data, validation carve, epoch
    order, lr schedule, clipping, metrics, early stopping with the best weights kept); a seed whose
    epoch has fewer batches than another's sits out the extra steps (weight-0 filler rows, no
    optimiser step), and a stopped seed sits out every step.  ``device``: None reads the configs'
    ``device``.  ``clip``: the clipping function (default :func:`clip_per_seed`).  ``on_step(step,
    losses (S,))`` after every group step.  ``num_threads`` of the configs is not applied here (the
    caller sets torch's threads).  ``trace_dirs``: one run folder per config, into which each
    seed's training trace (:mod:`.trace`: train.py's ``trace.jsonl``, the same records) is
    written; None: no trace, nothing written."""
    from .train import (_divergence, _early_stopping_summary, best_index, lr_factor,
                        resolve_device, stop_now)
    from .trace import TraceRecorder

    from ...limits import check_memory
    from ..config import memory_estimate

    configs = list(configs)
    clip = clip_per_seed if clip is None else clip  # looked up now: a test can replace it
    cfg0 = configs[0]
    dev = resolve_device(cfg0.device) if device is None else torch.device(device)
    S = len(configs)
    # train.py's guard, for S data sets, parameter sets and batches' attention maps at once
    check_memory(S * memory_estimate(cfg0), f"a seed group of {S} runs of {cfg0.model.pe} on "
                 f"{cfg0.task.name}")
    trains, tests, vals = [], [], []
    for c in configs:
        split = dataset_for(c)
        tr, val = split.train, None
        if c.early_stopping:
            data_seed = c.task.data_seed if c.task.data_seed is not None else c.seed
            tr, val = carve_validation(tr, c.val_frac, data_seed)
        trains.append(tr)
        tests.append(split.test)
        vals.append(val)
    group = SeedGroup(configs, device=dev, dtype=dtype)
    bs = cfg0.batch_size
    ns = [len(d) for d in trains]
    spe = [math.ceil(n / bs) for n in ns]
    totals = [k * cfg0.epochs for k in spe]
    warmups = [int(round(cfg0.warmup_frac * t)) for t in totals]
    metrics: list[list[dict[str, Any]]] = [[] for _ in range(S)]
    best: list[Optional[dict[str, torch.Tensor]]] = [None] * S
    norms_log: list[list[float]] = [[] for _ in range(S)]
    lrs = [0.0] * S
    step_counter = 0
    diverged_at: list[Optional[int]] = [None] * S  # the step whose loss was not finite
    traces: list[Any] = []
    if trace_dirs is not None:
        if len(trace_dirs) != S:
            raise PosencError(f"one trace folder per config: {len(trace_dirs)} for {S}")
        for s, (c, folder) in enumerate(zip(configs, trace_dirs)):
            traces.append(TraceRecorder(Path(folder), c.run_id(), spe[s],
                                        int(trains[s].tokens.shape[1])))
            traces[s].start(_quiet_model(group, s), 0)
    for epoch in range(cfg0.epochs):
        running = [diverged_at[s] is None and
                   not (vals[s] is not None and stop_now(cfg0, metrics[s])) for s in range(S)]
        if not any(running):
            break
        group.train()
        orders = [epoch_order(c.seed, epoch, n) for c, n in zip(configs, ns)]
        loss_sum, correct = [0.0] * S, [0] * S
        for b in range(max(spe)):
            active = [running[s] and diverged_at[s] is None and b < spe[s] for s in range(S)]
            index = [orders[s][b * bs:(b + 1) * bs] if active[s] else orders[s][:0] for s in range(S)]
            for s in range(S):
                if active[s]:
                    lrs[s] = cfg0.lr * lr_factor(epoch * spe[s] + b, totals[s], warmups[s])
            tok, lab, w = stack_batches([d.tokens for d in trains], [d.labels for d in trains],
                                         index, dev)
            det, logits, norms = group.train_step(tok, lab, w, lrs, active, cfg0, clip)
            hits = ((logits.argmax(-1) == lab).to(w.dtype) * w).sum(dim=1)
            for s in range(S):
                if active[s] and not math.isfinite(float(det[s])):  # train.py: stop, no update
                    diverged_at[s] = epoch * spe[s] + b
                elif active[s]:
                    loss_sum[s] += float(det[s]) * len(index[s])
                    correct[s] += int(hits[s])
                    if record_norms:
                        norms_log[s].append(float(norms[s]))
                    if traces:  # train.py's trace.step: loss, norm before clipping, batch accuracy
                        traces[s].step(det[s], norms[s], int(hits[s]) / len(index[s]))
            if on_step is not None:
                on_step(step_counter, det)
            step_counter += 1
        # as in train.py: the test split every epoch without early stopping, else once, for
        # the kept weights (below)
        test_res = group.evaluate(tests, cfg0.eval_batch_size, cfg0.precision) \
            if vals[0] is None else None
        val_res = (group.evaluate([v for v in vals], cfg0.eval_batch_size, cfg0.precision)
                   if vals[0] is not None else None)
        for s in range(S):
            if not running[s]:
                continue
            m = {"epoch": epoch + 1, "step": (epoch + 1) * spe[s], "lr": lrs[s],
                 "train_loss": loss_sum[s] / ns[s], "train_acc": correct[s] / ns[s]}
            if diverged_at[s] is not None and (epoch + 1) * spe[s] > diverged_at[s]:
                # this epoch diverged: its sums are partial (train.py's record)
                m.update(step=diverged_at[s], train_loss=math.nan, train_acc=math.nan,
                         diverged_step=diverged_at[s])
            if test_res is not None:
                m.update(test_loss=test_res[s][0], test_acc=test_res[s][1])
            if val_res is not None:
                m.update(val_loss=val_res[s][0], val_acc=val_res[s][1])
            metrics[s].append(m)
            if val_res is not None and best_index([x["val_acc"] for x in metrics[s]]) == len(metrics[s]) - 1:
                best[s] = group.unstack(s)
            if traces:
                traces[s].end_epoch(epoch + 1, _quiet_model(group, s))
    stops: list[Optional[dict[str, Any]]] = [None] * S
    if vals[0] is not None:  # every seed's kept weights, then one test pass over all seeds
        for s, c in enumerate(configs):
            stops[s] = _early_stopping_summary(c, metrics[s], len(vals[s]))
            group.load_seed(s, best[s])
        for s, (loss, acc) in enumerate(group.evaluate(tests, cfg0.eval_batch_size,
                                                       cfg0.precision)):
            metrics[s][stops[s]["best_epoch"] - 1].update(test_loss=loss, test_acc=acc)
    out = []
    for s, c in enumerate(configs):
        stop = stops[s]
        state = group.unstack(s) if stop is None else best[s]
        run = GroupRun(c, metrics[s], state, group.n_params, stop, ns[s], len(tests[s]),
                       norms_log[s])
        run.optimizer = {"exp_avg": group.exp_avg[s].detach().clone(),
                         "exp_avg_sq": group.exp_avg_sq[s].detach().clone(),
                         "steps": int(group.steps[s]), "lr": lrs[s]}
        # train.py's summary record, from the kept weights' parameters
        run.diverged = _divergence(metrics[s], run.final, (state[n] for n in group.names))
        out.append(run)
    return out
