"""RoPE's own logit with its own content in every rotary plane, against NoPE's from the same content.

The Schur "contraction" ``||A o K||_2 <= ||A||_2`` of :func:`.contraction.couple` is about the
plane-averaged kernel K = w_0 + sum_m w_m cos(theta_m (i-j)) applied to ONE content matrix A
shared by every plane.  RoPE's logit gives each plane m its own content block:

    L_RoPE = sum_m w_m Re(u_m v_m^* o E_m) + w_0 C_0,   E_m = [e^{i theta_m (i-j)}],
    L_NoPE = sum_m w_m Re(u_m v_m^*)       + w_0 C_0    (the same content, no rotation),

u_m, v_m in C^n the plane's query and key coordinates (two real dims each), C_0 the
position-free dims.  This module measures ||L_RoPE||_2 / ||L_NoPE||_2 for seeded random content.

Content (:func:`plane_factors`): u_m(p) = sqrt(w_m / 2) (a + i b), a, b i.i.d. N(0, 1); the
position-free part (w_0 > 0: RoPE with rotary fraction < 1) has c_0 = round(2 w_0 / mean w_m)
real columns, i.i.d. N(0, w_0 / c_0) -- for RoPE exactly x_i ~ N(0, I_d / d), so E L_NoPE_ii = 1
like the seeded Gram's E A_ii = 1.  Queries equal keys (v = u, both logits PSD, as A = X X^T is)
unless ``independent``.  Row p of the draw does not depend on n (seeded per block of rows).
For such isotropic content R_p x_p has the law of x_p, so L_RoPE and L_NoPE have the same law:
the ratio is 1 up to the spread of the extreme singular values.

``plane_factors(kern, seed, independent=False) -> (F, G, F0, G0)``  L_RoPE = F G^T, L_NoPE = F0 G0^T
``plane_logit_norms(kern, seed, independent=False) -> (||L_RoPE||_2, ||L_NoPE||_2)``
``per_plane_ratios(kern, seeds=5, independent=False) -> PerPlane``
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PosencError
from ..limits import check_int, check_memory

#: Rows drawn (and rotated) per block: keeps memory O(block x planes), not O(n x planes).
BLOCK = 4096
#: The default number of content seeds (0 .. PLANE_SEEDS - 1) of the per-plane comparison.
PLANE_SEEDS = 5


def _constant_columns(kern: Any) -> int:
    """c_0: the real position-free columns of the content (0 when w_0 = 0)."""
    w0 = float(kern.constant_weight)
    if w0 <= 0:
        return 0
    return max(1, int(round(2 * w0 / float(np.mean(kern.plane_weights)))))


def _check_rotary(kern: Any) -> None:
    if getattr(kern, "kind", None) != "rotary" or kern.frequencies is None:
        raise PosencError(f"the per-plane comparison needs a rotary kernel (RoPE, MLA's RoPE path, "
                          f"custom frequencies); got kind {getattr(kern, 'kind', None)!r}")


def _draw(seed: int, start: int, rows: int, planes: int, c0: int, side: int) -> np.ndarray:
    """Rows start .. start+rows of one side's content: (rows, 2 planes + c0) i.i.d. N(0, 1)."""
    return np.random.default_rng([seed, start, side]).standard_normal((rows, 2 * planes + c0))


def _block(kern: Any, z: np.ndarray, start: int, rotate: bool) -> np.ndarray:
    """Real factor rows [Re u~, Im u~, const] of one block, u~_m(p) = u_m(p) e^{i theta_m p}."""
    planes = kern.frequencies.size
    w = np.asarray(kern.plane_weights, dtype=float)
    u = (z[:, 0:2 * planes:2] + 1j * z[:, 1:2 * planes:2]) * np.sqrt(w / 2)
    if rotate:
        p = np.arange(start, start + z.shape[0], dtype=float)
        u = u * np.exp(1j * np.outer(p, kern.frequencies))
    c0 = z.shape[1] - 2 * planes
    const = z[:, 2 * planes:] * np.sqrt(kern.constant_weight / c0) if c0 else z[:, :0]
    return np.hstack([u.real, u.imag, const])


