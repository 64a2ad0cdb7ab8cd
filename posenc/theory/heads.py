"""A generic attention head in sympy, and its split into named logit terms.

Every catalogue PE is an instance of one model (Gu et al., arXiv 2505.13027):
the layer input at position p is x_p = c_p + p_p (content plus an optional
input PE vector), a head has one or more *paths* (MLA has a content path and a
rotary path), each mapping x to a query q = Q x and a key k = K x and rotating
some coordinate planes by the position, and an optional bias b(i, j):

    L_ij = sum over paths of <R_i Q x_i, R_j K x_j> + b(i, j).

:func:`model_expr` computes exactly that (rotate, then dot).
:func:`split_terms` expands the same logit bilinearly in (c, p) and per path
into bilinear parts (coordinates that do not rotate) and rotary parts
(:func:`~posenc.theory.rotary.rotary_term`), which ``derive`` then proves to
sum to :func:`model_expr`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import sympy as sp

from .rotary import SymPlane, dot, rotary_term, rotate
from .symbols import I_POS, J_POS, SymbolTable

KIND = {("c", "c"): "content-content", ("c", "p"): "content-position",
        ("p", "c"): "position-content", ("p", "p"): "position-position"}


@dataclass
class Path:
    """q = q_maps[0] @ q_maps[1] @ ... @ x (applied right to left); same for k."""

    name: str                          # "" for a single path; "content path" / "rotary path"
    q_maps: tuple[sp.Matrix, ...]
    k_maps: tuple[sp.Matrix, ...]
    planes: list[SymPlane]             # rotating planes (angle != 0)
    q_text: str = "W_q"
    k_text: str = "W_k"
    q_latex: str = "W_q"
    k_latex: str = "W_k"
    decay: dict[int, sp.Expr] = field(default_factory=dict)  # plane's first coord -> lambda (xPos)
    scale: sp.Expr = sp.Integer(1)     # scaled RoPE's attention factor s on q and k of the planes

    @property
    def width(self) -> int:
        return self.q_maps[0].shape[0]

    def plain_coords(self) -> list[int]:
        rotating = {c for a, b, _ in self.planes for c in (a, b)}
        return [a for a in range(self.width) if a not in rotating]


@dataclass
class InputPE:
    p_i: sp.Matrix
    p_j: sp.Matrix


@dataclass
class HeadModel:
    paths: list[Path]
    bias: Optional[sp.Expr] = None


@dataclass
class TermSlot:
    """Everything needed to name and display a term, plus its per-head expressions."""

    kind: str
    structure: str
    path: Path | None
    sources: tuple[str, str]           # ("c" | "p", "c" | "p")
    full: bool = True                  # bilinear over all coordinates in every head using it
    exprs: dict[int, sp.Expr] = field(default_factory=dict)


def apply(maps: Sequence[sp.Matrix], vec: sp.Matrix) -> sp.Matrix:
    out = vec
    for m in reversed(maps):
        out = m * out
    return out


def model_expr(head: HeadModel, c_i: sp.Matrix, c_j: sp.Matrix, pe: InputPE | None) -> sp.Expr:
    """The head's logit as a model computes it: x = c + p, q = Q x, rotate, dot, + bias."""
    x_i = c_i + pe.p_i if pe else c_i
    x_j = c_j + pe.p_j if pe else c_j
    total = []
    for path in head.paths:
        q = rotate(apply(path.q_maps, x_i), path.planes, I_POS)
        k = rotate(apply(path.k_maps, x_j), path.planes, J_POS)
        for a, b, _ in path.planes:       # xPos: q scaled by lambda^i, k by lambda^(-j)
            if a in path.decay:
                lam = path.decay[a]
                q[a], q[b] = q[a] * lam ** I_POS, q[b] * lam ** I_POS
                k[a], k[b] = k[a] * lam ** (-J_POS), k[b] * lam ** (-J_POS)
            if path.scale != 1:           # scaled RoPE: cos and sin times s, on q and on k
                q[a], q[b], k[a], k[b] = (path.scale * v for v in (q[a], q[b], k[a], k[b]))
        total.append(dot(q, k))
    if head.bias is not None:
        total.append(head.bias)
    return sp.Add(*total)


def _slot_name(slot: TermSlot) -> str:
    if slot.structure == "bias":
        return "bias"
    quals = []
    if slot.path is not None and slot.path.name:
        quals.append(slot.path.name)
    elif slot.structure == "rotary":
        quals.append("rotary")
    return slot.kind + (", " + ", ".join(quals) if quals else "")


def split_terms(heads: Sequence[HeadModel], table: SymbolTable, c_i: sp.Matrix, c_j: sp.Matrix,
                pe: InputPE | None) -> dict[str, TermSlot]:
    """Split every head's logit into named terms, written in projection symbols.

    For path P of head h and sources s, s' in {c, p}: q = Q u_s(i) and
    k = K u_s'(j) become symbol vectors (:meth:`SymbolTable.projection`); the
    term is their dot product over the coordinates that do not rotate
    (bilinear) or :func:`~posenc.theory.rotary.rotary_term` over the rotating
    planes.  ``table.expand_projections`` turns a term into weights and content.
    Ordered by kind, then path, then structure.
    """
    table.sources.update({("c", "query"): c_i, ("c", "key"): c_j})
    srcs = ["c"]
    if pe is not None:
        table.sources.update({("p", "query"): pe.p_i, ("p", "key"): pe.p_j})
        srcs.append("p")
    slots: dict[str, TermSlot] = {}

    def add(slot: TermSlot, h: int, expr: sp.Expr) -> None:
        if expr == 0:
            return
        name = _slot_name(slot)
        if name not in slots:
            slots[name] = slot
        slots[name].exprs[h] = expr
        slots[name].full = slots[name].full and slot.full

    for h, head in enumerate(heads):
        for n_path, path in enumerate(head.paths):
            plain = path.plain_coords()
            for si in srcs:
                q = table.projection(f"q_h{h}_{n_path}{si}", path.q_maps, si, "query", h)
                for sj in srcs:
                    k = table.projection(f"k_h{h}_{n_path}{sj}", path.k_maps, sj, "key", h)
                    kind = KIND[(si, sj)]
                    if plain:
                        add(TermSlot(kind, "bilinear", path, (si, sj), len(plain) == path.width), h,
                            dot(q, k, plain))
                    if path.planes:
                        add(TermSlot(kind, "rotary", path, (si, sj)), h,
                            path.scale ** 2 * rotary_term(q, k, path.planes, path.decay))
        if head.bias is not None:
            add(TermSlot("bias", "bias", None, ("", "")), h, head.bias)
    order = {k: n for n, k in enumerate(KIND.values())} | {"bias": 99}
    return dict(sorted(slots.items(), key=lambda kv: (order[kv[1].kind],
                                                      kv[1].path.name if kv[1].path else "",
                                                      kv[1].structure)))
