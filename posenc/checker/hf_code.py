"""``posenc check --from-hf config.json``: transformers' own position code for that config,
checked against the spec the config maps to (:func:`posenc.encodings.hf_config.spec_from_hf_config`).

The code checked, built from the config (no weights, nothing from the hub):

* rotary models -- the model module's ``<Model>RotaryEmbedding(config)`` and its
  ``apply_rotary_pos_emb`` (GPT-J: ``GPTJRotaryEmbedding`` and its interleaved
  ``apply_rotary_pos_emb`` on the first ``rotary_dim`` dims, as ``GPTJAttention`` slices; Phi:
  the first ``int(head_dim * partial_rotary_factor)`` dims, as ``PhiAttention`` slices), as
  ``f(x, positions)`` with x of shape (..., seq, head_dim);
* Bloom and Falcon with ALiBi -- ``build_alibi_tensor``; MPT -- ``build_mpt_alibi_tensor``; each
  is slope * key position, given here with the causal mask the model adds, as
  ``g(n_heads, n)``;
* T5 -- ``T5Attention.compute_bias`` of an encoder attention whose bias table holds the bucket
  index (one head, ``weight[b] = b``), so it returns T5's buckets of query i, key j as
  ``b(n)``.

The expectation is the spec's conventions (base, pairing, fraction and the scaling keys; ALiBi
press slopes, causal, and ``dtype=bfloat16`` for Falcon, whose bias is bfloat16 on purpose;
T5 two-sided buckets with the config's num_buckets and max_distance); ``expect`` overrides
keys of it.  Dynamic NTK and LongRoPE change their frequencies past a length: the rotary
function's drift probes stay below it (``max_positions``); dynamic NTK's rule past it and after a
long call is the ``dynamic scaling`` property (:mod:`.rope_dynamic`).  transformers is imported
here only.
"""

from __future__ import annotations

import importlib
import logging
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from ..encodings import PESpec
from ..encodings.hf_config import hf_spec, text_config
from ..encodings.hf_layer_groups import LayerGroupsDiffer
from ..errors import PosencError
from .expect import ROPE_KEYS, SCALING_KEYS, parse_expect
from .report import ConformanceReport
import inspect
from ..encodings.rope_scaling import USES
from . import check_callable

#: model types whose attention rotates a slice it takes itself (``apply_rotary_pos_emb`` sees
#: only the rotary dims); the others' ``apply_rotary_pos_emb`` gets the whole head.
SLICED_BY_ATTENTION = ("phi", "gptj", "deepseek_v3")
#: spec name -> the kind of check of its transformers code.
CHECKED = {"rope": "rope", "alibi": "bias", "relative_bias": "t5"}


def _transformers():
    try:
        import transformers
    except ImportError:
        raise PosencError("check --from-hf checks transformers' own code: install transformers "
                          "(the hf extra: pip install 'posenc[hf]')") from None
    logging.getLogger("transformers").setLevel(logging.ERROR)
    return transformers


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch on one intra-op thread inside the block (the thread count restored after).  The
    check calls transformers' code hundreds of times on tiny tensors (24 positions × head dim);
    with two threads each sin or cos of them spent ~1 ms of CPU in the thread pool instead of
    ~0.02 ms, 5 of the 10 s of CPU a head-dim-256 check took.  The values are
    the same: these element-wise ops do not depend on the thread count."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def hf_config_object(data: dict) -> Any:
    """The transformers config object of a config dict (its own class, its own defaults)."""
    transformers = _transformers()
    kw = {k: v for k, v in data.items() if k != "model_type"}
    try:
        return transformers.AutoConfig.for_model(data["model_type"], **kw)
    except Exception as exc:
        raise PosencError(f"transformers refused the config: {type(exc).__name__}: "
                          f"{' '.join(str(exc).split())[:200]}") from None


def module_name(model_type: str) -> str:
    """The transformers module folder of ``model_type``: transformers' own mapping
    (``model_type_to_module_name``), which sends a text model type of a multimodal model to its
    folder (``gemma3_text`` -> ``gemma3``, ``llama4_text`` -> ``llama4``)."""
    _transformers()
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    return model_type_to_module_name(model_type)


def _module(model_type: str):
    name = module_name(model_type)
    leaf = name.rsplit(".", 1)[-1]
    try:
        return importlib.import_module(f"transformers.models.{name}.modeling_{leaf}")
    except ImportError as exc:
        raise PosencError(f"check --from-hf: transformers has no modeling code for {model_type!r} "
                          f"(transformers.models.{name}: {exc.name} not found)") from None


