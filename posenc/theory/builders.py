"""Per-family construction of symbolic attention heads from a catalogue spec.

Each catalogue family (see :mod:`posenc.encodings` for the conventions and the
papers that define them) becomes a list of :class:`~posenc.theory.heads.HeadModel`
plus an optional input PE vector, with symbolic weights per head:

* nope / sinusoidal / learned_absolute: one path q = W_q x, k = W_k x;
  x = c (+ sinusoidal or learned p);
* relative_bias / alibi / custom kernel: one path plus a bias b_h(i, j);
* rope / custom frequencies: the path rotates its planes (heads it applies to);
* mla: a content path (W_uq W_dq, W_uk W_dkv) and a rotary path (W_qr W_dq, W_kr);
* hybrid: an additive PE (input vector or bias) plus rope.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import sympy as sp

from ..encodings import (ALiBi, Custom, KerpleLog, LearnedAbsolute, MLA, PESpec, RelativeBias,
                         RoPE, XPos)
from ..encodings.parts import Part, not_toeplitz, structure, unknown_part
from . import conventions as cv, rope_scaling
from .form import Definition
from .heads import HeadModel, InputPE, Path
from .symbols import ARG, I_POS, J_POS, SymbolTable


@dataclass
class Build:
    table: SymbolTable
    c_i: sp.Matrix
    c_j: sp.Matrix
    heads: list[HeadModel]
    pe: Optional[InputPE] = None
    pe_kind: str = ""                       # "" | "sinusoidal" | "learned"
    definitions: list[Definition] = field(default_factory=list)
    model_text: str = ""
    bias_text: str = ""
    bias_latex: str = ""

    def define(self, text: str, latex: str) -> None:
        self.definitions.append(Definition(text, latex))


def _values(symbols: list[sp.Symbol], table: SymbolTable) -> tuple[str, str]:
    text = ", ".join(f"{s} = {sp.sstr(table.parameters[s])}" for s in symbols)
    latex = ",\\; ".join(f"{sp.latex(s)} = {sp.latex(table.parameters[s])}" for s in symbols)
    return text, latex


def _input_pe(b: Build, kind: str, base: float = 10000.0, max_len: int = 0,
              layout: str = "interleaved") -> None:
    D = b.c_i.shape[0]
    if kind == "sinusoidal":
        omegas = [b.table.parameter(f"omega_{m}", w)
                  for m, w in enumerate(cv.sinusoidal_frequencies(D, base))]
        if layout == "half":  # every sine, then every cosine (the paper code's rope table)
            vec = lambda pos: sp.Matrix([f(w * pos) for f in (sp.sin, sp.cos) for w in omegas])  # noqa: E731
        else:
            vec = lambda pos: sp.Matrix([f(w * pos) for w in omegas for f in (sp.sin, sp.cos)])  # noqa: E731
        b.pe = InputPE(vec(I_POS), vec(J_POS))
        text, latex = _values(omegas, b.table)
        if layout == "half":
            b.define(f"p_i[m] = sin(omega_m i), p_i[D/2+m] = cos(omega_m i), omega_m = "
                     f"{base:g}^(-2m/{D}): " + text,
                     rf"p_i[m] = \sin(\omega_m i),\; p_i[D/2+m] = \cos(\omega_m i),\; "
                     rf"\omega_m = {base:g}^{{-2m/{D}}}:\; " + latex)
            b.pe_kind = kind
            return
        b.define(f"p_i[2m] = sin(omega_m i), p_i[2m+1] = cos(omega_m i), omega_m = {base:g}^(-2m/{D}): "
                 + text,
                 rf"p_i[2m] = \sin(\omega_m i),\; p_i[2m+1] = \cos(\omega_m i),\; "
                 rf"\omega_m = {base:g}^{{-2m/{D}}}:\; " + latex)
    else:
        funcs = [b.table.table(f"P_{a}", "P", (ARG, a), shape=("n+", D)) for a in range(D)]
        b.pe = InputPE(sp.Matrix([f(I_POS) for f in funcs]), sp.Matrix([f(J_POS) for f in funcs]))
        b.define(f"p_i[a] = P_a(i): row i of a learned table P ({max_len} x {D}), no structure",
                 rf"p_i[a] = P_a(i):\ \text{{row }} i \text{{ of a learned table }} P"
                 rf"\ ({max_len}\times {D})")
    b.pe_kind = kind


def _alibi(b: Build, spec: ALiBi, n_heads: int) -> sp.Expr:
    i, j = I_POS, J_POS
    slopes = [b.table.parameter(f"m_{h}", s)
              for h, s in enumerate(cv.alibi_slopes(n_heads, spec.slopes))]
    m = sp.Symbol("m_h", positive=True)
    shape = (lambda s: -s * sp.Abs(i - j)) if spec.direction == "symmetric" else \
        (lambda s: sp.Piecewise((-s * (i - j), i - j >= 0), (0, True)))
    for h, head in enumerate(b.heads):
        head.bias = shape(slopes[h])
    display = shape(m)
    rule = "2^(-8h/H), standard extension" if spec.slopes == "press" else "exp(-h/H)"
    text, latex = _values(slopes, b.table)
    b.define(f"slopes ({spec.slopes}: {rule}, heads h = 1..H listed in order): {text}",
             rf"\text{{slopes ({spec.slopes})}}:\; {latex}")
    if spec.direction == "causal":
        b.define("causal: entries with j > i are masked by the attention mask",
                 r"\text{causal: } j > i \text{ masked}")
    return display


def _t5(b: Build, spec: RelativeBias, n_heads: int) -> sp.Expr:
    i, j = I_POS, J_POS
    cv.t5_check(spec.num_buckets, spec.max_distance)
    nb, md = spec.num_buckets, spec.max_distance
    beta = b.table.table("beta", None, exact=lambda k: cv.t5_bucket(k, nb, md))
    for h, head in enumerate(b.heads):
        bh = b.table.table(f"b_{h}", "bias", (h, ARG), shape=(n_heads, nb))
        head.bias = bh(beta(j - i))
    display = sp.Function("b_h")(sp.Function("beta")(j - i))
    k = sp.Symbol("k", integer=True)
    formula = cv.t5_bucket_formula(k, nb, md)
    b.define(f"b_h: learned table of head h ({nb} buckets); T5 bucket of k = j - i: "
             f"beta(k) = {sp.sstr(formula)}",
             rf"b_h:\ \text{{learned, {nb} buckets}};\; \beta(k) = {sp.latex(formula)}")
    return display


def _table(b: Build, spec: RelativeBias, n_heads: int) -> sp.Expr:
    i, j = I_POS, J_POS
    md = spec.max_distance
    for h, head in enumerate(b.heads):
        bh = b.table.table(f"b_{h}", "bias", (h, ARG), offset=md,
                           shape=(n_heads, 2 * md + 1))
        head.bias = bh(cv.table_index(i - j, md))
    display = sp.Function("b_h")(cv.table_index(i - j, md))
    b.define(f"b_h: learned table of head h, one value per offset i - j in [-{md}, {md}]",
             rf"b_h:\ \text{{learned, one value per offset }} i-j \in [-{md}, {md}]")
    return display


#: The kernel-expression functions in sympy (posenc.encodings.expression.FUNCTIONS).
SYMPY_FUNCTIONS = {"abs": sp.Abs, "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt, "sin": sp.sin,
                   "cos": sp.cos, "tanh": sp.tanh, "sign": sp.sign, "min": sp.Min, "max": sp.Max}


def _custom_kernel(b: Build, spec: Custom, n_heads: int) -> sp.Expr:
    fns = SYMPY_FUNCTIONS
    display = spec.kernel.evaluate(I_POS - J_POS, fns, {"pi": sp.pi, "e": sp.E})
    display = sp.sympify(display)
    for head in b.heads:
        head.bias = display
    b.define(f"g(k) = {spec.kernel.text} with k = i - j (the same for every head)",
             rf"g(k) = {sp.latex(spec.kernel.evaluate(sp.Symbol('k'), fns, {'pi': sp.pi, 'e': sp.E}))}")
    return display


def _kerple_log(b: Build, spec: KerpleLog, n_heads: int) -> sp.Expr:
    """KERPLE-log: b_h(i, j) = -r1_h log(1 + r2_h |i - j|), r1_h, r2_h > 0 learned per head."""
    i, j = I_POS, J_POS
    r1 = b.table.parameter("r_1", cv.exact(spec.r1), positive=True)
    r2 = b.table.parameter("r_2", cv.exact(spec.r2), positive=True)
    display = -r1 * sp.log(1 + r2 * sp.Abs(i - j))
    for head in b.heads:
        head.bias = display
    text, latex = _values([r1, r2], b.table)
    b.define(f"KERPLE-log: r_1, r_2 > 0 learned per head (initial values, the same for every "
             f"head): {text}", rf"\text{{KERPLE-log, initial}}:\; {latex}")
    return display


#: bias part kind -> builder (sets every head's bias, returns the displayed b_h(i, j)).
BIAS_FORMULAS = {"alibi": _alibi, "t5": _t5, "table": _table, "kernel": _custom_kernel,
                 "kerple_log": _kerple_log}


def _bias(b: Build, part: Part, spec: PESpec, n_heads: int) -> None:
    builder = BIAS_FORMULAS.get(part.kind)
    if builder is None:
        raise unknown_part("theory", part, spec)
    display = builder(b, part.spec, n_heads)
    b.bias_text, b.bias_latex = sp.sstr(display), sp.latex(display)


def _rotary(b: Build, planes: list[cv.Plane], heads: list[int], pairing: str, rotary_dims: int,
            note: str, scale: sp.Expr = sp.Integer(1)) -> None:
    """Rotate the planes of ``heads``; ``scale``: scaled RoPE's attention factor s on q and k of
    every rotary plane (those p-RoPE stops too), so each plane's term gets s^2."""
    syms = {}
    for m, (a, c, theta) in enumerate(planes):
        if theta != 0 or scale != 1:
            syms[m] = (a, c, b.table.parameter(f"theta_{m}", theta))
    s = b.table.parameter("s", scale, positive=True) if scale != 1 else sp.Integer(1)
    for h in heads:
        for path in b.heads[h].paths:
            path.planes = list(syms.values())
            path.scale = s
    if pairing == "interleaved":
        pt, pl = "(W u)_{2m} + i (W u)_{2m+1}", r"(Wu)_{2m} + \mathrm{i}\,(Wu)_{2m+1}"
    else:
        pt, pl = f"(W u)_m + i (W u)_(m+{rotary_dims // 2})", \
            rf"(Wu)_m + \mathrm{{i}}\,(Wu)_{{m+{rotary_dims // 2}}}"
    b.define(f"q~_m(u), k~_m(u) = {pt} with W = W_q, W_k ({pairing} pairing); {note}",
             rf"\tilde q_m(u),\,\tilde k_m(u) = {pl},\ W = W_q, W_k\ \text{{({pairing})}}")
    if syms:
        text, latex = _values([s for _, _, s in syms.values()], b.table)
        b.define(f"angles: {text}", rf"\text{{angles}}:\; {latex}")
    if scale != 1:
        b.define(f"attention factor s = {sp.sstr(scale)} = {float(scale):.6g} multiplies q~_m and "
                 f"k~_m (cos and sin), so each rotary term carries s^2 = {float(scale) ** 2:.6g}: "
                 f"softmax(s^2 q.k / sqrt(d)) on those planes (an attention temperature, as in YaRN)",
                 rf"s = {sp.latex(scale)}:\; \tilde q_m, \tilde k_m \mapsto s\,\tilde q_m, "
                 rf"s\,\tilde k_m,\ \text{{each rotary term}} \times s^2")
    dropped = [m for m, (_, _, th) in enumerate(planes) if th == 0]
    if dropped:
        b.define(f"planes {dropped} do not rotate (p-RoPE keeps the highest frequencies)",
                 rf"\text{{planes }} {dropped} \text{{ do not rotate (p-RoPE)}}")


