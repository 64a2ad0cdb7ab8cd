"""Tiny random-initialised models of every supported family, built from configs (no downloads),
and a Llama with a planted deposit: one head that alone solves the induction probe."""

from __future__ import annotations

import math
import warnings

import torch

VOCAB = 96


def _cfg(cls, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(attn_implementation="eager", **kw)


def tiny(model_type: str, seed: int = 0):
    """A tiny model of ``model_type`` (2 layers, 4 query heads; 2 key/value heads where the family
    has grouped ones), eval mode, float32."""
    import transformers as tf
    from transformers.utils import logging
    logging.set_verbosity_error()

    common = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=4)
    gqa = dict(common, num_key_value_heads=2)
    table = {
        "llama": lambda: tf.LlamaForCausalLM(_cfg(tf.LlamaConfig, **gqa)),
        "mistral": lambda: tf.MistralForCausalLM(_cfg(tf.MistralConfig, **gqa)),
        "qwen2": lambda: tf.Qwen2ForCausalLM(_cfg(tf.Qwen2Config, **gqa)),
        "qwen3": lambda: tf.Qwen3ForCausalLM(_cfg(tf.Qwen3Config, head_dim=8, **gqa)),
        "gemma": lambda: tf.GemmaForCausalLM(_cfg(tf.GemmaConfig, head_dim=8, **gqa)),
        "gemma2": lambda: tf.Gemma2ForCausalLM(_cfg(tf.Gemma2Config, head_dim=8, sliding_window=8, **gqa)),
        "gemma3_text": lambda: tf.Gemma3ForCausalLM(_cfg(tf.Gemma3TextConfig, head_dim=16, sliding_window=8,
                                                         layer_types=["sliding_attention", "full_attention"],
                                                         **gqa)),
        "phi3": lambda: tf.Phi3ForCausalLM(_cfg(tf.Phi3Config, pad_token_id=0, **gqa)),
        "gpt_neox": lambda: tf.GPTNeoXForCausalLM(_cfg(tf.GPTNeoXConfig, rotary_pct=0.5, **common)),
        "gpt2": lambda: tf.GPT2LMHeadModel(_cfg(tf.GPT2Config, vocab_size=VOCAB, n_embd=32, n_layer=2,
                                                n_head=4, n_positions=128, bos_token_id=VOCAB - 1,
                                                eos_token_id=VOCAB - 1)),
        "bert": lambda: tf.BertForMaskedLM(_cfg(tf.BertConfig, **common)),
        "bert-no-head": lambda: tf.BertModel(_cfg(tf.BertConfig, **common)),
        "roberta": lambda: tf.RobertaForMaskedLM(_cfg(tf.RobertaConfig, max_position_embeddings=160,
                                                      pad_token_id=1, **common)),
        "xlm-roberta": lambda: tf.XLMRobertaForMaskedLM(_cfg(tf.XLMRobertaConfig, max_position_embeddings=160,
                                                             pad_token_id=1, **common)),
    }
    torch.manual_seed(seed)
    model = table[model_type]()
    return model.eval()


DECODERS = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3", "gpt_neox",
            "gpt2")
ENCODERS = ("bert", "roberta", "xlm-roberta")

#: the planted model's ordinary tokens 0..TOKENS-1, its BOS, its width
TOKENS, BOS, WIDTH, HEAD_DIM = 32, 32, 64, 32


def planted(length: int, layer: int, head: int = 2, seed: int = 0, layers: int = 3):
    """A Llama (4 query heads of dim 32 on 2 key/value heads) whose head ``head`` of ``layer``
    alone solves the induction probe of ``length`` by construction: its query and key read a
    constant coordinate of the embedding, and RoPE turns them into a score peaked at the offset
    ``length - 1`` (the token after the previous occurrence); its value copies the attended token
    and its output writes it, 4-fold, onto the token coordinates the unembedding reads.  Every
    other weight is small and random (std 0.02), so the other heads and MLPs are alive but carry
    nothing of the probe."""
    import transformers as tf
    from transformers.utils import logging
    logging.set_verbosity_error()

    cfg = _cfg(tf.LlamaConfig, vocab_size=TOKENS + 2, hidden_size=WIDTH, intermediate_size=32,
               num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, head_dim=HEAD_DIM,
               rope_theta=10000.0, tie_word_embeddings=False, bos_token_id=BOS, eos_token_id=BOS + 1)
    torch.manual_seed(seed)
    model = tf.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02)
        emb = torch.zeros(TOKENS + 2, WIDTH)
        emb[:, TOKENS] = 1.0                      # the constant coordinate
        emb[torch.arange(TOKENS), torch.arange(TOKENS)] = 1.0
        emb[TOKENS:, TOKENS + 1] = 1.0            # BOS and the other specials
        model.model.embed_tokens.weight.copy_(emb)
        unembed = torch.zeros(TOKENS + 2, WIDTH)
        unembed[torch.arange(TOKENS), torch.arange(TOKENS)] = 1.0
        model.lm_head.weight.copy_(unembed)
        attn = model.model.layers[layer].self_attn
        scale = math.sqrt(WIDTH / 2)              # RMSNorm of one-hot + constant: x * sqrt(d / 2)
        half = HEAD_DIM // 2
        theta = 10000.0 ** (-torch.arange(half, dtype=torch.float64) * 2 / HEAD_DIM)
        delta = length - 1
        amplitude = 60.0
        q = torch.zeros(HEAD_DIM, dtype=torch.float64)
        k = torch.zeros(HEAD_DIM, dtype=torch.float64)
        q[:half] = amplitude
        k[:half] = torch.cos(theta * delta)       # k's plane m turned by -delta * theta_m, so that
        k[half:] = torch.sin(theta * delta)       # q_i . k_j = A sum_m cos(theta_m (i - j - delta))
        kv = head // 2
        rows_q = slice(head * HEAD_DIM, (head + 1) * HEAD_DIM)
        rows_kv = slice(kv * HEAD_DIM, (kv + 1) * HEAD_DIM)
        attn.q_proj.weight[rows_q] = 0.0
        attn.q_proj.weight[rows_q, TOKENS] = (q / scale).float()
        attn.k_proj.weight[rows_kv] = 0.0
        attn.k_proj.weight[rows_kv, TOKENS] = (k / scale).float()
        attn.v_proj.weight[rows_kv] = 0.0
        attn.v_proj.weight[rows_kv.start + torch.arange(TOKENS), torch.arange(TOKENS)] = 1.0 / scale
        attn.o_proj.weight[:, rows_q] = 0.0
        attn.o_proj.weight[torch.arange(TOKENS), rows_q.start + torch.arange(TOKENS)] = 4.0
    return model
