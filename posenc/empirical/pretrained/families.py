"""Where the heads of a transformers model are: one table of the supported families.

Every supported family computes, in each layer, the heads' outputs z_h (head_dim each), lays
them side by side as one vector of ``n_heads * head_dim`` and sends it through one output
projection (``o_proj``, ``dense``, ``c_proj``).  Head h is the slice ``[h*head_dim,
(h+1)*head_dim)`` of that projection's *input*, so a forward pre-hook there replaces one head's
output -- the same place posenc's own models ablate (``hook_z``).  The table says, per model
type, where the layers lie under the base model and where the output projection lies in a layer.
Grouped key/value heads: query head h reads key/value head ``h // (n_heads // n_kv)``, as
transformers' ``repeat_kv`` lays them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import PosencError


@dataclass(frozen=True)
class Family:
    """``kind``: decoder (next-token probes) or encoder (masked and embedding probes);
    ``layers``: the layer list's path under ``model.base_model``; ``out_proj``: the output
    projection's path inside one layer."""

    kind: str
    layers: str
    out_proj: str


_DECODER = Family("decoder", "layers", "self_attn.o_proj")
_ENCODER = Family("encoder", "encoder.layer", "attention.output.dense")

#: model_type (transformers' config.model_type) -> Family.  Gemma 3's text model is
#: ``gemma3_text``; its GGUF files load as that.
FAMILIES: dict[str, Family] = {
    "llama": _DECODER,
    "mistral": _DECODER,
    "qwen2": _DECODER,
    "qwen3": _DECODER,
    "gemma": _DECODER,
    "gemma2": _DECODER,
    "gemma3_text": _DECODER,
    "phi3": _DECODER,
    "gpt_neox": Family("decoder", "layers", "attention.dense"),
    "gpt2": Family("decoder", "h", "attn.c_proj"),
    "bert": _ENCODER,
    "roberta": _ENCODER,
    "xlm-roberta": _ENCODER,
}


def family(model_type: Any) -> Family:
    """The family of ``model_type``, or one line naming the supported ones."""
    fam = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if fam is None:
        raise PosencError(f"model type {model_type!r} is not supported for head ablation; supported: "
                          f"{', '.join(sorted(FAMILIES))}")
    return fam


def _get(root: Any, path: str) -> Any:
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class Layout:
    """The heads of one model: its layers, their output projections and the head counts."""

    model_type: str
    family: Family
    layers: tuple[Any, ...]
    out_projs: tuple[Any, ...]
    n_heads: int
    n_kv: int
    head_dim: int

    @property
    def group_size(self) -> int:
        return self.n_heads // self.n_kv


def _config_int(cfg: Any, *names: str) -> Any:
    for name in names:
        value = getattr(cfg, name, None)
        if value is not None:
            return value
    return None


def layout(model: Any) -> Layout:
    """The :class:`Layout` of a transformers model, checked against its own weights: the output
    projection of every layer must take exactly ``n_heads * head_dim`` inputs."""
    cfg = model.config
    model_type = getattr(cfg, "model_type", None)
    fam = family(model_type)
    try:
        layers = tuple(_get(model.base_model, fam.layers))
        projs = tuple(_get(layer, fam.out_proj) for layer in layers)
    except AttributeError as exc:
        raise PosencError(f"this {model_type} model does not have the layout its family has "
                          f"({fam.layers}[i].{fam.out_proj}): {exc}") from None
    n_heads = _config_int(cfg, "num_attention_heads", "n_head")
    n_kv = _config_int(cfg, "num_key_value_heads") or n_heads
    hidden = _config_int(cfg, "hidden_size", "n_embd")
    head_dim = _config_int(cfg, "head_dim") or (hidden // n_heads if n_heads else None)
    if not (isinstance(n_heads, int) and isinstance(n_kv, int) and isinstance(head_dim, int)
            and n_heads > 0 and n_kv > 0 and head_dim > 0 and n_heads % n_kv == 0):
        raise PosencError(f"{model_type}: cannot read the head counts from the config (heads "
                          f"{n_heads!r}, key/value heads {n_kv!r}, head dim {head_dim!r})")
    for i, proj in enumerate(projs):
        weight = proj.weight
        width = weight.shape[0] if type(proj).__name__ == "Conv1D" else weight.shape[1]
        if width != n_heads * head_dim:
            raise PosencError(f"{model_type}: layer {i}'s output projection takes {width} inputs, not "
                              f"heads x head dim = {n_heads} x {head_dim}: the config does not match "
                              f"the weights")
    return Layout(model_type, fam, layers, projs, n_heads, n_kv, head_dim)