def _standard_heads(b: Build, head_dim: int, n_heads: int) -> None:
    D = b.c_i.shape[0]
    for h in range(n_heads):
        wq = b.table.matrix("W_q", head_dim, D, h, n_heads)
        wk = b.table.matrix("W_k", head_dim, D, h, n_heads)
        b.heads.append(HeadModel([Path("", (wq,), (wk,), [])]))


def _rope(b: Build, spec: RoPE, head_dim: int, n_heads: int) -> None:
    heads = [h for h in range(n_heads) if spec.applies_to(h, n_heads)]
    r = spec.rotary_dims(head_dim)
    note = f"rotary dims 0..{r - 1} of {head_dim}, base {spec.base:g}, theta_m = base^(-2m/{r})"
    if len(heads) < n_heads:
        note += f"; RoPE on heads {heads} only"
    if spec.scaling != "none":
        b.define(*rope_scaling.scaling_text(spec, r))
        note += f"; the angles below are the rescaled theta'_m ({spec.scaling})"
    _rotary(b, cv.rope_planes(spec, head_dim), heads, spec.pairing, r, note,
            rope_scaling.attention_factor(spec))


def _frequencies(b: Build, spec: Custom, head_dim: int, n_heads: int) -> None:
    planes = cv.frequency_planes(spec.frequencies, head_dim)
    _rotary(b, planes, list(range(n_heads)), "interleaved", 2 * len(planes),
            "plane m = dims (2m, 2m+1) rotates by f_m per position")