def plane_factors(kern: Any, seed: int = 0, independent: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(F, G, F0, G0), real (n, 2 planes + c_0): L_RoPE = F G^T and L_NoPE = F0 G0^T (small n)."""
    _check_rotary(kern)
    seed = check_int("content seed", seed, 2**63 - 1, minimum=0)
    n, planes, c0 = kern.n, kern.frequencies.size, _constant_columns(kern)
    out: list[list[np.ndarray]] = [[], [], [], []]
    for start in range(0, n, BLOCK):
        rows = min(BLOCK, n - start)
        zq = _draw(seed, start, rows, planes, c0, 0)
        zk = _draw(seed, start, rows, planes, c0, 1) if independent else zq
        for i, (z, rot) in enumerate(((zq, True), (zk, True), (zq, False), (zk, False))):
            out[i].append(_block(kern, z, start, rot))
    f, g, f0, g0 = (np.vstack(parts) for parts in out)
    return f, g, f0, g0


def _product_norm(gram_f: np.ndarray, gram_g: np.ndarray) -> float:
    """||F G^T||_2 from F^T F and G^T G: F = U_F M_F with M_F = (F^T F)^{1/2}, so the norm is
    ||M_F M_G||_2 (top singular value; relative error ~ eps cond(M) at most, ~eps for the top)."""
    def root(m: np.ndarray) -> np.ndarray:
        ev, vec = np.linalg.eigh((m + m.T) / 2)
        return (vec * np.sqrt(np.clip(ev, 0.0, None))) @ vec.T
    return float(np.linalg.norm(root(gram_f) @ root(gram_g), 2))


def plane_logit_norms(kern: Any, seed: int = 0, independent: bool = False) -> tuple[float, float]:
    """(||L_RoPE||_2, ||L_NoPE||_2) for content ``seed``: O(n planes^2) time, O(BLOCK planes)
    memory -- the Gram matrices of the factors are summed block by block."""
    _check_rotary(kern)
    seed = check_int("content seed", seed, 2**63 - 1, minimum=0)
    n, planes, c0 = kern.n, kern.frequencies.size, _constant_columns(kern)
    width = 2 * planes + c0
    check_memory(8.0 * 6 * BLOCK * width + 32.0 * BLOCK * planes,
                 f"the per-plane content of {planes} planes")
    grams = np.zeros((4, width, width))
    for start in range(0, n, BLOCK):
        rows = min(BLOCK, n - start)
        zq = _draw(seed, start, rows, planes, c0, 0)
        zk = _draw(seed, start, rows, planes, c0, 1) if independent else zq
        for i, (z, rot) in enumerate(((zq, True), (zk, True), (zq, False), (zk, False))):
            b = _block(kern, z, start, rot)
            grams[i] += b.T @ b
    return _product_norm(grams[0], grams[1]), _product_norm(grams[2], grams[3])


@dataclass(frozen=True)
class PerPlane:
    """||L_RoPE||_2 / ||L_NoPE||_2 over content seeds 0 .. len(ratios) - 1."""

    n: int
    ratios: tuple[float, ...]
    independent: bool

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(len(self.ratios)))

    def content(self) -> str:
        qk = "independent q, k" if self.independent else "q = k"
        seeds = f"seed {self.seeds[0]}" if len(self.seeds) == 1 else \
            f"seeds {self.seeds[0]}-{self.seeds[-1]}"
        return f"i.i.d. Gaussian per plane (RoPE: x_i ~ N(0, I_d/d)), {qk}, {seeds}"

    def to_dict(self) -> dict[str, Any]:
        r = np.asarray(self.ratios)
        return {"mean": float(r.mean()), "min": float(r.min()), "max": float(r.max()),
                "seeds": list(self.seeds), "ratios": list(self.ratios),
                "content": self.content()}


def per_plane_ratios(kern: Any, seeds: int = PLANE_SEEDS, independent: bool = False) -> PerPlane:
    """||L_RoPE||_2 / ||L_NoPE||_2 for content seeds 0 .. seeds - 1 (see the module doc)."""
    seeds = check_int("per-plane seeds", seeds, 10_000)
    ratios = []
    for s in range(seeds):
        rope, nope = plane_logit_norms(kern, s, independent)
        ratios.append(rope / nope if nope > 0 else float("inf"))
    return PerPlane(kern.n, tuple(ratios), independent)
