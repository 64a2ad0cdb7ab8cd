"""The rotary part of ``--from-hf`` (:mod:`posenc.encodings.hf_config`): a config dict with its
class defaults (:class:`HFConfig`, which records the keys read), and transformers' rope
conventions (``rope_parameters`` / ``rope_scaling``, ``modeling_rope_utils`` 5.x) as a catalogue
:class:`~posenc.encodings.rotary.RoPE`."""

from __future__ import annotations

import json
import math
from typing import Any, Optional

from ..coerce import is_int, is_number, shown
from ..errors import PosencError
from ..limits import (MAX_BUCKETS, MAX_HEADS, MAX_POSITIONS, MAX_SCALE, MAX_SEQ_LEN, MAX_WIDTH,
                      MIN_BASE, MIN_SCALE)
from .base import PESpec
from .rotary import RoPE

#: rope type -> the keys of its rope_parameters dict that transformers reads (5.x validators).
ROPE_KEYS: dict[str, tuple[str, ...]] = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor",),
    "yarn": ("factor", "original_max_position_embeddings", "attention_factor", "beta_fast",
             "beta_slow", "mscale", "mscale_all_dim", "truncate"),
    "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor",
               "high_freq_factor"),
    "longrope": ("factor", "original_max_position_embeddings", "attention_factor",
                 "short_factor", "long_factor"),
}
#: model_type -> {old rope type: the one its transformers config class reads it as}.
ALIASES: dict[str, dict[str, str]] = {"phi3": {"su": "longrope", "yarn": "longrope"}}
#: Keys of a rope dict every type takes.
ROPE_COMMON = ("rope_type", "type", "rope_theta", "partial_rotary_factor")

#: transformers' default rope_theta (``RotaryEmbeddingConfigMixin.default_theta``; a config
#: class may set its own: its ``DEFAULTS`` entry ``rope_theta``).
DEFAULT_THETA = 10000.0

#: The largest RoPE base read (real models use at most ~1e8).
MAX_THETA = 1e15
#: key -> the largest value it may have: a number read is at most the bound (its lower end:
#: LOWER), an integer in [1, bound].  Keys not listed: numbers up to MAX_SCALE (scaling factors),
#: integers up to MAX_POSITIONS (lengths).
UPPER: dict[str, float] = {
    "rope_theta": MAX_THETA, "partial_rotary_factor": 1.0,
    **dict.fromkeys(("head_dim", "d_kv", "rotary_dim", "qk_rope_head_dim", "qk_nope_head_dim"),
                    MAX_WIDTH),
    **dict.fromkeys(("hidden_size", "n_embd", "d_model"), MAX_WIDTH * MAX_HEADS),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads"), MAX_HEADS),
    "relative_attention_num_buckets": MAX_BUCKETS, "relative_attention_max_distance": MAX_SEQ_LEN,
}


#: key -> (the smallest value a number read may have, whether that value itself is refused).
#: Keys not listed: MIN_SCALE, inclusive (scaling factors: 1/MAX_SCALE, as far below 1 as the
#: upper bound is above it).  A RoPE base must exceed 1 (:data:`posenc.limits.MIN_BASE`).
LOWER: dict[str, tuple[float, bool]] = {
    "rope_theta": (MIN_BASE, True), "partial_rotary_factor": (0.0, True),
}