def _xpos(b: Build, spec: XPos, head_dim: int, n_heads: int) -> None:
    """xPos: RoPE on every dim (interleaved) with plane m decaying by lambda_m^(i - j),
    lambda_m = zeta_m^(1/scale_base), zeta_m = (2m/d + gamma)/(1 + gamma)."""
    planes = cv.xpos_planes(spec, head_dim)
    _rotary(b, [(a, c, th) for a, c, th, _ in planes], list(range(n_heads)), "interleaved",
            head_dim, f"xPos: base {spec.base:g}, theta_m = base^(-2m/{head_dim}); q_i scaled by "
            f"lambda_m^i, k_j by lambda_m^(-j)")
    lams = [b.table.parameter(f"lambda_{m}", lam, positive=True)
            for m, (_, _, _, lam) in enumerate(planes)]
    for head in b.heads:
        for path in head.paths:
            path.decay = {a: lam for (a, _, _, _), lam in zip(planes, lams)}
    text, latex = _values(lams, b.table)
    b.define(f"decay lambda_m = ((2m/{head_dim} + {spec.gamma:g})/(1 + {spec.gamma:g}))^(1/"
             f"{spec.scale_base:g}): {text}", rf"\lambda_m:\; {latex}")


#: rotary part kind -> builder (sets the planes of every rotated path).
ROTARY_FORMULAS = {"rope": _rope, "frequencies": _frequencies, "xpos": _xpos}


