"""``--from-hf`` for a model type outside posenc's table (:mod:`posenc.encodings.hf_config`),
read through transformers' own config class where transformers is installed: its standardised
``rope_parameters`` (transformers 5: one rope dict, or one per layer type), its head dim and its
``max_position_embeddings`` make a RoPE spec.  transformers is imported only here, only then.

What the table knows and this cannot: the pairing (``rotate_half`` is assumed, transformers'
usual code: ``check --from-hf`` tests it on the model's code), a position field of the model
outside ``rope_parameters`` (a note says none is read), and a model without RoPE (refused).
"""

from __future__ import annotations

import importlib.util
from typing import Any, Optional

from ..errors import PosencError
from .base import PESpec
from .hf_layer_groups import by_group
from .hf_rope import HFConfig, head_dim_of, head_rope


def available() -> bool:
    return importlib.util.find_spec("transformers") is not None


def standardised(data: dict, where: str) -> dict:
    """The config dict as transformers' config class for its model type reads it: the keys the
    mapping reads, with the class's defaults and its standardised ``rope_parameters``."""
    import transformers

    model_type = data["model_type"]
    try:
        config = transformers.AutoConfig.for_model(
            model_type, **{k: v for k, v in data.items() if k != "model_type"})
    except Exception as exc:            # transformers' own validation: said in one line
        raise PosencError(f"{where}: model_type {model_type!r} is not in --from-hf's table and "
                          f"transformers refused the config ({type(exc).__name__}: "
                          f"{' '.join(str(exc).split())[:160]})") from None
    rope = getattr(config, "rope_parameters", None)
    if not isinstance(rope, dict) or not rope:
        raise PosencError(f"{where}: model_type {model_type!r} is not in --from-hf's table, and "
                          f"transformers' {type(config).__name__} has no rope_parameters (a model "
                          f"without RoPE needs a table entry)")
    keys = ("hidden_size", "num_attention_heads", "head_dim", "max_position_embeddings",
            "layer_types")
    return {"model_type": model_type, "rope_parameters": rope,
            **{k: getattr(config, k) for k in keys if getattr(config, k, None) is not None}}


def spec_through_transformers(data: dict, where: str, seq_len: Optional[int],
                              layers: Optional[str]) -> tuple[PESpec, HFConfig, dict]:
    """(spec, its HFConfig, info) of a config whose model type posenc's table lacks."""
    cfg = HFConfig(standardised(data, where), where, {}, layers)
    cfg.notes.append(f"model_type {cfg.model_type!r} is not in --from-hf's table: read through "
                     f"transformers' config class (rope_parameters, head dim, max positions; no "
                     f"other position field); rotate_half pairing assumed (check --from-hf tests "
                     f"the model's code)")
    head_dim, heads = head_dim_of(cfg)
    rope = cfg.get("rope_parameters")
    nested = {k: v for k, v in rope.items() if isinstance(v, dict)}

    def group(own: Any):
        return lambda: head_rope(cfg, seq_len, head_dim, heads, partial=True, theta_keys={},
                                 rope={k: v for k, v in own.items() if v is not None})
    if not nested:
        spec, info = group(rope)()
    else:
        types = cfg.get("layer_types") or list(nested)
        spec, info = by_group(cfg, list(types), {g: group(own) for g, own in nested.items()})
    return spec, cfg, info
