"""Classify a positional encoding from its logit form alone.

Following Gu et al. (arXiv 2505.13027), write one head's logit as a function of
the content vectors c_i, c_j (the layer input at the two positions) and the
positions i, j.  Every derived form is affine-bilinear in (c_i, c_j):

    L = c_i^T M(i, j) c_j + c_i^T u(i, j) + v(i, j)^T c_j + s(i, j),

with M = d^2 L / dc_i dc_j (the content-content block), u = dL/dc_i and
v = dL/dc_j at c = 0, s = L at c = 0.  The family follows from these alone:

* no i or j anywhere (or it cancels)       -> ``none``
* M constant, u or v depends on position  -> ``additive-input`` (PE added to the input:
  content-position cross terms)
* M constant, only s depends on position  -> ``additive-bias`` (a pure bias added to the logits)
* M depends on i - j only (proved Toeplitz), u = v = s position-free -> ``multiplicative``
* M depends on i - j and u, v or s carry position -> ``hybrid``
* M depends on (i, j) otherwise (a witness) -> ``non-toeplitz-multiplicative``

Heads of one PE can differ (partial RoPE); :func:`combine` merges them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import sympy as sp

from .symbols import SymbolTable
from .toeplitz import ToeplitzVerdict, depends_on_position, has_position, prove_toeplitz

NON_TOEPLITZ = "non-toeplitz-multiplicative"


@dataclass(frozen=True)
class HeadClass:
    """The classification evidence of one head."""

    family: str
    block: str           # constant | relative | absolute  (how M depends on the positions)
    cross_terms: bool    # u or v depends on position
    bias: bool           # s depends on position
    block_witness: ToeplitzVerdict | None = None

    def reason(self) -> str:
        block = {"constant": "d2L/dc_i dc_j is constant",
                 "relative": "d2L/dc_i dc_j depends on i-j only (proved)",
                 "absolute": "d2L/dc_i dc_j is not a function of i-j (witness)"}[self.block]
        extra = []
        if self.cross_terms:
            extra.append("content-position cross terms")
        if self.bias:
            extra.append("a position-only term")
        return block + ("; " + " and ".join(extra) if extra else "; no other position term")


def classify_expr(logit: sp.Expr, content_i: Sequence[sp.Symbol], content_j: Sequence[sp.Symbol],
                  table: SymbolTable | None = None) -> HeadClass:
    """Classify one head's logit expression (see the module docstring)."""
    table = table or SymbolTable()
    if not has_position(logit):
        return HeadClass("none", "constant", False, False)
    zero = {c: sp.Integer(0) for c in (*content_i, *content_j)}
    block = "constant"
    witness = None
    for ci in content_i:
        d_i = sp.diff(logit, ci)
        for cj in content_j:
            entry = sp.diff(d_i, cj)
            if not depends_on_position(entry, table):
                continue
            verdict = prove_toeplitz(entry, table)
            if verdict.is_toeplitz:
                block = "relative"
            else:
                block, witness = "absolute", verdict
                break
        if block == "absolute":
            break
    u = [sp.diff(logit, c).xreplace(zero) for c in content_i]
    v = [sp.diff(logit, c).xreplace(zero) for c in content_j]
    cross = any(depends_on_position(e, table) for e in (*u, *v))
    bias = depends_on_position(logit.xreplace(zero), table)
    if block == "constant" and not (cross or bias):
        family = "none"
    elif block == "constant":
        family = "additive-input" if cross else "additive-bias"
    elif block == "relative":
        family = "hybrid" if (cross or bias) else "multiplicative"
    else:
        family = NON_TOEPLITZ
    return HeadClass(family, block, cross, bias, witness)


def combine(families: Sequence[str]) -> str:
    """The family of a PE from its heads' families (heads without position are ignored)."""
    found = sorted(set(f for f in families if f != "none"))
    if not found:
        return "none"
    if len(found) == 1:
        return found[0]
    if NON_TOEPLITZ in found:
        return NON_TOEPLITZ
    return "hybrid"  # additive heads next to multiplicative ones
