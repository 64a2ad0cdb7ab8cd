"""Import a ``state_dict`` saved by the paper's scripts as a posenc run folder (paper-code mode).

The paper's scripts (Qihuai27/Deposit-Pattern-Research) end with
``torch.save(model.state_dict(), '.../model.pth')``.  :func:`import_checkpoint` reads
such a file (``weights_only``), checks its key names and shapes against the model of
``pe``, maps every tensor onto the paper-code model of :mod:`.model` (``code='paper'``)
and writes a run folder (``train_config.json`` + ``checkpoint.pt``) that
:func:`posenc.load_run`, ``posenc ablate`` and the probe read like a trained run.

``pe`` names the paper's model: ``nope``, ``absolute``, ``alibi``, ``relative``,
``random``, ``rope`` (``dis_gen/trans.py``'s ``position_encoding_type``),
``partialrope:K`` (``count_gen/partialrope.py`` with ``k_rope_heads = K``) or ``mla``
(``dis_gen/mla.py``).  The mapping (paper key -> posenc key):

* ``embedding.weight`` -> ``embed.weight``; ``fc_out`` -> ``classifier``;
* ``layers.L.{norm1,norm2}`` -> ``blocks.L.{ln1,ln2}``; ``layers.L.ffn.*`` -> ``blocks.L.mlp.*``;
* ``layers.L.{q,k,v}_linear`` -> ``blocks.L.attn.qkv`` (rows stacked q, k, v), ``out_linear`` -> ``out``;
* ``layers.L.relative_bias_table`` (2M+1, H), row (j - i) + M -> ``attn.bias.weight`` (H, 2M+1),
  column (i - j) + M: flipped and transposed;
* ``position_encoding.position_embeddings.weight`` (random) and ``pos_embed`` (MLA, (1, N, D))
  -> ``pos_embed.weight``;
* MLA: ``layers.L.attn.W_{DQ,UQ,QR,DKV,UK,UV,KR}`` -> ``q_down, q_up, q_rope, kv_down, k_up,
  v_up, k_rope``; ``out_proj`` -> ``out``; ``ln_f`` -> ``ln_f``;
* the fixed tables the code stores as buffers (``inv_freq``, partialrope's ``cos``/``sin``) are
  checked against the values they must have and dropped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Sequence

import torch

from ...encodings import MLA, ALiBi, Hybrid, LearnedAbsolute, NoPE, PESpec, RelativeBias, RoPE, Sinusoidal
from ...errors import PosencError
from ..config import apply_overrides, paper_code_task_fields_for, preset as make_preset
from ..paper_specs import paper_code_fields
from .runs import CHECKPOINT, CONFIG, FORMAT, atomic_torch_save, model_for
from .trigger_vocab import trigger_ids as resolve_triggers

TRANS_PES = ("nope", "absolute", "alibi", "relative", "random", "rope")
PAPER_PE_NAMES = TRANS_PES + ("partialrope:K", "mla")


def _spec_for(pe: str, sd: dict[str, torch.Tensor], n_heads: int) -> PESpec:
    """The catalogue spec of the paper code's ``pe`` model whose state dict is ``sd``."""
    if pe == "relative":
        rows = sd["layers.0.relative_bias_table"].shape[0]
        return RelativeBias(mode="table", max_distance=(rows - 1) // 2)
    if pe == "random":
        return LearnedAbsolute(max_len=sd["position_encoding.position_embeddings.weight"].shape[0])
    if pe.startswith("partialrope:"):
        k = int(pe.split(":", 1)[1])
        return RoPE() if k >= n_heads else RoPE(heads=k)
    if pe == "mla":
        latent = sd["layers.0.attn.W_DQ.weight"].shape[0]
        return MLA(kv_latent=latent, q_latent=latent, absolute="learned", rope="paper_code")
    return {"nope": NoPE(), "absolute": Sinusoidal(), "alibi": ALiBi(slopes="exp0"),
            "rope": Hybrid(additive=Sinusoidal(layout="half"), rope=RoPE())}[pe]


def _expected_keys(pe: str, n_layers: int) -> set[str]:
    per: list[str]
    if pe == "mla":
        per = [f"attn.W_{w}.weight" for w in ("DKV", "DQ", "UK", "UV", "UQ", "KR", "QR")] + \
            ["attn.out_proj.weight", "ffn.0.weight", "ffn.0.bias", "ffn.3.weight", "ffn.3.bias"]
        top = ["embedding.weight", "pos_embed", "ln_f.weight", "ln_f.bias", "fc_out.weight",
               "fc_out.bias"]
    else:
        per = [f"{n}.{p}" for n in ("q_linear", "k_linear", "v_linear", "out_linear", "ffn.0", "ffn.2")
               for p in ("weight", "bias")]
        per += {"relative": ["relative_bias_table"], "rope": ["rope.inv_freq"]}.get(pe, [])
        if pe.startswith("partialrope:"):
            per += ["rope.cos", "rope.sin"]
        top = ["embedding.weight", "fc_out.weight", "fc_out.bias"]
        top += {"random": ["position_encoding.position_embeddings.weight"],
                "rope": ["position_encoding.inv_freq"]}.get(pe, [])
    per += [f"{n}.{p}" for n in ("norm1", "norm2") for p in ("weight", "bias")]
    return set(top) | {f"layers.{l}.{k}" for l in range(n_layers) for k in per}


def _rank(key: str) -> int:
    """The number of axes of the paper code's tensor ``key``: biases, LayerNorm weights and the
    inverse frequencies 1, MLA's ``pos_embed`` (1, N, D) 3, every other tensor 2."""
    if key.endswith((".bias", "norm1.weight", "norm2.weight", "ln_f.weight", "inv_freq")):
        return 1
    return 3 if key == "pos_embed" else 2


def _check_values(key: str, v: torch.Tensor) -> None:
    """One tensor of a state_dict: real floating point and finite (integer weights would be
    imported cast, a model of NaNs "scores 0.0" in ablate with exit 0)."""
    if v.is_complex():
        raise PosencError(f"{key} is a complex tensor; the paper code's weights are real "
                          f"(a complex one would lose its imaginary part)")
    if not v.is_floating_point():
        raise PosencError(f"{key} is a {str(v.dtype).removeprefix('torch.')} tensor; the paper "
                          f"code's weights are floating point")
    if not bool(torch.isfinite(v).all()):
        raise PosencError(f"{key} holds non-finite values (NaN or inf): a diverged or "
                          f"damaged checkpoint")


def _check_rank(key: str, v: torch.Tensor) -> None:
    """The paper code's number of axes and no empty axis (the conversion would fail as an
    IndexError or a torch error)."""
    rank = _rank(key)
    if v.dim() != rank or 0 in v.shape or (key == "pos_embed" and v.shape[0] != 1):
        want = "(1, N, D)" if key == "pos_embed" else f"{rank} non-empty ax{'is' if rank == 1 else 'es'}"
        raise PosencError(f"{key} has shape {tuple(v.shape)}; the paper code's has {want}")


def _check_buffers(pe: str, sd: dict[str, torch.Tensor], d_model: int, head_dim: int) -> None:
    """The code's fixed tables must have the values its PE computes (else: another PE/size)."""
    def close(key: str, want: torch.Tensor) -> None:
        got = sd[key]
        if got.shape != want.shape or not torch.allclose(got.double(), want, atol=1e-5):
            raise PosencError(f"{key} is not the table of the paper code's {pe} model "
                              f"(another PE or head count?)")
    def f(w: int) -> torch.Tensor:
        return 1.0 / 10000 ** (torch.arange(0, w, 2, dtype=torch.float64) / w)
    for key in sd:
        if key.endswith("rope.inv_freq"):
            close(key, f(d_model if key.startswith("position_encoding") else head_dim))
        elif key.endswith(("rope.cos", "rope.sin")):
            n = sd[key].shape[0]
            ang = torch.arange(n, dtype=torch.float64)[:, None] * f(head_dim)[None, :]
            close(key, (ang.cos() if key.endswith("cos") else ang.sin()).repeat_interleave(2, 1))


def convert(sd: dict[str, Any], pe: str,
            n_heads: int) -> tuple[PESpec, dict[str, int], dict[str, torch.Tensor]]:
    """(catalogue spec, dims, posenc state dict) of a paper-code state dict; PosencError on a
    state dict that is not the paper code's ``pe`` model."""
    if pe not in TRANS_PES and pe != "mla" and not re.fullmatch(r"partialrope:[1-9][0-9]*", pe):
        raise PosencError(f"unknown paper PE {pe!r}; known: {', '.join(PAPER_PE_NAMES)}")
    if not isinstance(sd, dict) or not sd or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in sd.items()):
        raise PosencError("the file does not hold a state_dict (a mapping of names to tensors)")
    for key, v in sd.items():
        _check_values(key, v)
    if "embedding.weight" not in sd:
        raise PosencError("the state_dict has no embedding.weight: not a checkpoint of the paper's code")
    layers = sorted({int(m.group(1)) for k in sd if (m := re.match(r"layers\.(\d+)\.", k))})
    n_layers = len(layers)
    if n_layers == 0 or layers != list(range(n_layers)):
        raise PosencError("the state_dict has no layers.0 .. layers.N-1: not the paper code's model")
    want = _expected_keys(pe, n_layers)
    if set(sd) != want:
        missing, extra = sorted(want - set(sd)), sorted(set(sd) - want)
        raise PosencError(f"the state_dict is not the paper code's {pe} model: "
                          + (f"missing {', '.join(missing[:3])}" if missing else "")
                          + ("; " if missing and extra else "")
                          + (f"unexpected {', '.join(extra[:3])}" if extra else ""))
    for key, v in sd.items():
        _check_rank(key, v)
    vocab, D = sd["embedding.weight"].shape
    if pe == "mla":
        head_dim = sd["layers.0.attn.W_KR.weight"].shape[0]
        if D % head_dim:
            raise PosencError(f"W_KR is {head_dim} wide, which does not divide d_model {D}")
        n_heads = D // head_dim
        d_ff = sd["layers.0.ffn.0.weight"].shape[0]
    else:
        if pe == "relative":
            n_heads = sd["layers.0.relative_bias_table"].shape[1]
        if D % n_heads or (D // n_heads) % 2:
            raise PosencError(f"d_model {D} is not divisible into {n_heads} heads of even width "
                              f"(give the checkpoint's --heads)")
        head_dim, d_ff = D // n_heads, sd["layers.0.ffn.0.weight"].shape[0]
    _check_buffers(pe, sd, D, head_dim)
    out: dict[str, torch.Tensor] = {"embed.weight": sd["embedding.weight"],
                                    "classifier.weight": sd["fc_out.weight"],
                                    "classifier.bias": sd["fc_out.bias"]}
    for l in range(n_layers):
        p, q = f"layers.{l}.", f"blocks.{l}."
        for a, b in (("norm1", "ln1"), ("norm2", "ln2")):
            out[q + b + ".weight"], out[q + b + ".bias"] = sd[p + a + ".weight"], sd[p + a + ".bias"]
        if pe == "mla":
            for a, b in (("DQ", "q_down"), ("UQ", "q_up"), ("QR", "q_rope"), ("DKV", "kv_down"),
                         ("UK", "k_up"), ("UV", "v_up"), ("KR", "k_rope")):
                out[q + f"attn.{b}.weight"] = sd[p + f"attn.W_{a}.weight"]
            out[q + "attn.out.weight"] = sd[p + "attn.out_proj.weight"]
            for i in (0, 3):
                for t in ("weight", "bias"):
                    out[q + f"mlp.{i}.{t}"] = sd[p + f"ffn.{i}.{t}"]
            continue
        for t in ("weight", "bias"):
            qkv = [sd[p + f"{n}_linear.{t}"] for n in "qkv"]
            if len({x.shape for x in qkv}) > 1:
                raise PosencError(f"{p}q/k/v_linear.{t} have the shapes "
                                  f"{', '.join(str(tuple(x.shape)) for x in qkv)}; the paper "
                                  f"code's are equal")
            out[q + f"attn.qkv.{t}"] = torch.cat(qkv)
            out[q + f"attn.out.{t}"] = sd[p + f"out_linear.{t}"]
            for i in (0, 2):
                out[q + f"mlp.{i}.{t}"] = sd[p + f"ffn.{i}.{t}"]
        if pe == "relative":
            out[q + "attn.bias.weight"] = sd[p + "relative_bias_table"].flip(0).t().contiguous()
    if pe == "mla":
        out["pos_embed.weight"] = sd["pos_embed"][0]
        out["ln_f.weight"], out["ln_f.bias"] = sd["ln_f.weight"], sd["ln_f.bias"]
    elif pe == "random":
        out["pos_embed.weight"] = sd["position_encoding.position_embeddings.weight"]
    dims = {"vocab_size": vocab, "d_model": D, "n_heads": n_heads, "n_layers": n_layers, "d_ff": d_ff}
    return _spec_for(pe, sd, n_heads), dims, out


def import_checkpoint(file: str | Path, pe: str, task: str, out: str | Path,
                      n_heads: int = 16, preset: str = "paper",
                      seq_len: int | None = None, *, trigger_ids: Sequence[int] | None = None,
                      vocab: str | Path | None = None,
                      triggers: Sequence[str] | None = None) -> Path:
    """Write the run folder ``out`` for the paper-code checkpoint ``file`` (see the module
    doc).  The task is ``preset``'s ``task`` with the checkpoint's vocabulary (and
    ``seq_len`` when given) and the triggers the model was trained with: ``trigger_ids``, or
    the words ``triggers`` looked up in the tokenizer vocabulary ``vocab``
    (:func:`~.trigger_vocab.trigger_ids`; a count checkpoint's trigger count is the number of
    ids).  Nothing is written unless everything checks out."""
    file, out = Path(file), Path(out)
    if out.exists() or out.is_symlink():  # (a dangling link exists too)
        raise PosencError(f"{out} already exists; give a new folder for the imported run")
    if not file.is_file():
        raise PosencError(f"checkpoint {file} does not exist")
    try:
        with warnings.catch_warnings():  # torch's warnings about the file would precede the line
            warnings.simplefilter("ignore")
            sd = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # any unreadable file: one line
        raise PosencError(f"cannot read {file} as a torch state_dict "
                          f"({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:100] if str(exc) else ''})") from None
    spec, dims, state = convert(sd, pe, n_heads)
    ids = resolve_triggers(task, dims["vocab_size"], trigger_ids, vocab, triggers)
    cfg = make_preset(preset, task=task, pe=spec)
    changes: dict[str, Any] = {f"model.{k}": v for k, v in dims.items() if k != "vocab_size"}
    changes["task.vocab_size"] = dims["vocab_size"]
    changes["task.trigger_ids"] = list(ids)
    if task == "count":
        changes["task.n_triggers"] = len(ids)
    if seq_len is not None:
        changes["task.seq_len"] = seq_len
    changes.update(paper_code_fields(cfg.model.spec))
    # the data as paper-code mode makes them for this task (the paper's sampler, at the paper
    # preset the padding to 128 that the code's models were trained on: they pool every
    # position); the vocabulary is the checkpoint's, and a seq_len given here stays
    task_fields = paper_code_task_fields_for(preset, cfg, changes)
    task_fields.pop("task.vocab_size", None)
    changes.update({k: v for k, v in task_fields.items() if k not in changes})
    cfg = apply_overrides(cfg, changes)
    model = model_for(cfg)
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise PosencError(f"the checkpoint's tensors do not fit the paper-code {pe} model of "
                          f"this task ({str(exc).splitlines()[-1].strip()[:140]})") from None
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        os.chmod(tmp, 0o755)  # as a trained run folder (mkdtemp makes it 0700)
        (tmp / CONFIG).write_text(cfg.to_json() + "\n", encoding="utf-8")
        atomic_torch_save({"format": FORMAT, "model": model.state_dict(), "epoch": 0, "metrics": [],
                           "config": cfg.to_dict(),
                           "imported": {"file": str(file), "pe": pe}}, tmp / CHECKPOINT)
        (tmp / "imported.json").write_text(json.dumps(
            {"source": str(file.resolve()), "paper_pe": pe, "spec": cfg.model.pe, **dims,
             "trigger_ids": list(ids), "trigger_words": None if triggers is None else list(triggers),
             "vocab": None if vocab is None else str(Path(vocab).resolve())},
            indent=2) + "\n",
            encoding="utf-8")
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
