"""Tiny real model folders for the ``--hf DIR`` / ``--gguf FILE`` tests: transformers'
``save_pretrained`` of BertModel, GPT2LMHeadModel, LlamaForCausalLM and Gemma3ForCausalLM built
from small configs (hidden 32, 2 layers, random weights), and GGUF files written with the gguf
package's writer (metadata and one tensor: what transformers reads a config from).  Nothing is
downloaded."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

SMALL = dict(hidden_size=32, num_attention_heads=2, num_hidden_layers=2, intermediate_size=64,
             vocab_size=64)


def _torch_seed(seed: int) -> None:
    import torch
    torch.manual_seed(seed)


def _save(model, folder: Path, weights: str) -> Path:
    """``weights``: "safetensors" (save_pretrained), "sharded" (save_pretrained in shards of
    at most 20 kB, with model.safetensors.index.json) or "bin" (the config, and the state
    dict saved by torch as pytorch_model.bin, the older layout)."""
    import torch
    if weights == "bin":
        model.config.save_pretrained(folder)
        torch.save(model.state_dict(), Path(folder) / "pytorch_model.bin")
    else:
        model.save_pretrained(folder, **({"max_shard_size": "20KB"} if weights == "sharded" else {}))
    return folder


def bert(folder: Path, weights: str = "safetensors") -> Path:
    """A BertModel (no MLM head: the all-MiniLM layout) with 40 positions."""
    import transformers
    _torch_seed(0)
    config = transformers.BertConfig(**SMALL, max_position_embeddings=40)
    return _save(transformers.BertModel(config), folder, weights)


def gpt2(folder: Path, weights: str = "safetensors") -> Path:
    """A GPT2LMHeadModel with 48 positions (its table ``transformer.wpe``)."""
    import transformers
    _torch_seed(1)
    config = transformers.GPT2Config(n_embd=32, n_head=2, n_layer=2, n_positions=48, vocab_size=64,
                                    bos_token_id=0, eos_token_id=0)
    return _save(transformers.GPT2LMHeadModel(config), folder, weights)


def llama(folder: Path) -> Path:
    import transformers
    _torch_seed(2)
    config = transformers.LlamaConfig(**SMALL, num_key_value_heads=1, max_position_embeddings=128,
                                      rope_theta=50000.0)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def gemma3(folder: Path) -> Path:
    """A Gemma3ForCausalLM with one sliding and one full layer (their RoPE bases 10^4, 10^6)."""
    import transformers
    _torch_seed(3)
    config = transformers.Gemma3TextConfig(**SMALL, num_key_value_heads=1, head_dim=16,
                                           layer_types=["sliding_attention", "full_attention"],
                                           sliding_window=16, max_position_embeddings=256)
    transformers.Gemma3ForCausalLM(config).save_pretrained(folder)
    return folder


def gguf_file(path: Path, arch: str = "llama", base: float = 100000.0, heads: int = 4,
              width: int = 32, context: int = 256, blocks: int = 2,
              tensors: dict | None = None) -> Path:
    """A GGUF file with an architecture's metadata (what transformers' config reader takes) and
    ``tensors`` (name -> float32 array; default a token table).  Gemma 3's config from it has
    every 6th layer full attention, the others sliding."""
    import gguf

    os.makedirs(path.parent, exist_ok=True)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(context)
    w.add_embedding_length(width)
    w.add_block_count(blocks)
    w.add_feed_forward_length(2 * width)
    w.add_head_count(heads)
    w.add_head_count_kv(1)
    if arch != "gpt2":
        w.add_rope_freq_base(base)
        w.add_layer_norm_rms_eps(1e-6)
    else:
        w.add_layer_norm_eps(1e-5)
    if arch == "gemma3":
        w.add_key_length(width // heads)
        w.add_value_length(width // heads)
        w.add_sliding_window(16)
    w.add_vocab_size(16)
    for name, value in (tensors or {"token_embd.weight": np.zeros((16, width), np.float32)}).items():
        w.add_tensor(name, value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