def rotary_class(mod: Any, config: Any, model_type: str) -> str:
    """The name of the module's rotary embedding class of a text model: the one class whose name
    ends in ``RotaryEmbedding``, leaving out a vision tower's (Llama 4 has both); where several
    remain, the one named after the config class (``Llama4TextConfig`` ->
    ``Llama4TextRotaryEmbedding``)."""
    names = [n for n in dir(mod) if n.endswith("RotaryEmbedding") and "Vision" not in n]
    if len(names) > 1:
        own = type(config).__name__.removesuffix("Config") + "RotaryEmbedding"
        names = [own] if own in names else names
    if len(names) != 1:
        raise PosencError(f"transformers' {model_type} has {len(names)} rotary embedding classes; "
                          f"expected one")
    return names[0]


def rotary_function(data: dict, rotary_dims: int, layer_type: Optional[str] = None) -> Callable:
    """transformers' rotary embedding and ``apply_rotary_pos_emb`` of this config as
    ``f(x, positions)``; ``layer_type``: the layer group whose rotation it is, for a rotary
    embedding whose ``forward`` takes one (Gemma 3: ``sliding_attention`` or ``full_attention``;
    None: the first of the config's ``layer_types``)."""
    import torch

    config = hf_config_object(data)
    mod, model_type = _module(data["model_type"]), data["model_type"]
    name = rotary_class(mod, config, model_type)
    embedding = getattr(mod, name)(config)
    per_layer = "layer_type" in inspect.signature(embedding.forward).parameters
    if per_layer:
        layer_type = layer_type or list(getattr(config, "layer_types", None) or [None])[0]
        name += f"(layer_type={layer_type!r})"
    if not hasattr(mod, "apply_rotary_pos_emb") and hasattr(mod, "apply_rotary_emb"):
        return _complex_rotary(embedding, mod.apply_rotary_emb, model_type, name)
    apply, apply_name = mod.apply_rotary_pos_emb, "apply_rotary_pos_emb"
    if getattr(config, "rope_interleave", False):
        apply = _interleaved(mod.apply_rotary_pos_emb_interleave)
        apply_name = "apply_rotary_pos_emb_interleave (its output permutation undone)"
    sliced = model_type in SLICED_BY_ATTENTION

    def rotary(x4, positions):
        if per_layer:
            return embedding(x4, positions, layer_type)
        return embedding(x4, positions)

    def f(x, positions):
        x, positions = torch.as_tensor(x), torch.as_tensor(positions)
        shape = x.shape
        if model_type == "gptj":                     # (batch, seq, heads, dim)
            x4 = x.reshape(-1, shape[-2], 1, shape[-1])
            sin, cos = embedding(x4, positions[None])
            out = apply(x4[..., :rotary_dims], sin, cos)
            return torch.cat([out, x4[..., rotary_dims:]], -1).reshape(shape)
        x4 = x.reshape(-1, 1, shape[-2], shape[-1])  # (batch, heads, seq, dim)
        cos, sin = rotary(x4, positions[None])
        if sliced:
            out = apply(x4[..., :rotary_dims], x4[..., :rotary_dims], cos, sin)[0]
            return torch.cat([out, x4[..., rotary_dims:]], -1).reshape(shape)
        return apply(x4, x4, cos, sin)[0].reshape(shape)
    f.__qualname__ = f"transformers {model_type} {name} + {apply_name}"
    return f


def _complex_rotary(embedding: Any, apply: Callable, model_type: str, name: str) -> Callable:
    """A rotary embedding that returns ``freqs_cis`` (complex ``e^{i theta_m t}``) and the
    ``apply_rotary_emb(xq, xk, freqs_cis)`` that multiplies the pairs (2m, 2m+1) as complex
    numbers (Llama 4), on x of shape (batch, seq, heads, dim), as ``f(x, positions)``."""
    import torch

    def f(x, positions):
        x, positions = torch.as_tensor(x), torch.as_tensor(positions)
        shape = x.shape
        x4 = x.reshape(-1, shape[-2], 1, shape[-1])          # (batch, seq, heads, dim)
        freqs_cis = embedding(x4, positions[None])
        return apply(x4, x4, freqs_cis)[0].reshape(shape)
    f.__qualname__ = f"transformers {model_type} {name} + apply_rotary_emb"
    return f


