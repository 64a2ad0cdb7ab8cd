"""Scaled RoPE (context extension) as catalogue data: the scaling kinds, the parameters each one
reads, and their validation.  Pure data: no numpy, sympy or torch.

The conventions are transformers' ``ROPE_INIT_FUNCTIONS`` (``modeling_rope_utils``, 5.x), written
out here so that each layer implements them independently (``theta_m = base^(-2m/r)`` the
unscaled frequency of plane m of the r rotary dims, ``f`` = ``factor``, ``L`` = ``original``, the
context the model was trained for; ``s`` the attention factor):

``linear``    (Chen et al. 2023, position interpolation): ``theta'_m = theta_m / f``; s = 1.
``ntk``       (static NTK-aware, bloc97 2023): the base becomes ``base f^(r/(r-2))``; s = 1.
``dynamic``   (dynamic NTK, emozilla 2023): the base becomes
              ``base ((f N / L) - (f - 1))^(r/(r-2))`` with ``N = max(seq_len, L)`` the sequence
              length it scales for (``seq_len``: transformers recomputes it per forward pass; a
              spec states it); s = 1.
``yarn``      (Peng et al. 2023): with ``d(b) = r ln(L / (2 pi b)) / (2 ln base)``,
              ``low = max(floor(d(beta_fast)), 0)``, ``high = min(ceil(d(beta_slow)), r - 1)``
              (``high = low + 0.001`` when equal) and the ramp
              ``gamma_m = clamp((m - low) / (high - low), 0, 1)``:
              ``theta'_m = theta_m (1 - gamma_m) + (theta_m / f) gamma_m`` (high frequencies kept,
              low ones interpolated); ``s = attention_factor``, by default ``0.1 ln f + 1`` (1 for
              f <= 1).
``llama3``    (Meta, Llama 3.1): with wavelength ``w_m = 2 pi / theta_m``: ``theta_m`` where
              ``w_m < L / high_freq_factor``, ``theta_m / f`` where ``w_m > L / low_freq_factor``,
              and between them ``(1 - a) theta_m / f + a theta_m`` with
              ``a = (L / w_m - low_freq_factor) / (high_freq_factor - low_freq_factor)``; s = 1.
              ``low_freq_factor == high_freq_factor`` (Llama 4: both 1) has no band between:
              ``theta_m / f`` where ``w_m > L / low_freq_factor``, else ``theta_m`` (transformers
              warns and computes the same, its 0/0 falling only on ``w_m`` exactly that).
``longrope``  (Ding et al. 2024; Phi-3): ``theta'_m = theta_m / e_m`` with ``e = long_factor`` when
              ``seq_len > L``, else ``short_factor`` (one entry per plane, r/2 of them);
              ``s = attention_factor``, by default ``sqrt(1 + ln f / ln L)`` (1 for f <= 1).

The attention factor s multiplies the cosine and sine tables (transformers: ``cos * s``,
``sin * s``), so it scales the query and the key on every rotary dim: each rotary plane's term
of the logit is multiplied by ``s^2`` (YaRN's temperature ``1/sqrt(t) = s``: the softmax sees
``s^2 q.k / sqrt(d)``); dims that do not rotate (``fraction < 1``) and heads without RoPE are
not scaled.
"""

from __future__ import annotations

from typing import Any

from ..coerce import is_int, is_number, shown
from ..errors import PosencError
from ..limits import MAX_SCALE, MAX_SEQ_LEN, MIN_SCALE

#: scaling kind -> what it does to the frequencies (``posenc encodings`` prints it).
SCALINGS: dict[str, str] = {
    "none": "theta_m = base^(-2m/r) (no scaling)",
    "linear": "theta_m / factor (position interpolation)",
    "ntk": "static NTK-aware: base -> base factor^(r/(r-2))",
    "dynamic": "dynamic NTK: base -> base ((factor seq_len/original) - (factor-1))^(r/(r-2)), "
               "seq_len = the length it scales for",
    "yarn": "YaRN: ramp between theta_m (fast planes, beta_fast) and theta_m/factor (slow, "
            "beta_slow); attention factor 0.1 ln(factor) + 1 unless given",
    "llama3": "Llama 3.1: theta_m / factor past wavelength original/low_freq_factor, theta_m "
              "below original/high_freq_factor, smooth between",
    "longrope": "LongRoPE: theta_m / long_factor[m] when seq_len > original, else / "
                "short_factor[m]; attention factor sqrt(1 + ln factor / ln original) unless given",
}

#: The RoPE fields that belong to scaling, with their defaults (left out of ``to_dict`` and
#: ``to_string`` at these values, so that an unscaled spec serialises as it did before).
DEFAULTS: dict[str, Any] = {
    "scaling": "none", "factor": 1.0, "original": 4096, "seq_len": None, "beta_fast": 32.0,
    "beta_slow": 1.0, "attention_factor": None, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "short_factor": None, "long_factor": None,
}

#: scaling kind -> the parameters (besides ``scaling``) it reads.
USES: dict[str, tuple[str, ...]] = {
    "none": (),
    "linear": ("factor",),
    "ntk": ("factor",),
    "dynamic": ("factor", "original", "seq_len"),
    "yarn": ("factor", "original", "beta_fast", "beta_slow", "attention_factor"),
    "llama3": ("factor", "original", "low_freq_factor", "high_freq_factor"),
    "longrope": ("factor", "original", "seq_len", "attention_factor", "short_factor",
                 "long_factor"),
}

