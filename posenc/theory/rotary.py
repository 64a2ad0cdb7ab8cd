"""Rotary position embedding (Su et al. 2021) in sympy: rotation, plane form, identity.

A vector at position p is rotated in plane (a, b) with angle theta by
``(x_a, x_b) -> (x_a cos(p theta) - x_b sin(p theta), x_a sin(p theta) + x_b cos(p theta))``,
i.e. ``x_a + i x_b -> (x_a + i x_b) e^{i p theta}`` (the convention of
:mod:`posenc.encodings`).  Then, with ``q~ = q_a + i q_b`` and ``k~ = k_a + i k_b``,

    <R_i q, R_j k>  restricted to the plane  =  Re( q~ conj(k~) e^{i theta (i - j)} ),

the per-plane identity behind the multiplicative form of Gu et al. (arXiv
2505.13027).  :func:`plane_identity_difference` proves it for a pairing with
symbolic angles, coordinates and positions, using sympy's own ``re``,
``conjugate`` and ``exp``; :func:`rotary_term` writes the right-hand side as
a real expression (Re G cos - Im G sin) for the derived forms.
"""

from __future__ import annotations

from typing import Sequence

import sympy as sp

from .conventions import pair
from .symbols import I_POS, J_POS
from .toeplitz import reduce_trig

#: (first coordinate, second coordinate, angle symbol) of a rotating plane.
SymPlane = tuple[int, int, sp.Expr]


def rotate(vec: sp.Matrix, planes: Sequence[SymPlane], position: sp.Expr) -> sp.Matrix:
    """R_position vec: rotate each plane (a, b, theta) by the angle position * theta."""
    out = sp.Matrix(vec)
    for a, b, theta in planes:
        c, s = sp.cos(theta * position), sp.sin(theta * position)
        out[a] = vec[a] * c - vec[b] * s
        out[b] = vec[a] * s + vec[b] * c
    return out


def dot(u: sp.Matrix, v: sp.Matrix, coords: Sequence[int] | None = None) -> sp.Expr:
    """Sum over ``coords`` (all by default) of u_a v_a, unexpanded."""
    idx = range(u.shape[0]) if coords is None else coords
    return sp.Add(*[u[a] * v[a] for a in idx])


def rotary_term(q: sp.Matrix, k: sp.Matrix, planes: Sequence[SymPlane],
                decay: dict[int, sp.Expr] | None = None) -> sp.Expr:
    """sum_m Re(q~_m conj(k~_m) e^{i theta_m (i - j)}) as a real expression.

    With G = q~ conj(k~): Re G = q_a k_a + q_b k_b, Im G = q_b k_a - q_a k_b and
    Re(G e^{i phi}) = Re G cos(phi) - Im G sin(phi), phi = theta (i - j).  A plane with a
    decay lambda (xPos; ``decay[a]``) has the factor lambda^(i - j) as well.
    """
    total = []
    for a, b, theta in planes:
        phi = theta * (I_POS - J_POS)
        re_g = q[a] * k[a] + q[b] * k[b]
        im_g = q[b] * k[a] - q[a] * k[b]
        term = re_g * sp.cos(phi) - im_g * sp.sin(phi)
        if decay and a in decay:
            term = decay[a] ** (I_POS - J_POS) * term
        total.append(term)
    return sp.Add(*total)


def complex_coordinate(vec: Sequence[sp.Expr], a: int, b: int) -> sp.Expr:
    return vec[a] + sp.I * vec[b]


def plane_identity_difference(pairing: str, head_dim: int) -> sp.Expr:
    """<R_i q, R_j k> - Re sum_m q~_m conj(k~_m) e^{i theta_m (i-j)}, reduced (0 = proved).

    q, k have ``head_dim`` real symbolic coordinates, every plane its own
    symbolic real angle ``theta_m``; i, j are integer symbols.  The right-hand
    side is built with sympy's ``re``, ``conjugate`` and ``exp`` (not with
    :func:`rotary_term`), expanded with ``expand_complex`` and reduced.
    """
    q = sp.Matrix(sp.symbols(f"q_0:{head_dim}", real=True))
    k = sp.Matrix(sp.symbols(f"k_0:{head_dim}", real=True))
    planes = []
    for m in range(head_dim // 2):
        a, b = pair(pairing, m, head_dim)
        planes.append((a, b, sp.Symbol(f"theta_{m}", real=True)))
    lhs = dot(rotate(q, planes, I_POS), rotate(k, planes, J_POS))
    rhs = sp.Add(*[sp.re(complex_coordinate(q, a, b) * sp.conjugate(complex_coordinate(k, a, b))
                         * sp.exp(sp.I * th * (I_POS - J_POS))) for a, b, th in planes])
    return reduce_trig(sp.expand_complex(lhs - rhs))


def kernel(theta: sp.Expr) -> sp.Expr:
    """The relative kernel of one plane, e^{i theta (i - j)}."""
    return sp.exp(sp.I * theta * (I_POS - J_POS))