def _not_toeplitz(b: Build, spec: MLA, head_dim: int, n_heads: int) -> None:
    """mla:rope=paper_code: not a rotation, so no Toeplitz form (one line, posenc.encodings.parts)."""
    raise not_toeplitz(spec)


def _absolute(b: Build, part: Part, spec: PESpec) -> None:
    if part.kind == "sinusoidal":
        _input_pe(b, "sinusoidal", part.spec.base, layout=part.spec.layout)
    elif part.kind == "learned":
        _input_pe(b, "learned", max_len=(part.spec or LearnedAbsolute()).max_len)
    else:
        raise unknown_part("theory", part, spec)


def build(spec: PESpec, head_dim: int, model_dim: int, n_heads: int) -> Build:
    """Symbolic heads for ``spec`` at the given (small, concrete) dims (parts in their order)."""
    parts = structure(spec)
    table = SymbolTable()
    b = Build(table, table.content(model_dim, "query"), table.content(model_dim, "key"), [])
    if parts.mla is None:
        _standard_heads(b, head_dim, n_heads)
    rot = ""
    for part in parts.parts:
        if part.role == "mla" and part.kind in MLA_FORMULAS:
            MLA_FORMULAS[part.kind](b, part.spec, head_dim, n_heads)
        elif part.role == "absolute":
            _absolute(b, part, spec)
        elif part.role == "bias" and parts.mla is None:
            _bias(b, part, spec, n_heads)
        elif part.role == "rotary" and part.kind in ROTARY_FORMULAS and parts.mla is None:
            ROTARY_FORMULAS[part.kind](b, part.spec, head_dim, n_heads)
            rot = "R_i "
        else:
            raise unknown_part("theory", part, spec)
    if parts.mla is not None:
        b.model_text = "<W_uq W_dq x_i, W_uk W_dkv x_j> + <R_i W_qr W_dq x_i, R_j W_kr x_j>"
    else:
        bias = " + b_h(i, j)" if any(h.bias is not None for h in b.heads) else ""
        b.model_text = f"<{rot}W_q x_i, {rot.replace('i', 'j')}W_k x_j>{bias}"
    x = "c_i + p_i" if b.pe else "c_i"
    b.model_text = f"L^h_ij = {b.model_text}, x_i = {x}"
    return b


