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

import re
from typing import Any, Callable, Optional

from ..coerce import shown
from ..errors import PosencError
from .additive import ALiBi, RelativeBias
from .base import PESpec
from .hf_read import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, read_hf_config
from .hf_rope import ROPE_COMMON, ROPE_KEYS, HFConfig, head_dim_of, rope_dict, rope_spec

__all__ = ["MAPPERS", "MAX_CONFIG_BYTES", "MAX_CONFIG_DEPTH", "ROPE_COMMON", "ROPE_KEYS",
           "read_hf_config", "spec_from_hf_config"]

#: Keys that mention position: each one a mapping reads, or the config is refused.
POSITIONAL = re.compile(r"rope|rotary|alibi|position|pos_emb|relative_attention", re.I)

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
    data, where = read_hf_config(source)
    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise PosencError(f"{where}: no model_type; a Hugging Face config.json names its "
                          f"architecture there (supported: {', '.join(sorted(MAPPERS))})")
    if model_type not in MAPPERS:
        raise PosencError(f"{where}: model_type {shown(model_type)} is not supported by --from-hf; "
                          f"supported: {', '.join(sorted(MAPPERS))}")
    cfg = HFConfig(data, where, DEFAULTS[model_type])
    spec, info = MAPPERS[model_type](cfg, seq_len)
    _ignore_unread(cfg)
    info = {"model_type": model_type, **info, "notes": cfg.notes, "source": where}
    return spec.to_string(), info


def _ignore_unread(cfg: HFConfig) -> None:
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



# --- architectures -----------------------------------------------------------------------------

def _llama_like(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    """Llama, Mistral, Qwen2/3, Gemma, Phi, Phi-3 (and Falcon's RoPE): rotate_half,
    transformers' rope dict; a partial rotary factor only where the model's code reads it."""
    head_dim, heads = head_dim_of(cfg)
    spec, info = rope_spec(cfg, seq_len, head_dim=head_dim, rotary_dims=None,
                       fraction_keys={"partial_rotary_factor": cfg.raw("partial_rotary_factor")},
                       theta_keys={"rope_theta": cfg.raw("rope_theta")})
    if info["rotary_dims"] != head_dim and cfg.model_type not in PARTIAL:
        raise cfg.refuse("partial_rotary_factor", f"transformers' {cfg.model_type} rotates the "
                                                  f"whole head (its default RoPE ignores the "
                                                  f"factor, its scalings break on it)")
    cfg.get("original_max_position_embeddings")
    return spec, {"head_dim": head_dim, "heads": heads, **info,
                  "max_position_embeddings": cfg.get("max_position_embeddings")}


def _gpt_neox(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    head_dim, heads = head_dim_of(cfg)
    spec, info = rope_spec(cfg, seq_len, head_dim=head_dim, rotary_dims=None,
                       fraction_keys={"partial_rotary_factor": cfg.raw("partial_rotary_factor"),
                                      "rotary_pct": cfg.raw("rotary_pct")},
                       theta_keys={"rope_theta": cfg.raw("rope_theta"),
                                   "rotary_emb_base": cfg.raw("rotary_emb_base")})
    return spec, {"head_dim": head_dim, "heads": heads, **info,
                  "max_position_embeddings": cfg.get("max_position_embeddings")}


def _gptj(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    """GPT-J: rotate_every_two (interleaved) on the first rotary_dim dims, base 10000 fixed."""
    head_dim, heads = head_dim_of(cfg, "n_embd", "n_head")
    rotary_dim = cfg.get("rotary_dim")
    rotary_dim = head_dim if rotary_dim is None else cfg.integer("rotary_dim", rotary_dim)
    spec, info = rope_spec(cfg, seq_len, head_dim=head_dim, rotary_dims=rotary_dim,
                       fraction_keys={"rotary_dim": rotary_dim}, theta_keys={},
                       pairing="interleaved")
    return spec, {"head_dim": head_dim, "heads": heads, **info,
                  "max_position_embeddings": cfg.get("n_positions")}


def _falcon(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    head_dim, heads = head_dim_of(cfg)
    alibi = cfg.get("alibi")
    if not isinstance(alibi, bool):
        raise cfg.refuse("alibi", f"must be true or false; got {shown(alibi)}")
    if not alibi:
        return _llama_like(cfg, seq_len)
    cfg.get("rope_theta")             # unused with ALiBi; a scaling would be a contradiction
    rope = rope_dict(cfg)
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        raise cfg.refuse("alibi, rope_parameters", "ALiBi and a RoPE scaling together")
    cfg.notes.append("Falcon computes its ALiBi in bfloat16")
    return _alibi(cfg, heads, head_dim)


def _alibi(cfg: HFConfig, heads: int, head_dim: int) -> tuple[PESpec, dict]:
    cfg.get("max_position_embeddings")        # ALiBi has no table: the length does not matter
    return ALiBi(slopes="press", direction="causal"), {
        "head_dim": head_dim, "heads": heads, "max_position_embeddings": None}


def _bloom(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    head_dim, heads = head_dim_of(cfg, "hidden_size", "n_head")
    return _alibi(cfg, heads, head_dim)


def _mpt(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    head_dim, heads = head_dim_of(cfg, "d_model", "n_heads")
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


def _t5(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
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
MAPPERS: dict[str, Callable[[HFConfig, Optional[int]], tuple[PESpec, dict]]] = {
    "llama": _llama_like, "mistral": _llama_like, "qwen2": _llama_like, "qwen3": _llama_like,
    "gemma": _llama_like, "phi": _llama_like, "phi3": _llama_like, "gpt_neox": _gpt_neox,
    "gptj": _gptj, "falcon": _falcon, "bloom": _bloom, "mpt": _mpt, "t5": _t5,
}