#: Kinds whose base change has the exponent r/(r-2): they need r >= 4 rotary dims.
BASE_CHANGE = ("ntk", "dynamic")


def _fail(msg: str) -> None:
    raise PosencError(f"rope: {msg}")


#: what a scaling number must be, for messages
SCALE_RANGE = f"a positive number at least {MIN_SCALE:g} and at most {MAX_SCALE:g}"


def in_scale_range(value: Any) -> bool:
    """A number in [MIN_SCALE, MAX_SCALE] (compared as is: a huge int never meets float(); NaN
    fails every comparison)."""
    return is_number(value) and MIN_SCALE <= value <= MAX_SCALE


def _positive(name: str, value: Any) -> None:
    """A number in [MIN_SCALE, MAX_SCALE] (:data:`posenc.limits.MIN_SCALE`: a factor of 1e-300
    made frequencies of 1e300)."""
    if not in_scale_range(value):
        _fail(f"{name} must be {SCALE_RANGE}; got {shown(value)}")


def _length(name: str, value: Any) -> None:
    if not (is_int(value) and value >= 1):
        _fail(f"{name} must be a positive integer; got {value!r}")
    if value > MAX_SEQ_LEN:
        _fail(f"{name}={value} exceeds the limit {MAX_SEQ_LEN}")


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return ";".join(_text(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else repr(value) if isinstance(value, str) \
        else str(value)


def validate(spec: Any) -> None:
    """The scaling fields of a RoPE spec: one clear :class:`PosencError` line per mistake."""
    kind = spec.scaling
    if kind not in SCALINGS:
        _fail(f"scaling must be one of {', '.join(SCALINGS)}; got {kind!r}")
    uses = USES[kind]
    for name, default in DEFAULTS.items():
        value = getattr(spec, name)
        if name != "scaling" and name not in uses and value != default:
            users = [k for k, u in USES.items() if name in u]
            where = ("a scaling (" + ", ".join(users) + ")" if len(users) == len(USES) - 1
                     else "scaling=" + " or ".join(users))
            _fail(f"{name} needs {where}; got {name}={_text(value)} with scaling={kind}")
    if kind == "none":
        return
    _positive("factor", spec.factor)
    _length("original", spec.original)
    if spec.seq_len is not None:
        _length("seq_len", spec.seq_len)
    if kind == "dynamic" and spec.seq_len is None:
        _fail("scaling=dynamic needs seq_len=N, the sequence length its frequencies are for "
              "(they change with the length)")
    if kind == "yarn":
        _positive("beta_fast", spec.beta_fast)
        _positive("beta_slow", spec.beta_slow)
        if not spec.beta_fast > spec.beta_slow:
            _fail(f"yarn needs beta_fast > beta_slow; got beta_fast={spec.beta_fast}, "
                  f"beta_slow={spec.beta_slow}")
    if spec.attention_factor is not None:
        _positive("attention_factor", spec.attention_factor)
    if kind == "llama3":
        _positive("low_freq_factor", spec.low_freq_factor)
        _positive("high_freq_factor", spec.high_freq_factor)
        if not spec.high_freq_factor >= spec.low_freq_factor:
            _fail(f"llama3 needs high_freq_factor >= low_freq_factor; got {spec.high_freq_factor} "
                  f"and {spec.low_freq_factor}")
    if kind == "longrope":
        for name in ("short_factor", "long_factor"):
            value = getattr(spec, name)
            if value is None:
                _fail(f"scaling=longrope needs {name}=F0;F1;... (one factor per rotary plane)")
            if not (isinstance(value, tuple) and value
                    and all(in_scale_range(v) for v in value)):
                text = ";".join(shown(v, 20) for v in value) if isinstance(value, tuple) \
                    else shown(value)
                _fail(f"{name} must be positive numbers F0;F1;... each at least {MIN_SCALE:g} and "
                      f"at most {MAX_SCALE:g}; got {text}")
        if spec.original < 2 and spec.attention_factor is None and spec.factor > 1:
            _fail("longrope's default attention factor sqrt(1 + ln factor / ln original) needs "
                  "original >= 2 (or give attention_factor)")
        if len(spec.short_factor) != len(spec.long_factor):
            _fail(f"short_factor and long_factor must have one entry per rotary plane each; got "
                  f"{len(spec.short_factor)} and {len(spec.long_factor)}")


def check_planes(spec: Any, rotary_dims: int) -> None:
    """What only the head's rotary width decides: longrope's list lengths, and r >= 4 for the
    base changes (their exponent is r/(r-2))."""
    if spec.scaling == "longrope" and len(spec.short_factor) != rotary_dims // 2:
        _fail(f"longrope factors have {len(spec.short_factor)} entries; the {rotary_dims} rotary "
              f"dims have {rotary_dims // 2} planes")
    if spec.scaling in BASE_CHANGE and rotary_dims < 4:
        _fail(f"scaling={spec.scaling} changes the base by the power r/(r-2): it needs at least "
              f"4 rotary dims; got {rotary_dims}")


def describe(spec: Any) -> str:
    """One line: the scaling and the parameters it reads (``""`` when unscaled)."""
    if spec.scaling == "none":
        return ""
    parts = []
    for name in USES[spec.scaling]:
        value = getattr(spec, name)
        if isinstance(value, tuple):
            value = ";".join(f"{v:g}" for v in value)
        elif value is None:
            value = "default" if name == "attention_factor" else "none"
        elif isinstance(value, float):
            value = f"{value:g}"
        parts.append(f"{name}={value}")
    return f"{spec.scaling} scaling ({', '.join(parts)})"
