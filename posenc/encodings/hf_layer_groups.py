"""``--from-hf`` for models whose layers differ in position (:mod:`posenc.encodings.hf_config`):
Gemma 2 (sliding and full layers, one RoPE), Gemma 3 (sliding layers with RoPE base
``rope_local_base_freq``, full layers with ``rope_theta`` and the scaling) and Llama 4 (RoPE
layers and NoPE layers, ``no_rope_layers``).

A catalogue spec is one encoding, so a model is stated per layer group (transformers'
``layer_types`` names, Llama 4: ``rope`` and ``nope``): when every group has the same spec it is
the model's, with a note on what differs (the attention window); otherwise the groups are named
and one is chosen (``layers=`` in the API, ``--hf-layers`` on the command line), never averaged.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from ..coerce import shown
from ..errors import PosencError
from .base import NoPE, PESpec
from .hf_rope import HFConfig, head_dim_of, head_rope, rope_dict

#: What one layer group maps to: its spec and info, or the refusal of it.
Mapping = Callable[[], tuple[PESpec, dict]]


class LayerGroupsDiffer(PosencError):
    """The refusal of a model whose layer groups differ in position when none is chosen; its
    ``groups`` (group -> number of layers) let a caller state each one in turn (``check``)."""

    def __init__(self, message: str, groups: dict[str, int]) -> None:
        super().__init__(message)
        self.groups = dict(groups)


def by_group(cfg: HFConfig, layer_types: list[str], groups: dict[str, Mapping]) -> tuple[PESpec, dict]:
    """The spec of the layer group ``cfg.layers`` chosen, or the one all groups share; groups that
    differ without a choice are refused, naming them and their layer counts."""
    counts = {g: layer_types.count(g) for g in groups if g in layer_types}
    if cfg.layers is not None:
        if cfg.layers not in counts:
            raise cfg.refuse(f"layers={shown(cfg.layers)}", f"not a layer group of this "
                                                            f"{cfg.model_type}; its groups: "
                                                            f"{', '.join(counts)}")
        notes = list(cfg.notes)
        for other in set(counts) - {cfg.layers}:        # read its keys too (never unread)
            try:
                groups[other]()
            except PosencError:
                pass
        cfg.notes[:] = notes
        spec, info = groups[cfg.layers]()
        cfg.notes.append(f"the spec is that of the {counts[cfg.layers]} {cfg.layers} layers "
                         f"(of {len(layer_types)})")
        return spec, {**info, "layer_groups": counts, "layers": cfg.layers}
    mapped: dict[str, Any] = {}
    for group in counts:
        try:
            mapped[group] = groups[group]()
        except PosencError as exc:
            mapped[group] = exc
    specs = {g: m[0].to_string() if isinstance(m, tuple) else None for g, m in mapped.items()}
    if len(set(specs.values())) == 1 and None not in specs.values():
        return next(iter(mapped.values()))[0], {**next(iter(mapped.values()))[1],
                                                "layer_groups": counts, "layers": None}
    listed = "; ".join(f"{g} ({counts[g]} layers): " + ("refused" if specs[g] is None else specs[g])
                       for g in counts)
    if len(listed) > 220:
        listed = ", ".join(f"{g} ({counts[g]} layers)" for g in counts)
    raise LayerGroupsDiffer(str(cfg.refuse("layer_types", f"the layers differ in position ({listed}); "
                                                          f"state one group with --hf-layers "
                                                          f"{'|'.join(counts)} (API: layers=)")),
                            counts)


def layer_types_of(cfg: HFConfig, default: list[str]) -> list[str]:
    """``layer_types`` as given (a list of strings), else the class's own default list."""
    given = cfg.get("layer_types")
    if given is None:
        return default
    if not (isinstance(given, list) and given and all(isinstance(t, str) for t in given)):
        raise cfg.refuse("layer_types", f"must be a list of layer type names; got {shown(given)}")
    return given


def _layers(cfg: HFConfig) -> int:
    return cfg.integer("num_hidden_layers", cfg.get("num_hidden_layers"))


def window_note(cfg: HFConfig, types: list[str], group: str = "sliding_attention") -> None:
    if group in types:
        window = cfg.get("sliding_window")
        cfg.notes.append(f"the {types.count(group)} {group} layers attend to the last "
                         f"sliding_window={window} keys only: a mask, not part of the spec")


