"""Side by side: the per-head ablation of a real-model-sized decoder, batched
(posenc.empirical.pretrained.sweep: one pass per layer over all its heads, the layers below fed
their stored output, only the scored positions unembedded) vs the naive loop (one full forward of
the model per head, every position unembedded, as a hook-based script would do it).

Both must give the same per-head accuracies (checked).  The model is SmolLM2-135M's shape (30
layers, 9 query heads on 3 key/value heads of dim 64, width 576, vocabulary 49,152) with random
weights -- the cost does not depend on the weights -- or a real model file:
    python benchmarks/pretrained_ablation.py [--layers 0,10,20,29] [--threads 1] [--mode mean]
    python benchmarks/pretrained_ablation.py --gguf PATH/SmolLM2-135M-Instruct.Q4_1.gguf
The naive loop costs the same at every layer (about 2.6 CPU s a head for SmolLM2 at one thread),
so both run on the layers given (evenly spread by default); ``--full`` also times the batched
sweep of every layer.
"""

from __future__ import annotations

import argparse
import time

import torch

from posenc.empirical.pretrained import probes as P
from posenc.empirical.pretrained.families import layout
from posenc.empirical.pretrained.sweep import sweep


def smollm2_shaped():
    import transformers as tf
    from transformers.utils import logging
    logging.set_verbosity_error()
    cfg = tf.LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, rope_theta=100000.0,
                         tie_word_embeddings=True, attn_implementation="eager", bos_token_id=1)
    torch.manual_seed(0)
    return tf.LlamaForCausalLM(cfg).eval(), None


def clean_head_outputs(model, probe):
    """Every layer's head outputs on the probe, from one clean forward (the mean replacement)."""
    lay = layout(model)
    clean = {}
    hooks = [p.register_forward_pre_hook(lambda m, a, l=l: clean.__setitem__(l, a[0]))
             for l, p in enumerate(lay.out_projs)]
    with torch.inference_mode():
        model(input_ids=probe.tokens, use_cache=False)
    for h in hooks:
        h.remove()
    return {l: z.view(*z.shape[:-1], lay.n_heads, lay.head_dim) for l, z in clean.items()}


def naive_full_vocab(model, probe, z, layer, head, mode):
    """The naive loop as a user would write it: per head a full forward with a hook, logits at
    every position (``z``: that layer's clean head outputs)."""
    lay = layout(model)
    repl = torch.zeros_like(z) if mode == "zero" else z.mean(0, keepdim=True).expand_as(z)

    def hook(m, args):
        y = args[0].clone().view_as(z)
        y[:, :, head] = repl[:, :, head]
        return (y.flatten(-2),)
    h = lay.out_projs[layer].register_forward_pre_hook(hook)
    with torch.inference_mode():
        logits = model(input_ids=probe.tokens, use_cache=False).logits
    h.remove()
    pred = logits[:, probe.positions].argmax(-1)
    return float((pred == probe.targets).double().mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf")
    ap.add_argument("--hf")
    ap.add_argument("--layers", default="0,10,20,29")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mode", default="mean", choices=["zero", "mean"])
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.gguf or args.hf:
        from posenc.empirical.pretrained.loading import load
        from posenc.encodings.hf_local import local_model
        loaded = load(local_model(args.hf, args.gguf))
        model, tok = loaded.model, loaded.tokenizer
    else:
        model, tok = smollm2_shaped()
    vocab = P.vocabulary(model.get_input_embeddings().weight.shape[0], tok, model.config)
    probe = P.make_probe("induction", "decoder", vocab, seed=0)
    layers = [int(x) for x in args.layers.split(",")]
    lay = layout(model)
    print(f"model: {lay.model_type}, {len(lay.layers)} layers x {lay.n_heads} heads; probe induction "
          f"{tuple(probe.tokens.shape)}, {probe.n_predictions} predictions; layers {layers}; "
          f"{args.threads} thread(s); {args.mode} ablation")
    t0 = time.process_time()
    batched = sweep(model, probe, args.mode, layers=layers, patterns=False)
    t_batched = time.process_time() - t0
    t0 = time.process_time()
    z = clean_head_outputs(model, probe)
    naive = [[naive_full_vocab(model, probe, z[l], l, h, args.mode) for h in range(lay.n_heads)]
             for l in layers]
    t_naive = time.process_time() - t0
    for i in range(len(layers)):
        assert all(abs(a - b) < 1e-12 for a, b in zip(batched.acc[i], naive[i])), \
            (layers[i], batched.acc[i], naive[i])
    heads = len(layers) * lay.n_heads
    print(f"batched sweep  {t_batched:8.1f} CPU s  ({t_batched / heads:.2f} s a head)")
    print(f"naive loop     {t_naive:8.1f} CPU s  ({t_naive / heads:.2f} s a head)  "
          f"ratio naive / batched {t_naive / t_batched:.2f}")
    print("per-head accuracies identical")
    if args.full:
        t0 = time.process_time()
        sweep(model, probe, args.mode)
        t_full = time.process_time() - t0
        print(f"full batched sweep of {len(lay.layers) * lay.n_heads} heads (head scores included: no): "
              f"{t_full:.0f} CPU s = {t_full / 60:.1f} CPU min")


if __name__ == "__main__":
    main()
