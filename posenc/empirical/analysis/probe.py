"""How much absolute position the residual stream carries, layer by layer.

Used for the paper's Absolute+RoPE observation (Gu et al., arXiv 2505.13027):
do the additive positional directions of an absolute embedding survive past
the first layers?  Two measures per residual-stream site (the input embedding,
then the output of each block):

* **probe R^2** -- a ridge-regression linear probe predicting the token's
  position i from its residual vector, fitted on the first half of the
  examples and scored (coefficient of determination) on the second half;
  only real (non-padding) tokens count.  1 = position is linearly decodable,
  0 = no better than predicting the mean position.
* **positional energy** -- the share of residual variance explained by
  position alone: with mu_i the mean residual at position i over examples and
  mu the overall mean, ``sum_i n_i |mu_i - mu|^2 / sum_{b,i} |h_bi - mu|^2``.

* **PE-span share** (models with an absolute PE table) -- which *directions* carry position,
  not whether it is decodable: with M the position-mean residuals centred over positions (as
  above, weighted by the tokens per position) and V_k the top-k right singular vectors of the
  absolute PE table over the same positions, centred the same way, k the fewest that hold 90%
  of the table's centred energy, the share ``sum_i n_i |V_k V_k^T (mu_i - mu)|^2 /
  sum_i n_i |mu_i - mu|^2`` of the residual's positional energy that lies in the span of the
  table's additive directions (chance for a random direction: k / d_model).  A linear probe
  cannot see this: the residual stream carries x0 forward, so position stays decodable whether
  or not the additive directions are displaced.

Sites are named ``embed`` and ``block{l}`` (output of block l).
"""

from __future__ import annotations

from typing import Any

import torch

from ..model.transformer import Transformer
from ..tasks import PAD, TaskData


@torch.inference_mode()
def residual_sites(model: Transformer, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """Residual stream (B, T, D) at the embedding and after every block."""
    L = len(model.blocks)
    names = {"blocks.0.hook_resid_pre"} | {f"blocks.{l}.hook_resid_post" for l in range(L)}
    _, cache = model.run_with_cache(tokens, names_filter=lambda n: n in names)
    out = {"embed": cache["blocks.0.hook_resid_pre"]}  # token embedding + absolute PE
    for l in range(L):
        out[f"block{l}"] = cache[f"blocks.{l}.hook_resid_post"]
    return out


def ridge_r2(x_fit: torch.Tensor, y_fit: torch.Tensor, x_test: torch.Tensor, y_test: torch.Tensor,
             alpha: float = 1e-3) -> float:
    """Held-out R^2 of ridge regression y ~ x (with intercept).  x: (N, D), y: (N,).

    ``alpha`` is relative to the mean eigenvalue of the centred Gram matrix, so
    the penalty is scale-free; float64 throughout.
    """
    x_fit, x_test = x_fit.double(), x_test.double()
    y_fit, y_test = y_fit.double(), y_test.double()
    mx, my = x_fit.mean(0), y_fit.mean()
    xc = x_fit - mx
    gram = xc.T @ xc  # (D, D)
    lam = alpha * float(torch.trace(gram)) / gram.shape[0] + 1e-12
    eye = torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
    w = torch.linalg.solve(gram + lam * eye, xc.T @ (y_fit - my))
    pred = (x_test - mx) @ w + my
    ss_res = float(((y_test - pred) ** 2).sum())
    ss_tot = float(((y_test - y_test.mean()) ** 2).sum())
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else 0.0


def positional_energy(h: torch.Tensor, valid: torch.Tensor) -> float:
    """Share of residual variance explained by position.  h: (B, T, D), valid: (B, T) bool."""
    h = h.double()
    w = valid.double()[:, :, None]  # (B, T, 1)
    n_i = w.sum(0)  # (T, 1) tokens per position
    mu = (h * w).sum((0, 1)) / w.sum()  # (D,)
    mu_i = (h * w).sum(0) / n_i.clamp(min=1)  # (T, D)
    between = float((n_i * (mu_i - mu) ** 2).sum())
    total = float((((h - mu) ** 2) * w).sum())
    return between / total if total > 0 else 0.0


def _position_means(h: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(n_i (T,), position means centred by the token-weighted grand mean (T, D)), float64."""
    w = valid.double()[:, :, None]  # (B, T, 1)
    n_i = w.sum(0)[:, 0]  # (T,)
    mu_i = (h.double() * w).sum(0) / n_i.clamp(min=1)[:, None]
    mu = (mu_i * n_i[:, None]).sum(0) / n_i.sum().clamp(min=1)
    return n_i, (mu_i - mu) * (n_i > 0).double()[:, None]


def table_basis(table: torch.Tensor, n_i: torch.Tensor,
                energy: float = 0.9) -> torch.Tensor:
    """(D, k) orthonormal top-k right singular vectors of the PE table (T, D), rows weighted by
    sqrt(n_i) and centred by the n_i-weighted mean; k the fewest holding ``energy`` of it."""
    t = table.detach().double()  # a learned table is a parameter: no graph through the SVD
    n = n_i.double()
    t = t - (t * n[:, None]).sum(0) / n.sum().clamp(min=1)
    _, s, vh = torch.linalg.svd(t * n.sqrt()[:, None], full_matrices=False)
    e = s ** 2
    k = int((torch.cumsum(e, 0) < energy * e.sum() - 1e-12 * e.sum()).sum()) + 1
    return vh[:k].T


def span_share(h: torch.Tensor, valid: torch.Tensor, basis: torch.Tensor) -> float:
    """Share of the positional energy of h (B, T, D) in the span of ``basis`` (D, k)."""
    n_i, m = _position_means(h, valid)
    total = float((n_i[:, None] * m ** 2).sum())
    inside = float((n_i[:, None] * (m @ basis.double()) ** 2).sum())
    return inside / total if total > 0 else 0.0


def position_probe(model: Transformer, data: TaskData, max_examples: int = 1000) -> dict[str, Any]:
    """Probe R^2 and positional energy at every site, on up to ``max_examples`` examples."""
    model.eval()
    tokens = data.tokens[:max_examples].to(next(model.parameters()).device)
    valid = tokens != PAD  # (B, T)
    B, T = tokens.shape
    positions = torch.arange(T, device=tokens.device).expand(B, T)
    half = B // 2
    sites = residual_sites(model, tokens)
    r2, energy = {}, {}
    for name, h in sites.items():
        fit_mask, test_mask = valid[:half], valid[half:]
        r2[name] = ridge_r2(h[:half][fit_mask], positions[:half][fit_mask],
                            h[half:][test_mask], positions[half:][test_mask])
        energy[name] = positional_energy(h, valid)
    out = {"sites": list(sites), "probe_r2": r2, "positional_energy": energy, "n_examples": B}
    if model.pos_embed is not None:
        T2 = sites["embed"].shape[1]
        v2 = valid[:, :T2]
        with torch.inference_mode():
            table = model.pos_embed(T2, 0, torch.float32)  # (T, D)
        basis = table_basis(table, v2.double().sum(0))
        out["pe_span_share"] = {name: span_share(h, valid[:, :h.shape[1]], basis)
                                for name, h in sites.items()}
        out["pe_span_k"] = int(basis.shape[1])
        out["pe_span_chance"] = basis.shape[1] / table.shape[1]
    return out
