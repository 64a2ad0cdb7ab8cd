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

import math
import re
from typing import Any, Callable, Optional

from ..coerce import shown
from ..errors import PosencError
from .additive import ALiBi, LearnedAbsolute, RelativeBias
from .base import PESpec
from .hf_read import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, read_hf_config
from . import hf_transformers
from .hf_layer_groups import gemma2, gemma3_text, llama4_text
from .hf_rope import (ROPE_COMMON, ROPE_KEYS, HFConfig, head_dim_of, head_rope, one_of, rope_dict,
                      rope_spec)

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
    "mixtral": {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
                "rope_theta": 1e6},
    "qwen2_moe": {"hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 32768},
    "olmo2": {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 2048},
    "starcoder2": {"hidden_size": 3072, "num_attention_heads": 24,
                   "max_position_embeddings": 4096},
    "gemma2": {"hidden_size": 2304, "num_attention_heads": 8, "head_dim": 256,
               "max_position_embeddings": 8192, "num_hidden_layers": 26, "sliding_window": 4096,
               "attn_logit_softcapping": 50.0},
    "gemma3_text": {"hidden_size": 2304, "num_attention_heads": 8, "head_dim": 256,
                    "max_position_embeddings": 131072, "num_hidden_layers": 26,
                    "sliding_window": 4096, "sliding_window_pattern": 6,
                    "theta_full_attention": 1e6, "theta_sliding_attention": 1e4},
    "llama4_text": {"hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
                    "max_position_embeddings": 131072, "rope_theta": 5e5, "num_hidden_layers": 48,
                    "no_rope_layer_interval": 4, "attention_chunk_size": 8192,
                    "attn_temperature_tuning": True},
    "deepseek_v3": {"hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64,
                    "qk_nope_head_dim": 128, "kv_lora_rank": 512, "q_lora_rank": 1536,
                    "max_position_embeddings": 4096, "rope_interleave": True},
    "gpt2": {"n_embd": 768, "n_head": 12, "n_positions": 1024},
    "bert": {"hidden_size": 768, "num_attention_heads": 12, "max_position_embeddings": 512,
             "position_embedding_type": "absolute"},
}
#: Rotary models whose transformers code rotates the first int(head_dim * factor) dims only.
PARTIAL = ("phi", "phi3", "gpt_neox")
#: Multimodal model types -> the model type of their ``text_config`` (mapped in its place).
WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text"}
#: Rotary models with a ``sliding_window`` (every layer; Qwen: with ``use_sliding_window``).
WINDOWED = ("mistral", "mixtral", "starcoder2", "qwen2", "qwen2_moe", "qwen3")

_ROTARY_READS = ("max_position_embeddings", "rope_parameters", "rope_scaling", "rope_theta",
                 "partial_rotary_factor")
