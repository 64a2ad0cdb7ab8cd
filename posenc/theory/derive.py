"""``derive(spec) -> LogitForm``: the symbolic attention logit of a catalogue PE, with proofs.

Builds the PE's heads (:mod:`posenc.theory.builders`) with symbolic content,
weights and positions, splits each head's logit into named terms
(:mod:`posenc.theory.heads`) and, unless ``prove=False``, proves:

1. *decomposition*: for every head, the sum of the terms minus the logit as a
   model computes it (x = c + p, q = Q x, rotate, dot, + bias) reduces to 0
   (angles, frequencies and slopes symbolic);
2. *Toeplitz*: for each term whether it depends on positions only through
   i - j (:func:`~posenc.theory.toeplitz.prove_toeplitz`, with a witness when not);
3. *family*: from the form alone (:mod:`posenc.theory.classify`);
4. *special cases* for a sinusoidal input PE: with W_q^T W_k = I the
   position-position term is sum_m cos(omega_m (i-j)), and with W_q^T W_k
   commuting with the plane rotations it is sum_m a_m cos - b_m sin; both Toeplitz,
   whereas for generic W_q^T W_k it is not (Gu et al., arXiv 2505.13027, Sec. 3).

Results are cached per (spec, dims): specs are frozen, forms immutable.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional, Union

import sympy as sp

from ..encodings import Custom, PESpec, as_spec, MLA
from ..errors import PosencError
from ..limits import MAX_SYMBOLIC_DIM, MAX_SYMBOLIC_HEADS, is_index
from .builders import Build, build
from .classify import classify_expr, combine
from .form import Analysis, LogitForm, SpecialCase, Term
from .heads import TermSlot, model_expr, split_terms
from .render import slot_latex, slot_text
from .symbols import I_POS, J_POS
from .toeplitz import ToeplitzVerdict, is_identically_zero, prove_toeplitz, reduce_trig

DEFAULT_HEAD_DIM = 4
DEFAULT_HEADS = 4


def default_head_dim(spec: PESpec) -> int:
    """4, or enough dims for every plane of a custom frequency list."""
    if isinstance(spec, Custom) and spec.frequencies is not None:
        return max(DEFAULT_HEAD_DIM, 2 * len(spec.frequencies))
    return DEFAULT_HEAD_DIM


def derive(spec: Union[PESpec, str], *, head_dim: Optional[int] = None,
           model_dim: Optional[int] = None, n_heads: int = DEFAULT_HEADS,
           prove: bool = True) -> LogitForm:
    """Derive the logit form of ``spec`` (a catalogue spec or a spec string).

    ``head_dim`` d (default :func:`default_head_dim`), ``model_dim`` D (default
    d) and ``n_heads`` H fix the concrete sizes of the symbolic matrices;
    ``prove=False`` skips the proofs (for building large forms to evaluate).
    """
    if not isinstance(spec, (str, PESpec)):
        raise PosencError(f"a PE spec must be a string such as 'rope' or a PESpec; got {spec!r}")
    if not isinstance(prove, bool):
        raise PosencError(f"prove must be True or False; got {prove!r}")
    spec = as_spec(spec)
    d = default_head_dim(spec) if head_dim is None else head_dim
    D = d if model_dim is None else model_dim
    # proofs grow steeply with the sizes; building a form to evaluate (prove=False) does not
    dim_limit, head_limit = (MAX_SYMBOLIC_DIM, MAX_SYMBOLIC_HEADS) if prove else \
        (8 * MAX_SYMBOLIC_DIM, 4 * MAX_SYMBOLIC_HEADS)
    sizes = []
    for name, value, limit in (("head dim", d, dim_limit), ("model dim", D, dim_limit),
                               ("number of heads", n_heads, head_limit)):
        if not is_index(value) or int(value) < 1:
            raise PosencError(f"{name} must be a positive integer; got {value!r}")
        value = int(value)  # numpy integers count (docs/api.md)
        sizes.append(value)
        if value > limit:
            raise PosencError(f"{name} {value} exceeds the limit {limit} of the symbolic "
                              f"derivation (its proofs grow steeply with the sizes)")
    if isinstance(spec, MLA):                        # latent widths size symbolic matrices too
        spec.refuse_non_toeplitz()
        for name in ("kv_latent", "q_latent", "rope_dim"):
            value = getattr(spec, name)
            if value is not None and value > dim_limit:
                raise PosencError(f"mla {name} {value} exceeds the limit {dim_limit} of "
                                  f"the symbolic derivation (its proofs grow steeply with sizes)")
    d, D, n_heads = sizes
    return _derive(spec, d, D, n_heads, prove)


@functools.lru_cache(maxsize=128)
def _derive(spec: PESpec, d: int, D: int, H: int, prove: bool) -> LogitForm:
    b = build(spec, d, D, H)
    slots = split_terms(b.heads, b.table, b.c_i, b.c_j, b.pe)
    terms = tuple(_term(name, slot, b, H) for name, slot in slots.items())
    form = LogitForm(spec, d, D, H, terms, tuple(b.definitions), b.model_text, b.table,
                     model=lambda h: model_expr(b.heads[h], b.c_i, b.c_j, b.pe))
    if not prove:
        return form
    return _prove(form, b)


def _term(name: str, slot: TermSlot, b: Build, n_heads: int) -> Term:
    staged = tuple(slot.exprs.get(h, sp.Integer(0)) for h in range(n_heads))
    return Term(name, slot.kind, slot.structure, slot_text(slot, b), slot_latex(slot, b), staged,
                expand=b.table.expand_projections)


def _aggregate(verdicts: list[ToeplitzVerdict]) -> ToeplitzVerdict:
    for status in ("not-toeplitz", "undecided"):
        for v in verdicts:
            if v.status == status:
                return v
    if all(v.status == "position-free" for v in verdicts):
        return verdicts[0]
    return next(v for v in verdicts if v.status == "toeplitz")


class _Memo:
    """Runs a proof once per canonical expression (heads that differ only by renaming)."""

    def __init__(self, table):
        self.table, self.seen = table, {}

    def __call__(self, kind: str, expr: sp.Expr, fn):
        key = (kind, self.table.canonical(expr))
        if key not in self.seen:
            self.seen[key] = fn(expr)
        return self.seen[key]


def _prove(form: LogitForm, b: Build) -> LogitForm:
    table = form.table
    memo = _Memo(table)
    decomposition = tuple(
        memo("decomposition", form.head_expr(h) - form.model_exprs[h], is_identically_zero)
        for h in range(form.n_heads))
    terms = []
    for term in form.terms:
        verdicts = [memo("toeplitz", term.exprs[h], lambda e: prove_toeplitz(e, table))
                    for h in term.heads]
        terms.append(dataclasses.replace(term, toeplitz=_aggregate(verdicts)))
    form = dataclasses.replace(form, terms=tuple(terms))
    heads = tuple(memo("classify", form.head_expr(h),
                       lambda e: classify_expr(e, form.content_i, form.content_j, table))
                  for h in range(form.n_heads))
    family = combine([h.family for h in heads])
    analysis = Analysis(decomposition, heads, family, _special_cases(form, b))
    return dataclasses.replace(form, analysis=analysis)


def _special_cases(form: LogitForm, b: Build) -> tuple[SpecialCase, ...]:
    """W_q^T W_k = I and W_q^T W_k commuting with rotations, for a sinusoidal input PE."""
    if b.pe_kind != "sinusoidal" or form.head_dim != form.model_dim:
        return ()
    pps = [t for t in form.terms if t.kind == "position-position"]
    if not pps:
        return ()
    d, table = form.head_dim, form.table
    wq = [s for s, bd in table.bindings.items() if bd.array == "W_q" and bd.index[0] == 0]
    wk = [s for s, bd in table.bindings.items() if bd.array == "W_k" and bd.index[0] == 0]
    eye = {s: int(table.bindings[s].index[1] == table.bindings[s].index[2]) for s in wq + wk}
    expr = sp.Add(*[t.exprs[0] for t in pps])
    name = " + ".join(t.name for t in pps)
    omegas = sorted((s for s in table.parameters if s.name.startswith("omega_")),
                    key=lambda s: int(s.name.split("_")[1]))
    k = I_POS - J_POS
    identity = expr.xreplace(eye)
    cases = []
    if any(t.structure != "bilinear" for t in pps):  # rotary: the verdict, no closed form
        return (SpecialCase("W_q = W_k = I", name, "", "", False,
                            prove_toeplitz(identity, table)),)
    closed = sp.Add(*[sp.cos(w * k) for w in omegas])
    proved = reduce_trig(identity - closed) == 0
    cases.append(SpecialCase("W_q^T W_k = I (W_q = W_k = I)", name, sp.sstr(closed),
                             sp.latex(closed), proved, prove_toeplitz(identity, table)))
    a = sp.symbols(f"a_0:{d // 2}", real=True)
    c = sp.symbols(f"b_0:{d // 2}", real=True)
    block = {s: int(table.bindings[s].index[1] == table.bindings[s].index[2]) for s in wq}
    for s in wk:
        r, col = table.bindings[s].index[1:]
        m = r // 2
        value = 0
        if col // 2 == m:
            value = a[m] if r == col else (-c[m] if r < col else c[m])
        block[s] = value
    commuting = expr.xreplace(block)
    closed = sp.Add(*[a[m] * sp.cos(w * k) - c[m] * sp.sin(w * k) for m, w in enumerate(omegas)])
    proved = reduce_trig(commuting - closed) == 0
    cases.append(SpecialCase(
        "W_q^T W_k = blockdiag([[a_m, -b_m], [b_m, a_m]]) (commutes with the plane rotations)",
        name, sp.sstr(closed), sp.latex(closed), proved, prove_toeplitz(commuting, table)))
    return tuple(cases)