class HFConfig:
    """The config dict with its class defaults, recording which keys a mapping read."""

    def __init__(self, data: dict, where: str, defaults: dict[str, Any],
                 layers: Optional[str] = None) -> None:
        self.data, self.where, self.defaults = data, where, defaults
        self.layers = layers              # the layer group to state (hf_layer_groups)
        self.model_type = data["model_type"]
        self.read: set[str] = {"model_type"}
        self.notes: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        value = self.data.get(key)
        return self.defaults.get(key, default) if value is None else value

    def raw(self, key: str) -> Any:
        """The value the file gives (no class default): for keys with several names."""
        self.read.add(key)
        return self.data.get(key)

    def given(self, key: str) -> bool:
        return self.data.get(key) is not None

    def refuse(self, keys: str, why: str) -> PosencError:
        return PosencError(f"{self.where}: {keys}: {why}")

    def ignore(self, keys: list[str]) -> None:
        """A note for keys that mention position and that transformers' code does not read."""
        if keys:
            shown_keys = ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
            self.notes.append(f"ignored {shown_keys}: transformers' {self.model_type} code does not "
                              f"read {'it' if len(keys) == 1 else 'them'}")

    def number(self, key: str, value: Any) -> float:
        """A number in [LOWER[key], UPPER[key]] (default [MIN_SCALE, MAX_SCALE]; the lower end
        open where LOWER says so); a huge int is compared, never converted (no OverflowError),
        and NaN fails every comparison."""
        hi = UPPER.get(key, MAX_SCALE)
        lo, open_lo = LOWER.get(key, (MIN_SCALE, False))
        if not (is_number(value) and (lo < value if open_lo else lo <= value) and value <= hi):
            what = (f"a number above {lo:g} and at most {hi:g} (a RoPE base)" if key == "rope_theta"
                    else f"a positive number at most {hi:g}" if open_lo
                    else f"a positive number at least {lo:g} and at most {hi:g}")
            raise self.refuse(key, f"must be {what}; got {shown(value)}")
        return float(value)

    def integer(self, key: str, value: Any) -> int:
        """An integer (an integral float too: JSON writers emit 2048.0) in [1, UPPER[key]]
        (default MAX_POSITIONS)."""
        hi = int(UPPER.get(key, MAX_POSITIONS))
        if not (is_number(value) and 1 <= value <= hi and (is_int(value) or value.is_integer())):
            raise self.refuse(key, f"must be an integer in [1, {hi}]; got {shown(value)}")
        return int(value)


def one_of(cfg: HFConfig, values: dict[str, Any], what: str) -> Any:
    """The one value given for ``what`` under several names (two that differ: refused)."""
    given = {k: v for k, v in values.items() if v is not None}

    def same(v: Any) -> Any:          # 10000 and 10000.0 are one value (equal, one hash)
        return v if is_number(v) else json.dumps(v, sort_keys=True)
    if len({same(v) for v in given.values()}) > 1:
        listed = ", ".join(f"{k}={shown(v)}" for k, v in given.items())
        raise cfg.refuse(", ".join(given), f"two values of the {what}: {listed}")
    return next(iter(given.values()), None)


def rope_dict(cfg: HFConfig, groups: tuple[str, ...] = ()) -> dict:
    """``rope_parameters`` or the legacy ``rope_scaling`` (transformers reads either).  A dict
    nested per layer type (transformers 5: ``{"full_attention": {...}, ...}``) is returned as is
    when its keys are among ``groups`` (the model's layer types), refused otherwise."""
    params, legacy = cfg.get("rope_parameters"), cfg.get("rope_scaling")
    for key, value in (("rope_parameters", params), ("rope_scaling", legacy)):
        if value is not None and not isinstance(value, dict):
            raise cfg.refuse(key, f"must be an object; got {shown(value)}")
    if params and legacy:
        one_of(cfg, {"rope_parameters": params, "rope_scaling": legacy}, "rope parameters")
    rope = dict(legacy or params or {})
    nested = [k for k, v in rope.items() if isinstance(v, dict)]
    if nested and not (groups and set(rope) <= set(groups)):
        raise cfg.refuse(f"rope_parameters[{', '.join(nested)}]",
                         f"per-layer RoPE (one rope per layer type) has no single catalogue spec"
                         f"{'' if not groups else ' (layer types: ' + ', '.join(groups) + ')'}")
    return {k: v for k, v in rope.items() if v is not None}