#: model_type -> the position keys of a config that transformers' code for it reads (its config
#: class's own parameters and the legacy rope keys it converts; tests/encodings/
#: test_hf_config_transformers.py compares with transformers).  Every one is read by the mapping
#: here; another key that mentions position is one transformers ignores, and so is it here (with
#: a note).
TRANSFORMERS_READS: dict[str, tuple[str, ...]] = {
    **{m: _ROTARY_READS for m in ("llama", "mistral", "qwen2", "qwen3", "gemma", "phi", "mixtral",
                                  "qwen2_moe", "olmo2", "starcoder2", "gemma2")},
    "gemma3_text": _ROTARY_READS + ("rope_local_base_freq",),
    "llama4_text": _ROTARY_READS + ("no_rope_layers", "no_rope_layer_interval"),
    "deepseek_v3": _ROTARY_READS + ("qk_rope_head_dim", "rope_interleave"),
    "gpt2": ("n_positions", "max_position_embeddings"),
    "bert": ("max_position_embeddings", "position_embedding_type"),
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

def spec_from_hf_config(source: Any, *, seq_len: Optional[int] = None,
                        layers: Optional[str] = None) -> tuple[str, dict]:
    """Map a Hugging Face config to the catalogue spec its model uses.

    Parameters
    ----------
    source : str, os.PathLike or dict
        A local ``config.json`` (or the folder holding it), or its contents as a dict.
    seq_len : int, optional
        The sequence length a length-dependent scaling is stated for; default the length up to
        which transformers uses its unscaled (dynamic NTK: ``max_position_embeddings``) or short
        (LongRoPE: ``original_max_position_embeddings``) frequencies.
    layers : str, optional
        The layer group to state, for a model whose layers differ in position (Gemma 3:
        ``sliding_attention`` or ``full_attention``; Llama 4: ``rope`` or ``nope``); without it
        such a model is refused, naming its groups (:mod:`.hf_layer_groups`).

    Returns
    -------
    spec : str
        The compact spec string (``parse_spec(spec)`` gives the catalogue spec).
    info : dict
        ``model_type``, ``head_dim``, ``heads``, ``max_position_embeddings`` (None where the
        model has none), ``rotary_dims`` (rotary models), ``notes`` (what the spec does not
        say, in words) and ``source``; ``layer_groups`` (group -> number of layers) and
        ``layers`` (the group stated) for a model of several layer groups.

    Raises
    ------
    PosencError
        One line: an unreadable file, an unknown ``model_type``, or the key(s) that change
        position and have no catalogue form (see the module docstring).
    """
    spec, info = hf_spec(source, seq_len=seq_len, layers=layers)
    return spec.to_string(), info


def hf_spec(source: Any, *, seq_len: Optional[int] = None,
            layers: Optional[str] = None, where: Optional[str] = None) -> tuple[PESpec, dict]:
    """:func:`spec_from_hf_config` with the catalogue spec itself (a :class:`PESpec`) in place of
    its string: what ``--from-hf`` passes on.  ``where`` names a dict ``source`` in messages
    (a GGUF file's config: the file)."""
    data, model_type, where = text_config(source, where)
    if model_type not in MAPPERS:
        if not hf_transformers.available():
            raise PosencError(f"{where}: model_type {shown(model_type)} is not supported by "
                              f"--from-hf; supported: {', '.join(sorted(MAPPERS))} (with "
                              f"transformers installed, any model type with RoPE it knows)")
        spec, cfg, info = hf_transformers.spec_through_transformers(data, where, seq_len, layers)
    else:
        cfg = HFConfig(data, where, DEFAULTS[model_type], layers)
        spec, info = MAPPERS[model_type](cfg, seq_len)
        _ignore_unread(cfg)
    if layers is not None and "layer_groups" not in info:
        raise PosencError(f"{where}: layers={shown(layers)}: a {model_type}'s layers share one "
                          f"position encoding (no layer groups to choose from); --hf-layers is "
                          f"for Gemma 2 and 3, Llama 4 and other models of several layer types")
    info = {"model_type": model_type, **info, "notes": cfg.notes, "source": where}
    return spec, info


def text_config(source: Any, where: Optional[str] = None) -> tuple[dict, str, str]:
    """(the config dict, its model_type, its name for messages) of ``source``: for a multimodal
    config (``WRAPPERS``: Gemma 3, Llama 4) its language model's ``text_config``, with that
    model type (``gemma3_text``, ``llama4_text``)."""
    data, read_where = read_hf_config(source)
    where = where if where is not None and isinstance(source, dict) else read_where
    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise PosencError(f"{where}: no model_type; a Hugging Face config.json names its "
                          f"architecture there (supported: {', '.join(sorted(MAPPERS))})")
    if model_type in WRAPPERS:          # a multimodal config: its language model's
        text = data.get("text_config")
        if not isinstance(text, dict):
            raise PosencError(f"{where}: model_type {model_type!r} without a text_config object")
        data, model_type, where = {**text, "model_type": WRAPPERS[model_type]}, \
            WRAPPERS[model_type], f"{where} text_config"
    return data, model_type, where


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
    """Llama, Mistral, Mixtral, Qwen2/3 (MoE too), Gemma, OLMo 2, StarCoder2, Phi, Phi-3 (and
    Falcon's RoPE): rotate_half, transformers' rope dict; a partial rotary factor only where the
    model's code reads it."""
    head_dim, heads = head_dim_of(cfg)
    result = head_rope(cfg, seq_len, head_dim, heads, partial=cfg.model_type in PARTIAL,
                       theta_keys={"rope_theta": cfg.raw("rope_theta")})
    cfg.get("original_max_position_embeddings")
    if cfg.model_type in WINDOWED and cfg.given("sliding_window") \
            and (cfg.model_type in ("mistral", "mixtral", "starcoder2")
                 or cfg.get("use_sliding_window") is True):
        cfg.notes.append(f"sliding_window={cfg.get('sliding_window')}: "
                         f"{'its' if cfg.model_type.startswith('qwen') else 'every'} windowed "
                         f"layer attends to the last {cfg.get('sliding_window')} keys only: a "
                         f"mask, not part of the spec")
    return result


def _deepseek_v3(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    """DeepSeek-V3's multi-head latent attention: the logit of a head is q_nope . k_nope (no
    position; q and k through the latents q_lora_rank and kv_lora_rank) plus the decoupled RoPE
    q_rot . k_rot on qk_rope_head_dim dims (k_rot one per token, shared by the heads): a RoPE on
    the fraction qk_rope_head_dim / (qk_nope_head_dim + qk_rope_head_dim) of the qk head, with
    frequencies base^(-2m/qk_rope_head_dim) and the config's scaling."""
    heads = cfg.integer("num_attention_heads", cfg.get("num_attention_heads"))
    rope_dim = cfg.integer("qk_rope_head_dim", cfg.get("qk_rope_head_dim"))
    head_dim = rope_dim + cfg.integer("qk_nope_head_dim", cfg.get("qk_nope_head_dim"))
    if cfg.raw("partial_rotary_factor") not in (None, 1):
        raise cfg.refuse("partial_rotary_factor", "DeepSeek-V3 rotates qk_rope_head_dim dims")
    interleave = cfg.get("rope_interleave")
    if not isinstance(interleave, bool):
        raise cfg.refuse("rope_interleave", f"must be true or false; got {shown(interleave)}")
    spec, info = rope_spec(cfg, seq_len, head_dim=head_dim, rotary_dims=rope_dim,
                           fraction_keys={"qk_rope_head_dim": rope_dim},
                           theta_keys={"rope_theta": cfg.raw("rope_theta")},
                           pairing="interleaved" if interleave else "half")
    rope = rope_dict(cfg)
    cfg.notes.append(f"MLA: the {head_dim - rope_dim} position-free dims come through latents "
                     f"(kv_lora_rank={cfg.get('kv_lora_rank')}, q_lora_rank="
                     f"{cfg.get('q_lora_rank')}); the RoPE key is shared by the heads; the spec "
                     f"rotates the first {rope_dim} dims, transformers the last (the same logit)")
    if rope.get("rope_type", rope.get("type", "default")) != "default" and rope.get("mscale_all_dim"):
        f = rope.get("factor", 1.0)
        m = 1.0 if f <= 1 else 0.1 * rope["mscale_all_dim"] * math.log(f) + 1.0
        cfg.notes.append(f"mscale_all_dim={rope['mscale_all_dim']}: transformers multiplies the "
                         f"whole logit (content and position) by {m * m:.6g} (a temperature, not "
                         f"in the spec)")
    return spec, {"head_dim": head_dim, "heads": heads, **info,
                  "max_position_embeddings": cfg.get("max_position_embeddings")}


def _learned(cfg: HFConfig, length: int, heads_key: str, hidden_key: str) -> tuple[PESpec, dict]:
    """A learned absolute position table of ``length`` rows added to the input (GPT-2, BERT)."""
    head_dim, heads = head_dim_of(cfg, hidden_key, heads_key)
    try:
        spec = LearnedAbsolute(max_len=length)
    except PosencError as exc:
        raise PosencError(f"{cfg.where}: {exc}") from None
    return spec, {"head_dim": head_dim, "heads": heads, "max_position_embeddings": length}


def _gpt2(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    length = one_of(cfg, {"n_positions": cfg.raw("n_positions"),
                          "max_position_embeddings": cfg.raw("max_position_embeddings")},
                    "table length") or cfg.defaults["n_positions"]
    return _learned(cfg, cfg.integer("n_positions", length), "n_head", "n_embd")


def _bert(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    kind = cfg.get("position_embedding_type")
    if kind != "absolute":
        raise cfg.refuse("position_embedding_type", f"{shown(kind)}: only 'absolute' (a learned "
                                                    f"table) is in the catalogue (transformers 5 "
                                                    f"reads no other)")
    length = cfg.integer("max_position_embeddings", cfg.get("max_position_embeddings"))
    return _learned(cfg, length, "num_attention_heads", "hidden_size")


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
    "mixtral": _llama_like, "qwen2_moe": _llama_like, "olmo2": _llama_like,
    "starcoder2": _llama_like, "gemma2": gemma2, "gemma3_text": gemma3_text,
    "llama4_text": llama4_text, "deepseek_v3": _deepseek_v3, "gpt2": _gpt2, "bert": _bert,
}

