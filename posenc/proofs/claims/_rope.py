"""RoPE helpers shared by the claims: the catalogue's plane pairing, and the numeric
Hadamard–Toeplitz logit built from :mod:`posenc.numerics` kernels.

The pairing is the catalogue's convention (posenc.encodings): ``interleaved`` plane m = dims
(2m, 2m+1), ``half`` plane m = dims (m, m + r/2); a plane's complex coordinate is x_a + i x_b.
The per-plane kernels E_m = [e^{iθ_m(i−j)}] and the frequencies θ_m come from
``posenc.numerics.kernels.kernel(spec, n).plane(m)`` -- not recomputed here -- so a bug in the
numeric layer makes the claims that use them fail.
"""

from __future__ import annotations

import numpy as np

from ...encodings import RoPE
from ...numerics.logits import plane_indices
from ...numerics.kernels import kernel


def complexify(X: np.ndarray, pairing: str, r: int) -> np.ndarray:
    """(n, d) real -> (n, r/2) complex plane coordinates x_a + i x_b."""
    a_idx, b_idx = plane_indices(r, pairing)
    cols = [X[:, a] + 1j * X[:, b] for a, b in zip(a_idx, b_idx)]
    return np.stack(cols, axis=1) if cols else np.zeros((X.shape[0], 0), dtype=complex)


def rope_kernel(base: float, pairing: str, n: int, d: int):
    return kernel(RoPE(base=base, pairing=pairing), n, head_dim=d, n_heads=1)


def plane_grams(Q: np.ndarray, K: np.ndarray, pairing: str, r: int) -> list[np.ndarray]:
    """G_m = Q̃_m K̃_m^* (n, n) complex, rank one, per plane."""
    Qc, Kc = complexify(Q, pairing, r), complexify(K, pairing, r)
    return [np.outer(Qc[:, m], np.conj(Kc[:, m])) for m in range(r // 2)]


def hadamard_toeplitz_logits(Q: np.ndarray, K: np.ndarray, base: float, pairing: str
                             ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """L = Re Σ_m G_m ∘ E_m with E_m from numerics; returns (L, [G_m], [E_m])."""
    n, d = Q.shape
    kern = rope_kernel(base, pairing, n, d)
    E = [kern.plane(m).dense() for m in range(d // 2)]                       # (n, n) each
    G = plane_grams(Q, K, pairing, d)
    L = np.real(sum((g * e for g, e in zip(G, E)), np.zeros((n, n), dtype=complex)))
    return L, G, E
