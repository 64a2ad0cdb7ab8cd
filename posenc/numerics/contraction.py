"""Contraction (multiplicative) versus expansion (additive): the coupled logit's spectrum.

Gu et al. (arXiv 2505.13027): a multiplicative PE gives L = A o K, K PSD with
unit diagonal, so by Schur ||L||_2 <= ||A||_2 and spec(L) stays inside
spec(A)'s range whatever n is; an additive PE gives L = A + B, and ||B||_2 grows
with n (ALiBi: like n^2), so ||L|| / ||A|| grows (Weyl brackets it).

``seeded_content(n, rank=8, seed=0) -> LowRankOperator``
    A = X X^T, X (n, rank) i.i.d. N(0, 1/rank) (so E A_ii = 1); row p of X does
    not depend on n, so A_m is the leading m-section of A_n.
``load_content(path) -> ndarray``: a square, real, finite matrix from a ``.npy`` file.
``couple(content, kern, coupling=None, method="auto") -> Coupled``
    ``content`` a LowRankOperator or an (n, n) array; ``kern`` a non-hybrid
    :class:`~posenc.numerics.kernels.Kernel` or a hybrid one (L = A o K + B).
    Returns ||A||, ||L||, their ratio, spec(A), spec(L) and the Schur/Weyl bounds.
``scale_content(content, c)``, ``scaled_ratios(content, kern, scales)``: the ratio at content
    scales c A.  The two ratios are not alike: ||(cA) o K|| / ||cA|| is the same for every
    c, ||cA + B|| / ||cA|| runs from ||B|| / ||cA|| (small c) to 1 (large c), so an additive
    ratio means something only beside the content's scale ||A||.
The Schur bound is about the plane-averaged K applied to one content matrix shared by every
rotary plane; RoPE's own logit, each plane with its own content, is :mod:`.per_plane`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PosencError
from ..limits import MAX_WIDTH, check_int, check_memory
from . import bounds as bd
from .operators import DenseOperator, HadamardOperator, LowRankOperator, SumOperator
from .spectra import spectrum
from numpy.lib import format as npf


def seeded_content(n: int, rank: int = 8, seed: int = 0) -> LowRankOperator:
    rank = check_int("content rank", rank, MAX_WIDTH)
    check_memory(8.0 * n * rank, f"a seeded content factor of {n} x {rank}")
    x = np.empty((n, rank))
    for start in range(0, n, 4096):                              # rows independent of n
        x[start:start + 4096] = np.random.default_rng([seed, start]).standard_normal(
            (min(4096, n - start), rank))
    return LowRankOperator(x / np.sqrt(rank))


def load_npy(path: str, what: str) -> np.ndarray:
    """An array from a .npy file without pickles; one PosencError naming ``what`` (e.g.
    "content matrix") if the file is missing or not a readable .npy array."""
    if not os.path.isfile(path):
        raise PosencError(f"{what} file not found: {path}")
    shape, dtype = npy_header(path)
    nbytes = float(np.prod(shape, dtype=float)) * dtype.itemsize
    check_memory(2 * nbytes + 8.0 * np.prod(shape, dtype=float), f"loading {path} ({shape})")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise PosencError(f"cannot read {path} as a .npy array: {str(exc).splitlines()[0]}") from None


def npy_header(path: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from a .npy header, read before any data (so a header that claims a
    1e8 x 1e8 array allocates nothing); checked against the file's size, no object dtypes."""
    size = os.path.getsize(path)
    try:
        with open(path, "rb") as fh:
            if fh.read(2) == b"PK":
                raise PosencError(f"{path} is a zip archive (an .npz?), not a .npy array")
            fh.seek(0)
            version = npf.read_magic(fh)
            if version == (1, 0):
                shape, _, dtype = npf.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, _, dtype = npf.read_array_header_2_0(fh)
            else:
                raise PosencError(f"{path}: .npy format version {version} is not supported")
            offset = fh.tell()
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        raise PosencError(f"cannot read {path} as a .npy array: {str(exc).splitlines()[0]}") from None
    if dtype.hasobject:
        raise PosencError(f"{path} holds Python objects (dtype {dtype}); only numbers are read")
    need = offset + int(np.prod(shape, dtype=object)) * dtype.itemsize
    if need != size:
        raise PosencError(f"{path}: its header claims shape {shape} of {dtype} ({need} bytes) but "
                          f"the file has {size} bytes (truncated or not a .npy array)")
    return tuple(int(d) for d in shape), dtype