def _mla(b: Build, spec: MLA, head_dim: int, n_heads: int) -> None:
    D = b.c_i.shape[0]
    lq = spec.q_latent or min(4 * head_dim, D)
    lkv = spec.kv_latent or min(4 * head_dim, D)
    r = spec.resolved_rope_dim(head_dim)
    t = b.table
    w_dq, w_dkv = t.matrix("W_dq", lq, D), t.matrix("W_dkv", lkv, D)
    w_kr_shared = t.matrix("W_kr", r, D) if spec.shared_rope_key else None
    for h in range(n_heads):
        w_uq = t.matrix("W_uq", head_dim, lq, h, n_heads)
        w_uk = t.matrix("W_uk", head_dim, lkv, h, n_heads)
        w_qr = t.matrix("W_qr", r, lq, h, n_heads)
        w_kr = w_kr_shared if w_kr_shared is not None else t.matrix("W_kr", r, D, h, n_heads)
        b.heads.append(HeadModel([
            Path("content path", (w_uq, w_dq), (w_uk, w_dkv), [], "W_uq W_dq", "W_uk W_dkv",
                 r"W_{uq} W_{dq}", r"W_{uk} W_{dkv}"),
            Path("rotary path", (w_qr, w_dq), (w_kr,), [], "W_qr W_dq", "W_kr",
                 r"W_{qr} W_{dq}", r"W_{kr}")]))
    planes = [(2 * m, 2 * m + 1, cv.exact(spec.base) ** sp.Rational(-2 * m, r)) for m in range(r // 2)]
    syms = [(a, c, t.parameter(f"theta_{m}", th)) for m, (a, c, th) in enumerate(planes)]
    for head in b.heads:
        head.paths[1].planes = list(syms)
    b.define(f"latents: q {lq}, kv {lkv}; content head dim {head_dim}; decoupled RoPE dim {r} "
             f"(interleaved), key {'shared across heads' if spec.shared_rope_key else 'per head'}",
             rf"\text{{latents }} {lq}, {lkv};\ \text{{RoPE dim }} {r}")
    b.define("q~_m(u) = (W_qr W_dq u)_{2m} + i (W_qr W_dq u)_{2m+1}, "
             "k~_m(u) = (W_kr u)_{2m} + i (W_kr u)_{2m+1}",
             r"\tilde q_m(u) = (W_{qr}W_{dq}u)_{2m} + \mathrm{i}\,(W_{qr}W_{dq}u)_{2m+1},\; "
             r"\tilde k_m(u) = (W_{kr}u)_{2m} + \mathrm{i}\,(W_{kr}u)_{2m+1}")
    text, latex = _values([s for _, _, s in syms], t)
    b.define(f"angles: {text}", rf"\text{{angles}}:\; {latex}")


#: mla part kind -> builder (the heads' content and decoupled-RoPE paths).
MLA_FORMULAS = {"mla": _mla, "mla_paper_code": _not_toeplitz}