def _interleaved(apply: Callable) -> Callable:
    """DeepSeek-V3's ``apply_rotary_pos_emb_interleave`` with its output in its input's layout: it
    rotates the pairs (2i, 2i+1) and writes them to (i, i + r/2), one permutation of q and of k
    that leaves every logit as it is (transformers: interleaved weights for efficiency); undone
    here, so that the function checked is the rotation itself."""
    import torch

    def unpermuted(q, k, cos, sin):
        def back(x):
            half = x.shape[-1] // 2
            return torch.stack([x[..., :half], x[..., half:]], -1).flatten(-2)
        return tuple(back(x) for x in apply(q, k, cos, sin))
    return unpermuted


def alibi_function(data: dict) -> Callable:
    """transformers' ALiBi of this model type, with the causal mask, as ``g(n_heads, n)``."""
    import torch

    model_type = data["model_type"]
    mod = _module(model_type)

    def g(n_heads, n):
        if model_type == "mpt":
            bias = mod.build_mpt_alibi_tensor(n_heads, n)                      # (H, 1, n)
        else:
            bias = mod.build_alibi_tensor(torch.ones(1, n, dtype=torch.long), n_heads,
                                          torch.float32)                     # (H, 1, n)
        mask = torch.full((n, n), float("-inf")).triu(1)
        return bias.reshape(n_heads, 1, n).float() + mask
    g.__qualname__ = f"transformers {model_type} " + ("build_mpt_alibi_tensor" if model_type == "mpt"
                                                     else "build_alibi_tensor")
    return g


def t5_function(data: dict) -> Callable:
    """transformers' ``T5Attention.compute_bias`` (encoder) returning the bucket index."""
    import torch

    config = hf_config_object({**data, "num_heads": 1})
    attention = _module("t5").T5Attention(config, has_relative_attention_bias=True)
    with torch.no_grad():
        attention.relative_attention_bias.weight.copy_(
            torch.arange(config.relative_attention_num_buckets, dtype=torch.float32)[:, None])

    def b(n):
        with torch.no_grad():
            return attention.compute_bias(n, n, device="cpu")[0, 0]
    b.__qualname__ = "transformers T5Attention.compute_bias (encoder)"
    return b


def expectation(spec: PESpec, model_type: str) -> dict:
    """The ``--expect`` dict stating the spec's conventions."""
    if spec.name == "rope":
        out = {k: getattr(spec, k) for k in ROPE_KEYS}
        if spec.scaled:
            out["scaling"] = spec.scaling
            out.update({k: getattr(spec, k) for k in USES[spec.scaling]
                        if getattr(spec, k) is not None})
        return out
    if spec.name == "alibi":
        out = {"slopes": spec.slopes, "direction": spec.direction}
        return {**out, "dtype": "bfloat16"} if model_type == "falcon" else out
    if spec.name == "relative_bias" and spec.mode == "t5":
        return {"bidirectional": "true", "num_buckets": spec.num_buckets,
                "max_distance": spec.max_distance}
    raise PosencError(f"check --from-hf: no transformers code to check for {spec.to_string()}")


def _merge(derived: dict, expect: Any, kind: str) -> dict:
    """``expect`` (string or dict) overriding keys of the derived expectation."""
    if expect is None or expect == "" or expect == {}:
        return derived
    given = parse_expect(expect, kind)
    given.pop("kind", None)
    if kind == "rope" and any(k in SCALING_KEYS for k in given):    # a new scaling replaces all
        derived = {k: v for k, v in derived.items() if k not in SCALING_KEYS}
    return {**derived, **given}


