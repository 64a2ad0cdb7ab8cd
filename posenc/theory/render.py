"""Text, LaTeX and JSON renderings of a :class:`~posenc.theory.form.LogitForm`.

The per-term formulas are written from the same structure that produced the
term's sympy expressions (path maps, sources, rotating planes); bias terms and
special-case results are printed by sympy itself (``sstr`` / ``latex``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sympy as sp

if TYPE_CHECKING:  # pragma: no cover
    from .builders import Build
    from .form import LogitForm
    from .heads import TermSlot

_SRC = {"c": ("c_i", "c_j"), "p": ("p_i", "p_j")}


def _wrap(name: str) -> str:
    return f"({name})" if " " in name else name


def slot_text(slot: "TermSlot", b: "Build") -> str:
    if slot.structure == "bias":
        return b.bias_text
    ui, uj = _SRC[slot.sources[0]][0], _SRC[slot.sources[1]][1]
    path = slot.path
    assert path is not None
    if slot.structure == "rotary":
        decay = "lambda_m^(i - j) " if path.decay else ""
        decay = ("s^2 " if path.scale != 1 else "") + decay
        return f"sum_m {decay}Re[q~_m({ui}) conj(k~_m({uj})) e^(i theta_m (i - j))]"
    q, k = _wrap(path.q_text), _wrap(path.k_text)
    if slot.full:
        return f"{ui}^T {q}^T {k} {uj}"
    return f"sum_(a not rotated) ({path.q_text} {ui})_a ({path.k_text} {uj})_a"


def slot_latex(slot: "TermSlot", b: "Build") -> str:
    if slot.structure == "bias":
        return b.bias_latex
    ui, uj = _SRC[slot.sources[0]][0], _SRC[slot.sources[1]][1]
    path = slot.path
    assert path is not None
    if slot.structure == "rotary":
        decay = r"\lambda_m^{i-j}\," if path.decay else ""
        decay = (r"s^2\," if path.scale != 1 else "") + decay
        return (rf"\sum_m {decay}\operatorname{{Re}}\left[\tilde q_m({ui})\,\overline{{\tilde k_m({uj})}}"
                rf"\,e^{{\mathrm{{i}}\theta_m (i-j)}}\right]")
    q, k = _wrap(path.q_latex), _wrap(path.k_latex)
    if slot.full:
        return rf"{ui}^\top {q}^\top {k}\, {uj}"
    return rf"\sum_{{a \notin \mathrm{{rot}}}} ({path.q_latex} {ui})_a ({path.k_latex} {uj})_a"


def join_terms(parts: list[str]) -> str:
    """``a + b + -c`` -> ``a + b - c``."""
    out = parts[0] if parts else "0"
    for p in parts[1:]:
        out += f" - {p[1:].lstrip()}" if p.startswith("-") else f" + {p}"
    return out


def _heads_note(form: "LogitForm", heads: tuple[int, ...]) -> str:
    return "" if len(heads) == form.n_heads else f"  [heads {list(heads)}]"


def _verdict_text(v: Any) -> str:
    if v is None:
        return "not analysed"
    if v.status == "position-free":
        return "Toeplitz (position-free)"
    if v.status == "toeplitz":
        return "Toeplitz: proved, " + v.detail
    if v.status == "not-toeplitz":
        return "NOT Toeplitz: " + v.detail
    return "undecided: " + v.detail


def form_text(form: "LogitForm") -> str:
    spec, a = form.spec, form.analysis
    lines = [f"{spec.to_string()}"]
    derived = a.family if a else "(not derived)"
    agree = "" if a is None else ("  [agree]" if a.family == spec.family else "  [DISAGREE]")
    lines.append(f"  family: declared {spec.family}, derived {derived}{agree}")
    lines.append(f"  dims: head dim d = {form.head_dim}, model width D = {form.model_dim}, "
                 f"heads H = {form.n_heads} (weights and content symbolic)")
    lines.append(f"  model: {form.model_text}")
    lines.append("  form:  L^h_ij = " + join_terms([t.text for t in form.terms]))
    lines.append("  terms:")
    for t in form.terms:
        lines.append(f"    {t.name}: {t.text}{_heads_note(form, t.heads)}")
        lines.append(f"      {_verdict_text(t.toeplitz)}")
    if form.definitions:
        lines.append("  where:")
        lines += [f"    {d.text}" for d in form.definitions]
    if a is not None:
        ok = all(a.decomposition_proved)
        lines.append("  decomposition: sum of terms = model computation "
                     + ("proved symbolically for every head" if ok else
                        f"NOT proved for heads {[h for h, p in enumerate(a.decomposition_proved) if not p]}"))
        reasons = sorted(set(h.reason() + f" -> {h.family}" for h in a.heads))
        lines.append("  classification: " + "; ".join(reasons))
        for case in a.special_cases:
            result = f"= {case.result_text} ({'proved' if case.proved else 'NOT proved'}), " \
                if case.result_text else ""
            lines.append(f"  special case {case.assumption}: {case.term} {result}"
                         f"{_verdict_text(case.toeplitz)}")
    return "\n".join(lines)


def form_latex(form: "LogitForm") -> str:
    a = form.analysis
    lines = [rf"% {form.spec.to_string()}: declared {form.spec.family}, derived "
             rf"{a.family if a else '-'}",
             r"\begin{aligned}",
             r"L^h_{ij} &= " + r" \\ &\quad ".join(
                 t.latex if n == 0 or t.latex.lstrip().startswith("-") else "+ " + t.latex
                 for n, t in enumerate(form.terms)) + r" \\"]
    for d in form.definitions:
        lines.append(rf"&\quad {d.latex} \\")
    lines.append(r"\end{aligned}")
    if a is not None:
        for case in a.special_cases:
            if case.result_latex:
                lines.append(rf"% {case.assumption}: {case.result_latex}")
    return "\n".join(lines)


def form_dict(form: "LogitForm") -> dict[str, Any]:
    a = form.analysis
    out: dict[str, Any] = {
        "spec": form.spec.to_string(), "spec_dict": form.spec.to_dict(),
        "declared_family": form.spec.family, "derived_family": a.family if a else None,
        "head_dim": form.head_dim, "model_dim": form.model_dim, "n_heads": form.n_heads,
        "model": form.model_text,
        "text": "L^h_ij = " + join_terms([t.text for t in form.terms]),
        "latex": "L^h_{ij} = " + join_terms([t.latex for t in form.terms]),
        "terms": [t.to_dict() for t in form.terms],
        "definitions": [{"text": d.text, "latex": d.latex} for d in form.definitions],
        "parameters": {s.name: {"exact": sp.sstr(v), "value": float(v)}
                       for s, v in form.parameters.items()},
        "inputs": {k: list(v) for k, v in form.inputs().items()},
    }
    if a is not None:
        out["decomposition_proved"] = list(a.decomposition_proved)
        out["heads"] = [{"family": h.family, "block": h.block, "cross_terms": h.cross_terms,
                         "bias": h.bias, "reason": h.reason()} for h in a.heads]
        out["special_cases"] = [c.to_dict() for c in a.special_cases]
    return out