def rope_spec(cfg: HFConfig, seq_len: Optional[int], *, head_dim: int, rotary_dims: Optional[int],
          fraction_keys: dict[str, Any], theta_keys: dict[str, Any],
          pairing: str = "half", rope: Optional[dict] = None,
          default_theta: Optional[float] = None) -> tuple[PESpec, dict]:
    """The RoPE of a rotary config.  ``rotary_dims``: a fixed count (GPT-J's rotary_dim), else
    ``int(head_dim * partial_rotary_factor)`` as transformers.  ``rope``: the rope dict of one
    layer type (default the config's); ``default_theta``: its base when none is given (default
    the config class's)."""
    rope = rope_dict(cfg) if rope is None else rope
    kind = one_of(cfg, {"rope_type": rope.get("rope_type"), "type": rope.get("type")},
                   "rope type") or "default"
    if not isinstance(kind, str):
        raise cfg.refuse("rope_type", f"must be a string; got {shown(kind)}")
    if kind in ALIASES.get(cfg.model_type, {}):
        cfg.notes.append(f"rope_type={kind!r} is read as {ALIASES[cfg.model_type][kind]!r}, as "
                         f"transformers' {cfg.model_type} does (its old name)")
        kind = ALIASES[cfg.model_type][kind]
    if kind not in ROPE_KEYS:
        raise cfg.refuse(f"rope_type={shown(kind)}", f"not in the catalogue (its scalings: "
                                                f"{', '.join(ROPE_KEYS)})")
    # keys transformers' rope init of this type does not read (it warns, and ignores them)
    cfg.ignore(sorted(f"rope_parameters.{k}" for k in rope
                      if k not in ROPE_COMMON + ROPE_KEYS[kind]))
    base = one_of(cfg, {"rope_parameters.rope_theta": rope.get("rope_theta"), **theta_keys},
                   "RoPE base")
    if base is None:
        base = cfg.defaults.get("rope_theta", DEFAULT_THETA) if default_theta is None \
            else default_theta
    base = cfg.number("rope_theta", base)
    if rotary_dims is None:
        factor = one_of(cfg, {"rope_parameters.partial_rotary_factor":
                               rope.get("partial_rotary_factor"), **fraction_keys},
                         "partial rotary factor")
        if factor is None:
            factor = cfg.defaults.get("partial_rotary_factor", 1.0)
        factor = cfg.number("partial_rotary_factor", factor)
        if factor > 1:
            raise cfg.refuse("partial_rotary_factor", f"must be in (0, 1]; got {factor}")
        rotary_dims = int(head_dim * factor)
    if rotary_dims < 2 or rotary_dims % 2 or rotary_dims > head_dim:
        raise cfg.refuse(", ".join(fraction_keys) or "head_dim",
                         f"{rotary_dims} rotary dims of a head of {head_dim}: the catalogue "
                         f"rotates an even number of dims, at least 2 and at most the head")
    kw: dict[str, Any] = {"base": base, "pairing": pairing}
    if rotary_dims != head_dim:
        kw["fraction"] = rotary_dims / head_dim
    kw.update(_scaling(cfg, kind, rope, seq_len))
    try:
        spec = RoPE(**kw)
        got = spec.rotary_dims(head_dim)
    except PosencError as exc:
        raise PosencError(f"{cfg.where}: {exc}") from None
    if got != rotary_dims:            # the catalogue's 2 floor(fraction d / 2) must agree
        raise cfg.refuse(", ".join(fraction_keys), f"{rotary_dims} rotary dims, which fraction "
                                                   f"{kw.get('fraction')} does not give exactly")
    return spec, {"rotary_dims": rotary_dims}