def check_hf(source: Any, *, expect: Any = None, seq_len: Optional[int] = None,
             code: Any = None, layers: Optional[str] = None,
             where: Optional[str] = None) -> tuple[ConformanceReport, str, dict]:
    """Check transformers' code for the config ``source`` against the spec it maps to.

    Parameters
    ----------
    source : str, os.PathLike or dict
        The config the spec comes from (a local config.json or its dict; a multimodal config's
        ``text_config`` is its language model's).
    expect : str or dict, optional
        ``--expect`` keys that replace the spec's (e.g. ``"base=20000"``).
    seq_len : int, optional
        As :func:`~posenc.encodings.hf_config.spec_from_hf_config`.
    code : str, os.PathLike or dict, optional
        Build transformers' code from this config instead (default ``source``): a test of the
        check itself, code and expectation from two different configs.
    layers : str, optional
        The layer group to check, for a model whose layers differ in position (Gemma 3:
        ``sliding_attention`` or ``full_attention``; Llama 4: ``rope``): its spec, and the
        rotary code of that layer type (:func:`check_hf_groups` checks each group in turn).
    where : str, optional
        The name of a dict ``source`` in messages (a GGUF file).

    Returns
    -------
    (report, spec, info) : the :class:`ConformanceReport`, the spec string and its info.
    """
    spec, info = hf_spec(source, seq_len=seq_len, layers=layers, where=where)
    data = text_config(code if code is not None else source)[0]
    if code is not None and data.get("model_type") != info["model_type"]:
        raise PosencError("check --from-hf: the code's config is another model type")
    spec_text = spec.to_string()
    if spec.name not in CHECKED:
        raise PosencError(f"check --from-hf: {info['model_type']}'s {spec_text} has no transformers "
                          f"position code to check (a learned table or none); check takes RoPE, "
                          f"ALiBi and T5 buckets")
    kind = CHECKED[spec.name]
    expected = _merge(expectation(spec, info["model_type"]), expect, kind)
    with one_torch_thread():
        if kind == "rope":
            code_info = hf_spec(data, seq_len=seq_len, layers=layers)[1] if code is not None else info
            fn = rotary_function(data, code_info["rotary_dims"], layer_type=_layer_type(info))
            limit = _probe_limit(spec, info)
            report = check_callable(fn, "rope", dim=info["head_dim"], expect=expected,
                                    max_positions=limit)
        elif kind == "bias":
            report = check_callable(alibi_function(data), "bias", expect=expected)
        else:
            report = check_callable(t5_function(data), "t5", expect=expected)
    report.summary["from_hf"] = {"spec": spec_text, "model_type": info["model_type"],
                                 "head_dim": info["head_dim"], "heads": info["heads"],
                                 "source": info["source"]}
    if info.get("layers") is not None:
        report.summary["from_hf"]["layers"] = info["layers"]
    return report, spec_text, info


def _layer_type(info: dict) -> Optional[str]:
    """The transformers layer type of the group stated (Llama 4's rope/nope groups are not
    layer types: its rotary embedding takes none)."""
    group = info.get("layers")
    return group if group in ("sliding_attention", "full_attention") else None


def check_hf_groups(source: Any, *, expect: Any = None, layers: Optional[str] = None,
                    where: Optional[str] = None) -> list[tuple[Optional[str], Any, dict]]:
    """:func:`check_hf` of the layer group ``layers``, or, when none is chosen and the model's
    layers fall into several groups (Gemma 2 and 3: sliding and full; Llama 4: rope and nope),
    of every group in turn: a list of (group or None, the report -- or the one-line
    :class:`PosencError` of a group with no position code to check, such as Llama 4's NoPE
    layers --, info).  A model of one group gives one entry, group None; a chosen group
    that cannot be checked raises."""
    if layers is not None:
        report, _, info = check_hf(source, expect=expect, layers=layers, where=where)
        return [(layers, report, info)]
    try:
        _, info = hf_spec(source, where=where)
        groups = dict(info.get("layer_groups") or {})
    except LayerGroupsDiffer as exc:
        groups = exc.groups
    if len(groups) < 2:
        report, _, info = check_hf(source, expect=expect, where=where)
        return [(None, report, info)]
    out: list[tuple[Optional[str], Any, dict]] = []
    for group, count in groups.items():
        try:
            report, _, info = check_hf(source, expect=expect, layers=group, where=where)
        except PosencError as exc:
            out.append((group, exc, {"layer_groups": groups, "layers": group}))
            continue
        out.append((group, report, info))
    if all(isinstance(r, PosencError) for _, r, _ in out):
        raise PosencError("check --from-hf: no layer group has position code to check: "
                          + "; ".join(f"{g}: {r}" for g, r, _ in out)[:400])
    return out


def _probe_limit(spec: PESpec, info: dict) -> Optional[int]:
    """Positions the rotary function is probed below: a length-dependent scaling changes its
    frequencies past its length; GPT-J's table ends at n_positions (the check finds that)."""
    if spec.scaling == "dynamic":
        return spec.original
    if spec.scaling == "longrope":
        return spec.original
    return None
