"""The derived attention logit of a PE: :class:`LogitForm`, its :class:`Term` s and analysis.

A LogitForm (Gu et al., arXiv 2505.13027, Sec. 3) is a sum of named terms,
one head h at a time:

    L^h_ij = sum over terms of term.exprs[h]

``kind`` is content-content, content-position, position-content,
position-position (the PE vector p is added to the input) or bias (a pure
function of the positions added to the logits).  ``structure`` is
``bilinear`` (u_i^T Q^T K u_j over coordinates that do not rotate),
``rotary`` (sum over rotary planes m of Re[G_m e^{i theta_m (i-j)}], G_m the
content Gram term q~_m conj(k~_m)) or ``bias``.  The logit is *before* the
score scale: a model's score is ``scale * (non-bias terms) + bias terms``
(see :meth:`LogitForm.to_numpy_function`).

Each term's ``staged`` expressions are written in projection symbols (q = Q u,
k = K u as symbol vectors, :class:`~posenc.theory.symbols.Projection`); its
``exprs`` are the same expressions with the projections substituted, i.e.
explicit real sympy expressions in weights, content, PE and positions at the
form's concrete dims.  Parameters (angles, frequencies, slopes) stay symbolic
and their exact values are in ``parameters``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import sympy as sp

from ..encodings import PESpec
from .classify import HeadClass
from .lambdify import LogitFunction
from .render import form_dict, form_latex, form_text
from .symbols import SymbolTable
from .toeplitz import ToeplitzVerdict

#: what a :class:`Term` of a logit is (``Term.kind``)
TERM_KINDS = ("content-content", "content-position", "position-content", "position-position", "bias")


@dataclass(frozen=True)
class Term:
    """One named term; ``staged[h]`` is head h's expression in projection symbols.

    ``exprs[h]`` is the same expression with every projection symbol replaced
    by its explicit value (weights times content or PE), computed on first use.
    """

    name: str
    kind: str
    structure: str                 # bilinear | rotary | bias
    text: str
    latex: str
    staged: tuple[sp.Expr, ...]    # one per head (0 where the head has no such term)
    toeplitz: Optional[ToeplitzVerdict] = None
    expand: Callable[[sp.Expr], sp.Expr] = field(default=lambda e: e, repr=False, compare=False)

    @functools.cached_property
    def exprs(self) -> tuple[sp.Expr, ...]:
        return tuple(self.expand(e) for e in self.staged)

    @property
    def heads(self) -> tuple[int, ...]:
        return tuple(h for h, e in enumerate(self.staged) if e != 0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "structure": self.structure,
                               "text": self.text, "latex": self.latex, "heads": list(self.heads)}
        if self.toeplitz is not None:
            out["toeplitz"] = self.toeplitz.to_dict()
        return out


@dataclass(frozen=True)
class Definition:
    """A "where" line: what a symbol of the displayed form means."""

    text: str
    latex: str


@dataclass(frozen=True)
class SpecialCase:
    """A proved statement about one term under an extra assumption (e.g. W_q^T W_k = I)."""

    assumption: str
    term: str
    result_text: str
    result_latex: str
    proved: bool
    toeplitz: ToeplitzVerdict

    def to_dict(self) -> dict[str, Any]:
        return {"assumption": self.assumption, "term": self.term, "result": self.result_text,
                "latex": self.result_latex, "proved": self.proved,
                "toeplitz": self.toeplitz.to_dict()}


@dataclass(frozen=True)
class Analysis:
    """What :func:`~posenc.theory.derive.derive` proved about the form."""

    decomposition_proved: tuple[bool, ...]   # per head: sum of terms - model computation == 0
    heads: tuple[HeadClass, ...]
    family: str
    special_cases: tuple[SpecialCase, ...] = ()


@dataclass(frozen=True)
class LogitForm:
    spec: PESpec
    head_dim: int
    model_dim: int
    n_heads: int
    terms: tuple[Term, ...]
    definitions: tuple[Definition, ...]
    model_text: str                      # how the model computes the logit
    table: SymbolTable = field(repr=False, compare=False, hash=False)
    analysis: Optional[Analysis] = None
    model: Callable[[int], sp.Expr] = field(default=lambda h: sp.Integer(0), repr=False,
                                            compare=False, hash=False)

    @functools.cached_property
    def model_exprs(self) -> tuple[sp.Expr, ...]:
        """Per head: the logit as the model computes it (x = c + p, project, rotate, dot, + bias)."""
        return tuple(self.model(h) for h in range(self.n_heads))

    # -- structure ---------------------------------------------------------------------------
    def head_expr(self, head: int, terms: Sequence[str] | None = None) -> sp.Expr:
        """L^head as the sum of the (selected) terms' expressions."""
        return sp.Add(*[t.exprs[head] for t in self.terms if terms is None or t.name in terms])

    def term(self, name: str) -> Term:
        for t in self.terms:
            if t.name == name:
                return t
        raise KeyError(f"no term {name!r}; terms: {[t.name for t in self.terms]}")

    @property
    def parameters(self) -> dict[sp.Symbol, sp.Expr]:
        return dict(self.table.parameters)

    @property
    def content_i(self) -> tuple[sp.Symbol, ...]:
        return self.table.content_symbols("query")

    @property
    def content_j(self) -> tuple[sp.Symbol, ...]:
        return self.table.content_symbols("key")

    @property
    def declared_family(self) -> str:
        return self.spec.family

    @property
    def family(self) -> Optional[str]:
        """The family derived from the form (None when derived with ``prove=False``)."""
        return self.analysis.family if self.analysis else None

    def inputs(self) -> dict[str, tuple]:
        """Numeric inputs of :meth:`to_numpy_function`: array name -> shape ("n" = seq length)."""
        return dict(self.table.arrays)

    # -- evaluation ----------------------------------------------------------------------------
    def to_numpy_function(self, terms: Sequence[str] | None = None, input_pe: bool = True,
                          method: str = "staged") -> LogitFunction:
        """A compiled numeric evaluator (lambdify); see :mod:`posenc.theory.lambdify`."""
        return LogitFunction(self, terms, input_pe, method)

    # -- output --------------------------------------------------------------------------------
    def text(self) -> str:
        return form_text(self)

    def latex(self) -> str:
        return form_latex(self)

    def to_dict(self) -> dict[str, Any]:
        return form_dict(self)

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)