def gemma2(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    """Gemma 2: one RoPE (rotate_half), sliding and full layers alternating."""
    head_dim, heads = head_dim_of(cfg)
    types = layer_types_of(cfg, ["sliding_attention" if (i + 1) % 2 else "full_attention"
                                 for i in range(_layers(cfg))])

    def group() -> tuple[PESpec, dict]:
        return head_rope(cfg, seq_len, head_dim, heads,
                           theta_keys={"rope_theta": cfg.raw("rope_theta")})
    result = by_group(cfg, types, {"sliding_attention": group, "full_attention": group})
    window_note(cfg, types)
    if cfg.get("attn_logit_softcapping") is not None:
        cfg.notes.append(f"attn_logit_softcapping={cfg.get('attn_logit_softcapping')}: the logit "
                         f"passes through c tanh(logit / c), not part of the spec")
    return result


def gemma3_text(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    """Gemma 3: sliding layers rotate with base ``rope_local_base_freq`` (10^4), unscaled; full
    layers with ``rope_theta`` (10^6) and the config's scaling (transformers 5 nests them in
    ``rope_parameters`` per layer type)."""
    head_dim, heads = head_dim_of(cfg)
    pattern = cfg.integer("sliding_window_pattern", cfg.get("sliding_window_pattern"))
    types = layer_types_of(cfg, ["sliding_attention" if (i + 1) % pattern else "full_attention"
                                 for i in range(_layers(cfg))])
    rope = rope_dict(cfg, groups=("sliding_attention", "full_attention"))
    nested = any(isinstance(v, dict) for v in rope.values())
    top = {"full_attention": ("rope_theta", cfg.raw("rope_theta")),
           "sliding_attention": ("rope_local_base_freq", cfg.raw("rope_local_base_freq"))}

    def group(name: str) -> Mapping:
        key, value = top[name]
        default = cfg.defaults["theta_" + name]
        if nested:            # transformers 5: the top-level base is the group's default only
            own, theta_keys = rope.get(name) or {}, {}
            if not isinstance(own, dict):
                raise cfg.refuse(f"rope_parameters.{name}", f"must be an object; got {shown(own)}")
            default = default if value is None else value
        else:                 # the legacy keys: rope_scaling is the full layers'
            own, theta_keys = (rope if name == "full_attention" else {}), {key: value}
        return lambda: head_rope(cfg, seq_len, head_dim, heads, theta_keys=theta_keys,
                                   rope=own, default_theta=default)
    result = by_group(cfg, types, {g: group(g) for g in ("sliding_attention", "full_attention")})
    window_note(cfg, types)
    return result


def llama4_text(cfg: HFConfig, seq_len: Optional[int]) -> tuple[PESpec, dict]:
    """Llama 4: RoPE layers (complex multiply: interleaved pairs; the config's llama3 scaling)
    and NoPE layers (``no_rope_layers[i] == 0``; every 4th by default), whose query transformers
    scales by ``1 + attn_scale ln(1 + floor((i + 1) / floor_scale))`` when
    ``attn_temperature_tuning`` (a position-dependent factor the catalogue has no form for)."""
    head_dim, heads = head_dim_of(cfg)
    interval = cfg.integer("no_rope_layer_interval", cfg.get("no_rope_layer_interval"))
    use_rope = cfg.get("no_rope_layers") or [int((i + 1) % interval != 0)
                                             for i in range(_layers(cfg))]
    if not (isinstance(use_rope, list) and all(v in (0, 1) for v in use_rope)):
        raise cfg.refuse("no_rope_layers", f"must be a list of 0 (NoPE) and 1 (RoPE); got "
                                           f"{shown(use_rope)}")
    cfg.get("layer_types")        # chunked or full attention: a mask (noted below)
    info = {"head_dim": head_dim, "heads": heads,
            "max_position_embeddings": cfg.get("max_position_embeddings")}

    def rope() -> tuple[PESpec, dict]:
        return head_rope(cfg, seq_len, head_dim, heads, pairing="interleaved",
                           theta_keys={"rope_theta": cfg.raw("rope_theta")})

    def nope() -> tuple[PESpec, dict]:
        tuning = cfg.get("attn_temperature_tuning")
        if tuning is not False:
            value = json.dumps(tuning) if isinstance(tuning, bool) else shown(tuning)
            raise cfg.refuse("attn_temperature_tuning", f"{value}: the NoPE layers scale the query "
                                                        f"by a factor of its position")
        return NoPE(), dict(info)
    result = by_group(cfg, ["rope" if v else "nope" for v in use_rope], {"rope": rope, "nope": nope})
    chunk = cfg.get("attention_chunk_size")
    if chunk is not None and result[1].get("layers") != "nope":
        cfg.notes.append(f"the RoPE layers attend within chunks of attention_chunk_size={chunk} "
                         f"tokens: a mask, not part of the spec")
    return result
