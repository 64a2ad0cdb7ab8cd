"""Scaled RoPE frequencies and attention factor in exact sympy arithmetic.

Written from the conventions in :mod:`posenc.encodings.rope_scaling` (transformers'
``ROPE_INIT_FUNCTIONS``), independently of the numeric and torch layers.  Values stay exact:
a linear or LongRoPE frequency is ``base^(-2m/r)`` over a rational, NTK-aware ones have a
rational power of the base, YaRN's ramp is rational (its ends are the floor and ceiling of an
exact logarithm) and Llama 3's smooth factor carries pi.

``scaled_angles(spec, r) -> [theta'_m]``   m = 0 .. r/2 - 1, before any p-RoPE mask
``attention_factor(spec) -> sp.Expr``      s (exact: YaRN 1 + ln(f)/10, LongRoPE
                                           sqrt(1 + ln f / ln L); 1 otherwise)
``scaling_text(spec, r) -> str``           what the scaling does to the logit, one line
"""

from __future__ import annotations

import sympy as sp

from ..encodings import RoPE


def _exact(value: float) -> sp.Expr:
    return sp.nsimplify(value, rational=True)


def _yarn_ramp(spec: RoPE, r: int) -> list[sp.Expr]:
    base, L = _exact(spec.base), sp.Integer(spec.original)

    def plane(rotations: sp.Expr) -> sp.Expr:       # the plane turning ``rotations`` times in L
        return r * sp.log(L / (2 * sp.pi * rotations)) / (2 * sp.log(base))

    low = sp.Max(sp.floor(plane(_exact(spec.beta_fast))), 0)
    high = sp.Min(sp.ceiling(plane(_exact(spec.beta_slow))), r - 1)
    width = high - low if high != low else sp.Rational(1, 1000)
    return [sp.Min(sp.Max((m - low) / width, 0), 1) for m in range(r // 2)]


def _below(a: sp.Expr, b: sp.Expr) -> bool:
    """a < b for exact constants, decided at 60 digits."""
    return bool(sp.N(a - b, 60) < 0)


def scaled_angles(spec: RoPE, r: int) -> list[sp.Expr]:
    """theta'_m of the spec's scaling, exact."""
    kind, f, base = spec.scaling, _exact(spec.factor), _exact(spec.base)
    L = sp.Integer(spec.original)
    if kind == "ntk":
        base = base * f ** sp.Rational(r, r - 2)
    elif kind == "dynamic":
        length = sp.Integer(max(spec.seq_len, spec.original))
        base = base * (f * length / L - (f - 1)) ** sp.Rational(r, r - 2)
    theta = [base ** sp.Rational(-2 * m, r) for m in range(r // 2)]
    if kind == "linear":
        return [t / f for t in theta]
    if kind == "yarn":
        return [t * (1 - g) + t / f * g for t, g in zip(theta, _yarn_ramp(spec, r))]
    if kind == "llama3":
        lo, hi = _exact(spec.low_freq_factor), _exact(spec.high_freq_factor)
        out = []
        for t in theta:
            wave = 2 * sp.pi / t
            if _below(wave, L / hi):
                out.append(t)
            elif _below(L / lo, wave):
                out.append(t / f)
            elif hi == lo:          # Llama 4: no band between (w = L / lo exactly: kept)
                out.append(t)
            else:
                a = (L / wave - lo) / (hi - lo)
                out.append((1 - a) * t / f + a * t)
        return out
    if kind == "longrope":
        long = spec.seq_len is not None and spec.seq_len > spec.original
        ext = spec.long_factor if long else spec.short_factor
        return [t / _exact(e) for t, e in zip(theta, ext)]
    return theta


def attention_factor(spec: RoPE) -> sp.Expr:
    if spec.scaling not in ("yarn", "longrope"):
        return sp.Integer(1)
    if spec.attention_factor is not None:
        return _exact(spec.attention_factor)
    f = _exact(spec.factor)
    if f <= 1:
        return sp.Integer(1)
    if spec.scaling == "yarn":
        return 1 + sp.log(f) / 10
    return sp.sqrt(1 + sp.log(f) / sp.log(sp.Integer(spec.original)))


def scaling_text(spec: RoPE, r: int) -> tuple[str, str]:
    """(text, LaTeX) of what the scaling does to the logit."""
    f = f"{spec.factor:g}"
    rule = {
        "linear": (f"theta'_m = theta_m / {f}", rf"\theta'_m = \theta_m / {f}"),
        "ntk": (f"theta'_m = (base {f}^({r}/{r - 2}))^(-2m/{r})",
                rf"\theta'_m = (\mathrm{{base}}\cdot {f}^{{{r}/{r - 2}}})^{{-2m/{r}}}"),
        "dynamic": (f"theta'_m = (base ({f} N/{spec.original} - {spec.factor - 1:g})^({r}/{r - 2}))"
                    f"^(-2m/{r}) at N = {max(spec.seq_len or 0, spec.original)} (the length it "
                    f"scales for: another length gives other frequencies)",
                    rf"\theta'_m = \left(\mathrm{{base}}\,({f} N/{spec.original} - "
                    rf"{spec.factor - 1:g})^{{{r}/{r - 2}}}\right)^{{-2m/{r}}},\ N = "
                    rf"{max(spec.seq_len or 0, spec.original)}"),
        "yarn": (f"theta'_m = (1 - gamma_m) theta_m + gamma_m theta_m / {f}, gamma_m the YaRN ramp "
                 f"(beta_fast {spec.beta_fast:g}, beta_slow {spec.beta_slow:g}, original "
                 f"{spec.original})",
                 rf"\theta'_m = (1-\gamma_m)\,\theta_m + \gamma_m\,\theta_m/{f}"),
        "llama3": (f"theta'_m = theta_m (wavelength < {spec.original}/{spec.high_freq_factor:g}), "
                   f"theta_m / {f} (wavelength > {spec.original}/{spec.low_freq_factor:g}), smooth "
                   f"between", rf"\theta'_m \in [\theta_m/{f}, \theta_m]\ \text{{(Llama 3.1)}}"),
        "longrope": ("theta'_m = theta_m / e_m, e = "
                     + ("long_factor" if spec.seq_len is not None and spec.seq_len > spec.original
                        else "short_factor") + f" (seq_len {spec.seq_len}, original {spec.original})",
                     r"\theta'_m = \theta_m / e_m"),
    }[spec.scaling]
    text = (f"{spec.scaling} scaling: the kernel is RoPE's Toeplitz kernel e^(i theta'_m (i - j)) at "
            f"rescaled frequencies, {rule[0]}")
    latex = (rf"\text{{{spec.scaling} scaling: RoPE's Toeplitz kernel at rescaled frequencies}}\;"
             + rule[1])
    return text, latex
