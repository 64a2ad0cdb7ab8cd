"""A local Hugging Face ``config.json`` -> the exact catalogue spec (``--from-hf``).

No hub access and no transformers import: the file (or a dict) is read as JSON and mapped with
transformers' own conventions (5.x: ``configuration_<model>.py``, ``modeling_rope_utils``),
written out here; tests/encodings/test_hf_config.py compares the result with transformers
itself.  A key the config leaves out takes the default of that model's config class.

Mapping (config key -> spec key):

=====================================  ==================================================
config                                 spec
=====================================  ==================================================
``rope_parameters["rope_theta"]``,     ``rope:base`` (one source; two that differ are
``rope_theta``, ``rotary_emb_base``    refused)
``partial_rotary_factor``,             ``rope:fraction`` (transformers rotates the first
``rotary_pct`` (GPT-NeoX),             ``int(head_dim * factor)`` dims, GPT-J the first
``rotary_dim`` (GPT-J)                 ``rotary_dim``; an odd count is refused, and so is a
                                       factor < 1 for a model whose code rotates the whole
                                       head: all but Phi, Phi-3, GPT-NeoX, GPT-J)
``head_dim``, else ``hidden_size //``  the head dimension (``info["head_dim"]``: the
``num_attention_heads``                spec is per head, the commands take it as
                                       --head-dim)
architecture                           ``rope:pairing``: ``half`` (rotate_half: Llama,
                                       Mistral, Qwen2/3, Gemma, Phi, Phi-3, GPT-NeoX,
                                       Falcon), ``interleaved`` (rotate_every_two: GPT-J)
``rope_parameters`` / ``rope_scaling`` ``rope:scaling``: default -> none, linear, dynamic,
``["rope_type"]`` (or ``["type"]``)    yarn, llama3, longrope
``factor``                             ``factor`` (yarn, longrope: when absent,
                                       ``max_position_embeddings / original``)
``original_max_position_embeddings``   ``original`` (the top-level key first, as
(in the dict or top level), else       transformers does for Phi-3; dynamic NTK always
``max_position_embeddings``            reads ``max_position_embeddings``)
``beta_fast``, ``beta_slow``           ``beta_fast``, ``beta_slow`` (yarn)
``attention_factor``; ``mscale`` with  ``attention_factor`` (yarn: the ratio
``mscale_all_dim``                     ``(0.1 mscale ln f + 1) / (0.1 mscale_all_dim ln f
                                       + 1)`` when both are given, as transformers)
``low_freq_factor``,                   ``low_freq_factor``, ``high_freq_factor`` (llama3)
``high_freq_factor``
``short_factor``, ``long_factor``      ``short_factor``, ``long_factor`` (longrope)
``alibi`` (Falcon), Bloom, MPT         ``alibi:direction=causal`` (press slopes; Bloom's,
``attn_config.alibi``                  Falcon's and MPT's bias is slope * key position,
                                       the causal form up to a per-row constant)
``attn_config.alibi_bias_max`` (MPT)   8 is the press schedule; another value is refused
``relative_attention_num_buckets``,    ``relative_bias:mode=t5,num_buckets=..,
``relative_attention_max_distance``    max_distance=..`` (T5's encoder; the decoder's
(T5)                                   buckets are one-sided, not in the catalogue: noted)
=====================================  ==================================================

``seq_len`` (dynamic NTK and LongRoPE): transformers changes the frequencies with the length of
each call; the spec states one length, by default ``max_position_embeddings`` (dynamic: the
unscaled frequencies transformers uses up to that length; longrope: the short factors).

Refused, with one line naming the key(s): a key that changes position but has no catalogue
form (yarn ``truncate=false``, a rope type or rope key not listed above, nested per-layer
``rope_parameters``, MPT ``alibi=false``, a T5 decoder), two sources that disagree, and any key
of the config that mentions rope, rotary, alibi or position and is not read here.  Keys
unrelated to position (``vocab_size``, ``intermediate_size``, ...) are ignored.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from typing import Any, Callable, Optional

from ..coerce import is_int, is_number, shown
from ..errors import PosencError
from ..limits import MAX_BUCKETS, MAX_HEADS, MAX_POSITIONS, MAX_SCALE, MAX_SEQ_LEN, MAX_WIDTH
from .additive import ALiBi, RelativeBias
from .base import PESpec
from .rotary import RoPE

#: Keys that mention position: each one a mapping reads, or the config is refused.
POSITIONAL = re.compile(r"rope|rotary|alibi|position|pos_emb|relative_attention", re.I)

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
#: Keys of a rope dict every type takes.
ROPE_COMMON = ("rope_type", "type", "rope_theta", "partial_rotary_factor")

#: model_type -> the config class defaults (transformers 5.x) of the keys read here.
DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 2048},
    "mistral": {"hidden_size": 4096, "num_attention_heads": 32,
                "max_position_embeddings": 131072},
    "qwen2": {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 32768},
    "qwen3": {"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
              "max_position_embeddings": 32768},
    "gemma": {"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256,
              "max_position_embeddings": 8192},
    "phi": {"hidden_size": 2048, "num_attention_heads": 32, "max_position_embeddings": 2048,
            "partial_rotary_factor": 0.5},
    "phi3": {"hidden_size": 3072, "num_attention_heads": 32, "max_position_embeddings": 4096,
             "original_max_position_embeddings": 4096},
    "gpt_neox": {"hidden_size": 6144, "num_attention_heads": 64, "max_position_embeddings": 2048,
                 "partial_rotary_factor": 0.25},
    "falcon": {"hidden_size": 4544, "num_attention_heads": 71, "max_position_embeddings": 2048,
               "alibi": False},
    "gptj": {"n_embd": 4096, "n_head": 16, "rotary_dim": 64, "n_positions": 2048},
    "bloom": {"hidden_size": 64, "n_head": 8},
    "mpt": {"d_model": 2048, "n_heads": 16, "max_seq_len": 2048},
    "t5": {"d_model": 512, "d_kv": 64, "num_heads": 8, "relative_attention_num_buckets": 32,
           "relative_attention_max_distance": 128},
}
#: Rotary models whose transformers code rotates the first int(head_dim * factor) dims only.
PARTIAL = ("phi", "phi3", "gpt_neox")
#: transformers' default rope_theta (``RotaryEmbeddingConfigMixin.default_theta``).
DEFAULT_THETA = 10000.0

_ROTARY_READS = ("max_position_embeddings", "rope_parameters", "rope_scaling", "rope_theta",
                 "partial_rotary_factor")
#: model_type -> the position keys of a config that transformers' code for it reads (its config
#: class's own parameters and the legacy rope keys it converts; tests/encodings/
#: test_hf_config_transformers.py compares with transformers).  Every one is read by the mapping
#: here; another key that mentions position is one transformers ignores, and so is it here (with
#: a note).
TRANSFORMERS_READS: dict[str, tuple[str, ...]] = {
    **{m: _ROTARY_READS for m in ("llama", "mistral", "qwen2", "qwen3", "gemma", "phi")},
    "phi3": _ROTARY_READS + ("original_max_position_embeddings",),
    "gpt_neox": _ROTARY_READS + ("rotary_pct", "rotary_emb_base"),
    "falcon": _ROTARY_READS + ("alibi",),
    "gptj": ("n_positions", "rotary_dim"),
    "bloom": (),
    "mpt": ("attn_config", "learned_pos_emb", "max_seq_len"),
    "t5": ("relative_attention_num_buckets", "relative_attention_max_distance"),
}
#: MPT's ``attn_config`` keys that transformers' MptAttentionConfig reads and that mention position.
MPT_ATTN_READS = ("alibi", "alibi_bias_max")

#: The largest config.json read (a real one is under 100 KB) and its deepest nesting (a real one
#: nests 3 or 4 levels: quantization and sub-model configs).
MAX_CONFIG_BYTES = 16 * 2**20
MAX_CONFIG_DEPTH = 32
#: The largest RoPE base read (real models use at most ~1e8).
MAX_THETA = 1e15
#: key -> the largest value it may have; a number read is in (0, bound], an integer in [1, bound].
#: Keys not listed: numbers up to MAX_SCALE (scaling factors), integers up to MAX_POSITIONS
#: (lengths).
UPPER: dict[str, float] = {
    "rope_theta": MAX_THETA, "partial_rotary_factor": 1.0,
    **dict.fromkeys(("head_dim", "d_kv", "rotary_dim"), MAX_WIDTH),
    **dict.fromkeys(("hidden_size", "n_embd", "d_model"), MAX_WIDTH * MAX_HEADS),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads"), MAX_HEADS),
    "relative_attention_num_buckets": MAX_BUCKETS, "relative_attention_max_distance": MAX_SEQ_LEN,
}


class _Config:
    """The config dict with its class defaults, recording which keys a mapping read."""

    def __init__(self, data: dict, where: str) -> None:
        self.data, self.where = data, where
        self.model_type = data["model_type"]
        self.defaults = DEFAULTS[self.model_type]
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
        """A number in (0, UPPER[key]] (default MAX_SCALE); a huge int is compared, never
        converted (no OverflowError), and NaN fails every comparison."""
        hi = UPPER.get(key, MAX_SCALE)
        if not (is_number(value) and 0 < value <= hi):
            raise self.refuse(key, f"must be a positive number at most {hi:g}; got {shown(value)}")
        return float(value)

    def integer(self, key: str, value: Any) -> int:
        """An integer (an integral float too: JSON writers emit 2048.0) in [1, UPPER[key]]
        (default MAX_POSITIONS)."""
        hi = int(UPPER.get(key, MAX_POSITIONS))
        if not (is_number(value) and 1 <= value <= hi and (is_int(value) or value.is_integer())):
            raise self.refuse(key, f"must be an integer in [1, {hi}]; got {shown(value)}")
        return int(value)


# --- reading ----------------------------------------------------------------------------------

def read_hf_config(source: Any) -> tuple[dict, str]:
    """``source`` (a path to a config.json, or a dict) -> (the dict, a name for messages).

    A path is read only if it is a regular file of at most MAX_CONFIG_BYTES (a FIFO, a device
    such as /dev/urandom or a directory without config.json is refused before any read, so
    nothing blocks or reads without end); its JSON, like a dict given, nests at most
    MAX_CONFIG_DEPTH levels."""
    if isinstance(source, dict):
        _check_depth(source, "config")
        return source, "config"
    if not isinstance(source, (str, os.PathLike)):
        raise PosencError(f"--from-hf takes a path to a config.json; got {type(source).__name__}")
    path = os.fspath(source)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    text = _read_regular(path)
    depth = _text_depth(text)
    if depth > MAX_CONFIG_DEPTH:
        raise PosencError(f"--from-hf: {path} nests {depth} levels deep; a config.json nests a "
                          f"few (the limit is {MAX_CONFIG_DEPTH})")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise PosencError(f"--from-hf: {path} is not valid JSON ({shown(str(exc), 160)})") from None
    if not isinstance(data, dict):
        raise PosencError(f"--from-hf: {path} holds a JSON {type(data).__name__}, not an object")
    return data, path


def _read_regular(path: str) -> str:
    """The text of ``path``: a regular file of at most MAX_CONFIG_BYTES, UTF-8.  Opened without
    blocking (a FIFO with no writer would block ``open``) and checked on the open file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise PosencError(f"--from-hf: no such file {path!r}") from None
    except OSError as exc:
        raise PosencError(f"--from-hf: cannot read {path!r}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise PosencError(f"--from-hf: {path} is not a regular file (a FIFO, device or "
                              f"socket); give a config.json")
        if info.st_size > MAX_CONFIG_BYTES:
            raise PosencError(f"--from-hf: {path} is {info.st_size} bytes; a config.json is "
                              f"under 100 KB (the limit is {MAX_CONFIG_BYTES // 2**20} MiB)")
        try:
            raw = fh.read(MAX_CONFIG_BYTES + 1)        # the file may grow after the stat
        except OSError as exc:
            raise PosencError(f"--from-hf: cannot read {path!r}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise PosencError(f"--from-hf: {path} is over {MAX_CONFIG_BYTES // 2**20} MiB; a "
                          f"config.json is under 100 KB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PosencError(f"--from-hf: cannot read {path!r}: not UTF-8 text ({exc.reason} at "
                          f"byte {exc.start})") from None


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _text_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON text, strings left out (vectorised: a
    16 MiB text takes milliseconds, and no parser recursion is involved)."""
    import numpy as np

    codes = np.frombuffer(_JSON_STRING.sub("", text).encode("utf-8"), dtype=np.uint8)
    steps = (np.isin(codes, (91, 123)).astype(np.int64) - np.isin(codes, (93, 125)))
    return int(np.cumsum(steps).max(initial=0))


def _check_depth(data: Any, where: str) -> None:
    """A dict given to the API nests at most MAX_CONFIG_DEPTH levels (walked without
    recursion)."""
    level = [data]  # the nodes at depth 1, 2, ... (the config itself is depth 1, as _text_depth counts)
    for _ in range(MAX_CONFIG_DEPTH):
        level = list({id(v): v for x in level for v in (x.values() if isinstance(x, dict) else x)
                      if isinstance(v, (dict, list, tuple))}.values())     # shared ones once
        if not level:
            return
    raise PosencError(f"--from-hf: {where} nests more than {MAX_CONFIG_DEPTH} levels deep; a "
                      f"config.json nests a few")


def spec_from_hf_config(source: Any, *, seq_len: Optional[int] = None) -> tuple[str, dict]:
    """Map a Hugging Face config to the catalogue spec its model uses.

    Parameters
    ----------
    source : str, os.PathLike or dict
        A local ``config.json`` (or the folder holding it), or its contents as a dict.
    seq_len : int, optional
        The sequence length a length-dependent scaling is stated for; default the length up to
        which transformers uses its unscaled (dynamic NTK: ``max_position_embeddings``) or short
        (LongRoPE: ``original_max_position_embeddings``) frequencies.

    Returns
    -------
    spec : str
        The compact spec string (``parse_spec(spec)`` gives the catalogue spec).
    info : dict
        ``model_type``, ``head_dim``, ``heads``, ``max_position_embeddings`` (None where the
        model has none), ``rotary_dims`` (rotary models), ``notes`` (what the spec does not
        say, in words) and ``source``.

    Raises
    ------
    PosencError
        One line: an unreadable file, an unknown ``model_type``, or the key(s) that change
        position and have no catalogue form (see the module docstring).
    """
    spec, info = hf_spec(source, seq_len=seq_len)
    return spec.to_string(), info


def hf_spec(source: Any, *, seq_len: Optional[int] = None) -> tuple[PESpec, dict]:
    """:func:`spec_from_hf_config` with the catalogue spec itself (a :class:`PESpec`) in place of
    its string: what ``--from-hf`` passes on."""
    data, where = read_hf_config(source)
    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise PosencError(f"{where}: no model_type; a Hugging Face config.json names its "
                          f"architecture there (supported: {', '.join(sorted(MAPPERS))})")
    if model_type not in MAPPERS:
        raise PosencError(f"{where}: model_type {shown(model_type)} is not supported by --from-hf; "
                          f"supported: {', '.join(sorted(MAPPERS))}")
    cfg = _Config(data, where)
    spec, info = MAPPERS[model_type](cfg, seq_len)
    _ignore_unread(cfg)
    return spec, {"model_type": model_type, **info, "notes": cfg.notes, "source": where}


def _ignore_unread(cfg: _Config) -> None:
    """Keys that mention position and that no mapping read: transformers' code for this model
    type ignores them (TRANSFORMERS_READS lists what it reads, and every mapping reads those),
    so they are ignored here too, with a note; one transformers reads and no mapping did is a
    bug of this module, refused."""
    unread = sorted(k for k in cfg.data if POSITIONAL.search(k) and k not in cfg.read)
    missed = [k for k in unread if k in TRANSFORMERS_READS[cfg.model_type]]
    if missed:
        raise cfg.refuse(", ".join(missed), f"read by transformers' {cfg.model_type} and not by "
                                            f"--from-hf (please report this)")
    cfg.ignore(unread)


# --- rotary -----------------------------------------------------------------------------------

def _one_of(cfg: _Config, values: dict[str, Any], what: str) -> Any:
    """The one value given for ``what`` under several names (two that differ: refused)."""
    given = {k: v for k, v in values.items() if v is not None}

    def same(v: Any) -> Any:          # 10000 and 10000.0 are one value (equal, one hash)
        return v if is_number(v) else json.dumps(v, sort_keys=True)
    if len({same(v) for v in given.values()}) > 1:
        listed = ", ".join(f"{k}={shown(v)}" for k, v in given.items())
        raise cfg.refuse(", ".join(given), f"two values of the {what}: {listed}")
    return next(iter(given.values()), None)


def _rope_dict(cfg: _Config) -> dict:
    """``rope_parameters`` or the legacy ``rope_scaling`` (transformers reads either)."""
    params, legacy = cfg.get("rope_parameters"), cfg.get("rope_scaling")
    for key, value in (("rope_parameters", params), ("rope_scaling", legacy)):
        if value is not None and not isinstance(value, dict):
            raise cfg.refuse(key, f"must be an object; got {shown(value)}")
    if params and legacy:
        _one_of(cfg, {"rope_parameters": params, "rope_scaling": legacy}, "rope parameters")
    rope = dict(legacy or params or {})
    nested = [k for k, v in rope.items() if isinstance(v, dict)]
    if nested:
        raise cfg.refuse(f"rope_parameters[{', '.join(nested)}]",
                         "per-layer RoPE (one rope per layer type) has no single catalogue spec")
    return {k: v for k, v in rope.items() if v is not None}


def _rope(cfg: _Config, seq_len: Optional[int], *, head_dim: int, rotary_dims: Optional[int],
          fraction_keys: dict[str, Any], theta_keys: dict[str, Any],
          pairing: str = "half") -> tuple[PESpec, dict]:
    """The RoPE of a rotary config.  ``rotary_dims``: a fixed count (GPT-J's rotary_dim), else
    ``int(head_dim * partial_rotary_factor)`` as transformers."""
    rope = _rope_dict(cfg)
    kind = _one_of(cfg, {"rope_type": rope.get("rope_type"), "type": rope.get("type")},
                   "rope type") or "default"
    if not isinstance(kind, str):
        raise cfg.refuse("rope_type", f"must be a string; got {shown(kind)}")
    if kind not in ROPE_KEYS:
        raise cfg.refuse(f"rope_type={shown(kind)}", f"not in the catalogue (its scalings: "
                                                f"{', '.join(ROPE_KEYS)})")
    # keys transformers' rope init of this type does not read (it warns, and ignores them)
    cfg.ignore(sorted(f"rope_parameters.{k}" for k in rope
                      if k not in ROPE_COMMON + ROPE_KEYS[kind]))
    base = _one_of(cfg, {"rope_parameters.rope_theta": rope.get("rope_theta"), **theta_keys},
                   "RoPE base")
    base = cfg.number("rope_theta", DEFAULT_THETA if base is None else base)
    if rotary_dims is None:
        factor = _one_of(cfg, {"rope_parameters.partial_rotary_factor":
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


def _scaling(cfg: _Config, kind: str, rope: dict, seq_len: Optional[int]) -> dict:
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


def _seq_len(cfg: _Config, seq_len: Optional[int], length: int, kind: str,
             default: Optional[int] = -1) -> Optional[int]:
    if seq_len is not None:
        return cfg.integer("seq_len", seq_len)
    key = "max_position_embeddings" if kind == "dynamic" else "original_max_position_embeddings"
    cfg.notes.append(f"rope_type={kind!r} changes the frequencies with the sequence length; the "
                     f"spec states them for lengths up to {key}={length} "
                     f"({'the unscaled ones' if kind == 'dynamic' else 'the short factors'}, as "
                     f"transformers uses there)")
    return length if default == -1 else default


def _head_dim(cfg: _Config, hidden_key: str = "hidden_size",
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


def _llama_like(cfg: _Config, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    """Llama, Mistral, Qwen2/3, Gemma, Phi, Phi-3 (and Falcon's RoPE): rotate_half,
    transformers' rope dict; a partial rotary factor only where the model's code reads it."""
    head_dim, heads = _head_dim(cfg)
    spec, info = _rope(cfg, seq_len, head_dim=head_dim, rotary_dims=None,
                       fraction_keys={"partial_rotary_factor": cfg.raw("partial_rotary_factor")},
                       theta_keys={"rope_theta": cfg.raw("rope_theta")})
    if info["rotary_dims"] != head_dim and cfg.model_type not in PARTIAL:
        raise cfg.refuse("partial_rotary_factor", f"transformers' {cfg.model_type} rotates the "
                                                  f"whole head (its default RoPE ignores the "
                                                  f"factor, its scalings break on it)")
    cfg.get("original_max_position_embeddings")
    return spec, {"head_dim": head_dim, "heads": heads, **info,
                  "max_position_embeddings": cfg.get("max_position_embeddings")}


def _gpt_neox(cfg: _Config, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    head_dim, heads = _head_dim(cfg)
    spec, info = _rope(cfg, seq_len, head_dim=head_dim, rotary_dims=None,
                       fraction_keys={"partial_rotary_factor": cfg.raw("partial_rotary_factor"),
                                      "rotary_pct": cfg.raw("rotary_pct")},
                       theta_keys={"rope_theta": cfg.raw("rope_theta"),
                                   "rotary_emb_base": cfg.raw("rotary_emb_base")})
    return spec, {"head_dim": head_dim, "heads": heads, **info,
                  "max_position_embeddings": cfg.get("max_position_embeddings")}


def _gptj(cfg: _Config, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    """GPT-J: rotate_every_two (interleaved) on the first rotary_dim dims, base 10000 fixed."""
    head_dim, heads = _head_dim(cfg, "n_embd", "n_head")
    rotary_dim = cfg.get("rotary_dim")
    rotary_dim = head_dim if rotary_dim is None else cfg.integer("rotary_dim", rotary_dim)
    spec, info = _rope(cfg, seq_len, head_dim=head_dim, rotary_dims=rotary_dim,
                       fraction_keys={"rotary_dim": rotary_dim}, theta_keys={},
                       pairing="interleaved")
    return spec, {"head_dim": head_dim, "heads": heads, **info,
                  "max_position_embeddings": cfg.get("n_positions")}


def _falcon(cfg: _Config, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    head_dim, heads = _head_dim(cfg)
    alibi = cfg.get("alibi")
    if not isinstance(alibi, bool):
        raise cfg.refuse("alibi", f"must be true or false; got {shown(alibi)}")
    if not alibi:
        return _llama_like(cfg, seq_len)
    cfg.get("rope_theta")             # unused with ALiBi; a scaling would be a contradiction
    rope = _rope_dict(cfg)
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        raise cfg.refuse("alibi, rope_parameters", "ALiBi and a RoPE scaling together")
    cfg.notes.append("Falcon computes its ALiBi in bfloat16")
    return _alibi(cfg, heads, head_dim)


def _alibi(cfg: _Config, heads: int, head_dim: int) -> tuple[PESpec, dict]:
    cfg.get("max_position_embeddings")        # ALiBi has no table: the length does not matter
    return ALiBi(slopes="press", direction="causal"), {
        "head_dim": head_dim, "heads": heads, "max_position_embeddings": None}


def _bloom(cfg: _Config, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    head_dim, heads = _head_dim(cfg, "hidden_size", "n_head")
    return _alibi(cfg, heads, head_dim)


def _mpt(cfg: _Config, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    head_dim, heads = _head_dim(cfg, "d_model", "n_heads")
    attn = cfg.get("attn_config") or {}
    if not isinstance(attn, dict):
        raise cfg.refuse("attn_config", f"must be an object; got {shown(attn)}")
    if attn.get("alibi", True) is not True:      # (attn is a dict: refused above otherwise)
        raise cfg.refuse("attn_config.alibi", f"{shown(attn['alibi'])}: MPT without ALiBi (learned "
                                              f"positions; transformers' MPT adds ALiBi anyway)")
    bias_max = attn.get("alibi_bias_max", 8)
    if bias_max != 8:
        raise cfg.refuse("attn_config.alibi_bias_max", f"{shown(bias_max)}: slopes 2^(-b h/H) with b ≠ 8 "
                                                       f"are not a catalogue schedule (8 is press)")
    cfg.ignore(sorted(f"attn_config.{k}" for k in attn
                      if POSITIONAL.search(k) and k not in MPT_ATTN_READS))
    cfg.get("learned_pos_emb")        # MPT uses a learned table only without ALiBi
    cfg.get("max_seq_len")
    return _alibi(cfg, heads, head_dim)


def _t5(cfg: _Config, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    if cfg.get("is_decoder") is True:
        raise cfg.refuse("is_decoder", "true: a T5 decoder's buckets are one-sided; the "
                                       "catalogue's t5 buckets are the encoder's (two-sided)")
    heads = cfg.integer("num_heads", cfg.get("num_heads"))
    cfg.get("n_positions")                    # older T5 configs: no table, unused
    try:
        spec = RelativeBias(mode="t5",
                            num_buckets=cfg.integer("relative_attention_num_buckets",
                                                    cfg.get("relative_attention_num_buckets")),
                            max_distance=cfg.integer("relative_attention_max_distance",
                                                     cfg.get("relative_attention_max_distance")))
    except PosencError as exc:
        raise PosencError(f"{cfg.where}: {exc}") from None
    cfg.notes.append("the spec is the encoder's self-attention; the decoder's buckets are "
                     "one-sided (bidirectional=false), not in the catalogue")
    return spec, {"head_dim": cfg.integer("d_kv", cfg.get("d_kv")), "heads": heads,
                  "max_position_embeddings": None}


#: model_type -> its mapping.
MAPPERS: dict[str, Callable[[_Config, Optional[int]], tuple[PESpec, dict]]] = {
    "llama": _llama_like, "mistral": _llama_like, "qwen2": _llama_like, "qwen3": _llama_like,
    "gemma": _llama_like, "phi": _llama_like, "phi3": _llama_like, "gpt_neox": _gpt_neox,
    "gptj": _gptj, "falcon": _falcon, "bloom": _bloom, "mpt": _mpt, "t5": _t5,
}