def _scaling(cfg: HFConfig, kind: str, rope: dict, seq_len: Optional[int]) -> dict:
    """The catalogue's scaling keys of a transformers rope dict of type ``kind``."""
    if kind == "default":
        return {}
    max_pos = cfg.integer("max_position_embeddings", cfg.get("max_position_embeddings"))
    if kind in ("linear", "dynamic"):
        if "factor" not in rope:
            raise cfg.refuse(f"rope_type={kind!r}", "needs factor")
        out = {"scaling": kind, "factor": cfg.number("factor", rope["factor"])}
        if kind == "dynamic":
            out.update(original=max_pos, seq_len=_seq_len(cfg, seq_len, max_pos, kind))
        return out
    top = "original_max_position_embeddings"
    if cfg.given(top) or top in cfg.defaults:    # Phi-3: the top-level key wins (transformers)
        original = cfg.get(top)
    else:
        original = rope.get("original_max_position_embeddings", max_pos)
    original = cfg.integer("original_max_position_embeddings", original)
    factor = rope.get("factor")
    if factor is None and kind in ("yarn", "longrope"):
        factor = max_pos / original
    out = {"scaling": kind, "original": original,
           "factor": cfg.number("factor", factor) if factor is not None else None}
    if kind == "llama3":
        missing = [k for k in ("factor", "low_freq_factor", "high_freq_factor") if k not in rope]
        if missing:
            raise cfg.refuse("rope_type='llama3'", f"needs {', '.join(missing)}")
        out.update(low_freq_factor=cfg.number("low_freq_factor", rope["low_freq_factor"]),
                   high_freq_factor=cfg.number("high_freq_factor", rope["high_freq_factor"]))
    if kind == "yarn":
        if rope.get("truncate", True) is not True:
            raise cfg.refuse("rope_parameters.truncate",
                             f"{json.dumps(rope['truncate'])}: the catalogue's YaRN rounds its correction "
                             f"range (floor, ceil), transformers' truncate=true")
        out.update(beta_fast=cfg.number("beta_fast", rope.get("beta_fast") or 32.0),
                   beta_slow=cfg.number("beta_slow", rope.get("beta_slow") or 1.0))
        mscale, mscale_all = rope.get("mscale"), rope.get("mscale_all_dim")
        if rope.get("attention_factor") is None and mscale and mscale_all:
            f = out["factor"]

            def get_mscale(m: float) -> float:
                return 1.0 if f <= 1 else 0.1 * m * math.log(f) + 1.0
            out["attention_factor"] = get_mscale(cfg.number("mscale", mscale)) \
                / get_mscale(cfg.number("mscale_all_dim", mscale_all))
    if kind in ("yarn", "longrope") and rope.get("attention_factor") is not None:
        out["attention_factor"] = cfg.number("attention_factor", rope["attention_factor"])
    if kind == "longrope":
        for key in ("short_factor", "long_factor"):
            value = rope.get(key)
            if not isinstance(value, list) or not value:
                raise cfg.refuse(f"rope_parameters.{key}", f"must be a list of numbers; got "
                                                           f"{shown(value)}")
            out[key] = tuple(cfg.number(key, v) for v in value)
        out["seq_len"] = _seq_len(cfg, seq_len, original, kind, default=None)
    return {k: v for k, v in out.items() if v is not None}


def _seq_len(cfg: HFConfig, seq_len: Optional[int], length: int, kind: str,
             default: Optional[int] = -1) -> Optional[int]:
    if seq_len is not None:
        return cfg.integer("seq_len", seq_len)
    key = "max_position_embeddings" if kind == "dynamic" else "original_max_position_embeddings"
    cfg.notes.append(f"rope_type={kind!r} changes the frequencies with the sequence length; the "
                     f"spec states them for lengths up to {key}={length} "
                     f"({'the unscaled ones' if kind == 'dynamic' else 'the short factors'}, as "
                     f"transformers uses there)")
    return length if default == -1 else default


def head_dim_of(cfg: HFConfig, hidden_key: str = "hidden_size",
              heads_key: str = "num_attention_heads") -> tuple[int, int]:
    heads = cfg.integer(heads_key, cfg.get(heads_key))
    hidden = cfg.integer(hidden_key, cfg.get(hidden_key))
    head_dim = cfg.get("head_dim")
    if head_dim is None:
        if hidden % heads:
            raise cfg.refuse(f"{hidden_key}, {heads_key}", f"{hidden} is not divisible by {heads} "
                                                           f"heads (give head_dim)")
        head_dim = hidden // heads
    return cfg.integer("head_dim", head_dim), heads


def head_rope(cfg: HFConfig, seq_len: Optional[int], head_dim: int, heads: int, *,
              partial: bool = False, **kw: Any) -> tuple[PESpec, dict]:
    """The RoPE of a rotate_half-style model's head, with its info; a partial rotary factor only
    where the model's code reads it (``partial``; the others rotate the whole head: their default
    RoPE ignores the factor, their scalings break on it)."""
    spec, info = rope_spec(cfg, seq_len, head_dim=head_dim, rotary_dims=None,
                           fraction_keys={"partial_rotary_factor": cfg.raw("partial_rotary_factor")},
                           **kw)
    if info["rotary_dims"] != head_dim and not partial:
        raise cfg.refuse("partial_rotary_factor", f"transformers' {cfg.model_type} rotates the "
                                                  f"whole head (its default RoPE ignores the "
                                                  f"factor, its scalings break on it)")
    return spec, {"head_dim": head_dim, "heads": heads, **info,
                  "max_position_embeddings": cfg.get("max_position_embeddings")}