def load_content(path: str) -> np.ndarray:
    """A content matrix from a .npy file, checked: 2-D, square, real, finite."""
    return check_content(load_npy(path, "content matrix"), f"content matrix in {path}")


def check_content(a: Any, what: str = "the content matrix") -> np.ndarray:
    """``a`` as a float64 array, or one PosencError unless it is 2-D, square, real and finite."""
    try:
        a = np.asarray(a)
    except (ValueError, TypeError) as exc:
        raise PosencError(f"{what} must be a square array of real numbers ({exc})") from None
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
        raise PosencError(f"{what} must be square; got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a) or a.dtype == bool:
        raise PosencError(f"{what} must be real numbers; got dtype {a.dtype}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise PosencError(f"{what} has NaN or infinity at {tuple(int(i) for i in bad)}")
    return a


@dataclass
class Coupled:
    """One coupled logit L and its content A, with exact values and bounds."""

    n: int
    coupling: str
    norm_a: float
    norm_l: float
    lam_a: tuple[float, float] | None
    lam_l: tuple[float, float] | None
    bound_interval: tuple[float, float] | None
    bound_norm: float
    bound_name: str            # of the eigenvalue interval
    norm_bound_name: str
    assumptions: str
    assumptions_met: bool
    method: str
    seconds: float
    notes: list[str] = field(default_factory=list)
    norm_b: float | None = None  # ||B||_2 of an additive (or hybrid) coupling's bias

    @property
    def ratio(self) -> float:
        return self.norm_l / self.norm_a if self.norm_a > 0 else float("inf")

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["ratio"] = self.ratio
        return d


def _content_spectrum(content: Any) -> tuple[float, tuple[float, float] | None, bool, str]:
    """||A||, (lam_min, lam_max) if symmetric, PSD?, method."""
    if isinstance(content, LowRankOperator):
        sv = np.linalg.svd(content.x, compute_uv=False)          # exact: A = X X^T
        lo = 0.0 if content.rank_bound < content.shape[0] else float(sv[-1] ** 2)
        return float(sv[0] ** 2), (lo, float(sv[0] ** 2)), True, "thin SVD of the factor"
    a = np.asarray(content)
    if np.array_equal(a, a.T):
        ev = np.linalg.eigvalsh(a)
        psd = ev[0] >= -1e-12 * max(abs(ev[-1]), 1.0)  # rounding of a PSD matrix: ~n eps ||A||
        return float(np.max(np.abs(ev))), (float(ev[0]), float(ev[-1])), bool(psd), "dense eigvalsh"
    return float(np.linalg.norm(a, 2)), None, False, "dense svd"


def _content_op(content: Any) -> Any:
    return content if isinstance(content, LowRankOperator) else DenseOperator(np.asarray(content))


def _hadamard(content: Any, kern: Any) -> Any:
    if isinstance(content, LowRankOperator) and kern.toeplitz:
        return HadamardOperator(content.x, content.y, kern.operator)
    return DenseOperator(np.asarray(content.dense() if hasattr(content, "dense") else content)
                         * kern.dense())


def _sum_spectrum(first: Any, rank_first: int, psd_first: bool, bias: Any, method: str) -> Any:
    """Spectrum of first + B (B the bias kernel's operator)."""
    rank_sum = None if bias.rank_bound is None else rank_first + bias.rank_bound
    return spectrum(SumOperator(first, bias.operator), method=method,
                    psd=psd_first and bool(bias.psd), rank_bound=rank_sum)


def couple(content: Any, kern: Any, coupling: str | None = None, method: str = "auto") -> Coupled:
    """Spectrum of the coupled logit and the bound that explains it."""
    coupling = coupling or kern.coupling
    t0 = time.perf_counter()
    norm_a, lam_a, psd_a, _ = _content_spectrum(content)
    n = kern.n
    if _content_op(content).shape[0] != n:
        raise PosencError(f"content matrix is {_content_op(content).shape[0]} x "
                          f"{_content_op(content).shape[0]}, kernel n={n}")
    notes: list[str] = []
    norm_b: float | None = None
    if coupling == "multiplicative":
        op = _hadamard(content, kern)
        rank_a = content.rank_bound if isinstance(content, LowRankOperator) else n
        rk = kern.rank_bound
        sp = spectrum(op, method=method, psd=psd_a and bool(kern.psd),
                      rank_bound=None if rk is None else rank_a * rk)
        kd = np.real(kern.operator.diagonal())
        herm = lam_a is not None
        interval = (bd.schur_interval(lam_a[0], lam_a[1], kd.min(), kd.max(), general=not psd_a)
                    if herm else None)
        name = "Schur, A PSD" if psd_a else "Schur, Hermitian-A form"
        assumptions, met = "K PSD", bool(kern.psd)
        norm_name = "Schur: max K_ii ||A|| (K PSD)"
        bound_norm = bd.schur_norm(norm_a, float(kd.max()))
        if getattr(kern, "kind", None) == "decayed-rotary":   # xPos: K not Hermitian, not PSD
            interval = None
            assumptions, met = "K = X Y^T", True
            norm_name = "Schur: max|x_i| max|y_j| ||A|| (K = X Y^T)"
            bound_norm = norm_a * kern.factor_row_bound()
    elif coupling in ("additive", "none", "hybrid"):
        if coupling == "hybrid":
            mul = couple(content, kern.parts["multiplicative"], "multiplicative", method)
            first = _hadamard(content, kern.parts["multiplicative"])
            bias = kern.parts["additive"]
            lam_first = mul.lam_l
            norm_first = mul.norm_l
            notes.append("L = A o K + B")
        else:
            first, bias, lam_first, norm_first = _content_op(content), kern, lam_a, norm_a
        sp_b = spectrum(bias.operator, method=method, psd=bias.psd, rank_bound=bias.rank_bound)
        rank_first = (content.rank_bound if isinstance(content, LowRankOperator) else n) * (
            kern.parts["multiplicative"].rank_bound if coupling == "hybrid" else 1)
        sp = _sum_spectrum(first, rank_first, psd_a, bias, method)
        herm = lam_first is not None and sp_b.hermitian
        interval = bd.weyl_interval(lam_first, (sp_b.lambda_min, sp_b.lambda_max)) if herm else None
        bound_norm = bd.weyl_norm(norm_first, sp_b.sigma_max)[1]
        name, assumptions, met = "Weyl (A, B Hermitian)", "A, B Hermitian", bool(herm)
        norm_name = "triangle: ||A|| + ||B||" if coupling != "hybrid" else \
            "triangle: ||A o K|| + ||B||"
        notes += sp_b.notes
        norm_b = sp_b.sigma_max
    else:
        raise PosencError(f"unknown coupling {coupling!r}")
    lam_l = (sp.lambda_min, sp.lambda_max) if sp.hermitian else None
    return Coupled(n, coupling, norm_a, sp.sigma_max, lam_a, lam_l, interval, bound_norm, name,
                   norm_name, assumptions, met, sp.method, time.perf_counter() - t0,
                   notes + sp.notes, norm_b)


def scale_content(content: Any, scale: float) -> Any:
    """c A for a scale c > 0: a low-rank Gram keeps its form (X -> sqrt(c) X)."""
    scale = float(scale)
    if not np.isfinite(scale) or scale <= 0:
        raise PosencError(f"a content scale must be a positive finite number; got {scale!r}")
    if isinstance(content, LowRankOperator):
        if content.y is content.x:
            return LowRankOperator(content.x * np.sqrt(scale))
        return LowRankOperator(content.x * scale, content.y)
    return np.asarray(content) * scale


def scaled_ratios(content: Any, kern: Any, scales: Any, coupling: str | None = None,
                  method: str = "auto") -> tuple[float, ...]:
    """||L(c A)||_2 / ||c A||_2 for each content scale c in ``scales`` (one :func:`couple` each).

    Multiplicative: (c A) o K = c (A o K), so the ratio does not depend on c.  Additive:
    ||c A + B|| / ||c A|| = ||A + B / c|| / ||A||, within ||B|| / (c ||A||) of 1 (triangle
    inequality), so it tends to 1 as c grows; it is the convex function t -> ||A + t B||
    (t = 1/c) over its value at 0, hence non-increasing in c exactly when it never falls
    below 1 -- not in general (it can dip below 1 and come back: docs/usage.md)."""
    coupling = coupling or kern.coupling
    if coupling not in ("additive", "none"):
        return tuple(couple(scale_content(content, c), kern, coupling, method).ratio for c in scales)
    norm_a, _, psd_a, _ = _content_spectrum(content)     # ||c A|| = c ||A||; B's spectrum unused
    rank_a = content.rank_bound if isinstance(content, LowRankOperator) else kern.n
    out = []
    for c in scales:
        scaled = _content_op(scale_content(content, c))
        norm_l = _sum_spectrum(scaled, rank_a, psd_a, kern, method).sigma_max
        out.append(norm_l / (float(c) * norm_a) if norm_a > 0 else float("inf"))
    return tuple(out)
