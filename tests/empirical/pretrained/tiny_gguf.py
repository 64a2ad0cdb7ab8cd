"""A tiny Llama written as a GGUF file with the gguf package, as llama.cpp's converter lays one
out (tensor names blk.N.attn_q..., q and k rows permuted for its rotary layout), so that
transformers' GGUF reader -- the path `posenc ablate --gguf` takes -- loads it back."""

from __future__ import annotations

import numpy as np

TENSORS = {"self_attn.q_proj.weight": "attn_q", "self_attn.k_proj.weight": "attn_k",
           "self_attn.v_proj.weight": "attn_v", "self_attn.o_proj.weight": "attn_output",
           "mlp.gate_proj.weight": "ffn_gate", "mlp.up_proj.weight": "ffn_up",
           "mlp.down_proj.weight": "ffn_down", "input_layernorm.weight": "attn_norm",
           "post_attention_layernorm.weight": "ffn_norm"}


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_llama_gguf(model, path) -> None:
    import gguf

    cfg = model.config
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(256)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    tokens = ["<s>", "</s>"] + [f"w{i}" for i in range(cfg.vocab_size - 2)]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * len(tokens))
    w.add_token_types([3, 3] + [1] * (len(tokens) - 2))
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    top = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight"}
    for key, value in model.state_dict().items():
        a = value.numpy().astype(np.float32)
        if key in top:
            name = top[key]
        else:
            _, _, layer, *rest = key.split(".")
            part = ".".join(rest)
            name = f"blk.{layer}.{TENSORS[part]}.weight"
            if part == "self_attn.q_proj.weight":
                a = _permute(a, cfg.num_attention_heads)
            elif part == "self_attn.k_proj.weight":
                a = _permute(a, cfg.num_key_value_heads)
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
