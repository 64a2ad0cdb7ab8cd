"""A block's MLP sub-layer ``h + W2 act(W1 LN(h) + b1) + b2`` as one autograd function with a
hand-written backward.

Op by op, autograd records five nodes for it (LayerNorm, two ``addmm``, the activation, the
residual add) and walks them in the backward; here the same ATen kernels run (``native_layer_norm``,
``addmm``, ``gelu`` / ``relu`` and their backward kernels), without the nodes, the modules' Python
calls and the transposed views between them.  It computes what the modules compute (tests compare
both, and ``torch.autograd.gradcheck`` the backward in float64).  The fast path uses it in a
packed forward (:mod:`.packed`: no hook can be attached) when the sub-layer has no active dropout
(:func:`supports`).
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch.autograd.function import once_differentiable
from torch import nn


def mlp_forward(h, g, beta, w1, b1, w2, b2, eps: float, gelu: bool) -> tuple[torch.Tensor, tuple]:
    """``h + W2 act(W1 LN(h) + b1) + b2`` (``gelu`` False: ReLU); returns it and what
    :func:`mlp_backward` needs."""
    x, mean, rstd = torch.native_layer_norm(h, (h.shape[-1],), g, beta, eps)
    a = torch.addmm(b1, x, w1.t())  # (N, F)
    u = torch.nn.functional.gelu(a) if gelu else torch.relu(a)
    y = torch.addmm(b2, u, w2.t()).add_(h)
    return y, (h, g, beta, mean, rstd, x, a, u, w1, w2)


def mlp_backward(saved: Sequence, dy: torch.Tensor, gelu: bool) -> tuple:
    """The gradients of :func:`mlp_forward`'s tensor inputs ``(h, g, beta, W1, b1, W2, b2)``."""
    h, g, beta, mean, rstd, x, a, u, w1, w2 = saved
    dw2, db2 = dy.t().mm(u), dy.sum(0)
    du = dy.mm(w2)
    da = (torch.ops.aten.gelu_backward(du, a) if gelu
          else torch.ops.aten.threshold_backward(du, u, 0))
    dw1, db1 = da.t().mm(x), da.sum(0)
    dh, dg, dbeta = torch.ops.aten.native_layer_norm_backward(
        da.mm(w1), h, (h.shape[-1],), mean, rstd, g, beta, [True, True, True])
    return dh.add_(dy), dg, dbeta, dw1, db1, dw2, db2


class MLPSublayer(torch.autograd.Function):
    """``apply(h (N, D), ln weight, ln bias, W1 (F, D), b1, W2 (D, F), b2, eps, gelu) -> (N, D)``
    with ``gelu`` False: ReLU."""

    @staticmethod
    def forward(ctx, h, g, beta, w1, b1, w2, b2, eps: float, gelu: bool):
        y, saved = mlp_forward(h, g, beta, w1, b1, w2, b2, eps, gelu)
        ctx.save_for_backward(*saved)
        ctx.gelu = gelu
        return y

    @staticmethod
    @once_differentiable  # the backward is hand-written: no second derivative
    def backward(ctx, dy):
        return (*mlp_backward(ctx.saved_tensors, dy, ctx.gelu), None, None)


def supports(ln: nn.Module, mlp: nn.Sequential, dropout_active: bool, dtype: torch.dtype) -> bool:
    """Whether :class:`MLPSublayer` computes ``mlp(ln(h))``: a LayerNorm with affine weights, then
    Linear, exact GELU or ReLU, (a dropout that is off,) Linear, all with biases; no active
    dropout after it; float32 / float64."""
    mods = [m for m in mlp if not isinstance(m, nn.Dropout)]
    if dropout_active or any(isinstance(m, nn.Dropout) and m.p and m.training for m in mlp):
        return False
    return (dtype in (torch.float32, torch.float64) and isinstance(ln, nn.LayerNorm)
            and ln.elementwise_affine and ln.bias is not None
            and len(mods) == 3 and isinstance(mods[0], nn.Linear) and isinstance(mods[2], nn.Linear)
            and mods[0].bias is not None and mods[2].bias is not None
            and (isinstance(mods[1], nn.ReLU)
                 or (isinstance(mods[1], nn.GELU) and mods[1].approximate == "none")))


def mlp_args(ln: nn.LayerNorm, mlp: nn.Sequential) -> tuple:
    """:class:`MLPSublayer`'s arguments after ``h`` (see :func:`supports` for the modules)."""
    first, act, last = [m for m in mlp if not isinstance(m, nn.Dropout)]
    return (ln.weight, ln.bias, first.weight, first.bias, last.weight, last.bias, ln.eps,
            isinstance(act, nn.GELU))


def mlp_sublayer(h: torch.Tensor, ln: nn.LayerNorm, mlp: nn.Sequential) -> torch.Tensor:
    """``h + mlp(ln(h))`` for (N, D) ``h`` (see :func:`supports` for the modules it takes)."""
    return MLPSublayer.apply(h, *mlp_args(ln, mlp))
