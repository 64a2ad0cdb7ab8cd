"""Side by side: ms per training step and tokens/s of posenc's model vs a straightforward eager
implementation of the same architecture, at quick-preset sizes (``--preset paper`` on a GPU).

The eager reference (written here, reading the SAME parameters) computes attention as
softmax(Q K^T / sqrt(d) + B + M) V explicitly, applies RoPE by building the (T, d, d) rotation
matrices every step, and projects Q, K, V with three separate matmuls.  Before timing, the
two forward passes are checked to give the same logits.  A step is forward + backward +
AdamW.  Run:  python benchmarks/train_step.py [--pe rope] [--threads 1] [--steps 30]
[--preset quick|paper] [--device cpu|cuda] [--samples N] [--also compile,bf16]
"""

from __future__ import annotations

import argparse
import math
import time

import torch
import torch.nn.functional as F

from posenc.empirical.config import preset
from posenc.empirical.runs import dataset_for, model_for
from posenc.empirical.tasks import PAD


def rotation_matrices(rot, T: int) -> torch.Tensor:
    """(H, T, d, d) block rotation matrices built entry by entry from the frequency table."""
    H, d = rot.thetas.shape[0], rot.head_dim
    dev = rot.thetas.device
    R = torch.eye(d, device=dev).repeat(H, T, 1, 1)
    ang = torch.arange(T, dtype=torch.float32, device=dev)[None, :, None] * rot.thetas.float()[:, None, :]
    c, s = ang.cos(), ang.sin()
    for m, (a, b) in enumerate(rot.planes()):
        R[:, :, a, a], R[:, :, a, b] = c[..., m], -s[..., m]
        R[:, :, b, a], R[:, :, b, b] = s[..., m], c[..., m]
    return R


def eager_forward(model, tokens: torch.Tensor) -> torch.Tensor:
    cfg = model.cfg
    B, T = tokens.shape
    D, H = cfg.d_model, cfg.n_heads
    dh = D // H
    x0 = model.embed(tokens)
    if model.pos_embed is not None:
        x0 = x0 + model.pos_embed(T)
    keep = tokens != PAD
    pad = torch.zeros(B, 1, 1, T, device=tokens.device).masked_fill(~keep[:, None, None, :], float("-inf"))
    h = x0
    for blk in model.blocks:
        attn = blk.attn
        a = F.layer_norm(h, (D,), blk.ln1.weight, blk.ln1.bias)
        Wq, Wk, Wv = attn.qkv.weight.split(D, dim=0)
        q = (a @ Wq.T).view(B, T, H, dh).transpose(1, 2)
        k = (a @ Wk.T).view(B, T, H, dh).transpose(1, 2)
        v = (a @ Wv.T).view(B, T, H, dh).transpose(1, 2)
        if attn.rotary is not None:
            R = rotation_matrices(attn.rotary, T)  # (H, T, dh, dh)
            q = torch.einsum("htij,bhtj->bhti", R, q)
            k = torch.einsum("htij,bhtj->bhti", R, k)
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh) + pad
        if attn.bias is not None:
            scores = scores + attn.bias(T)
        z = torch.softmax(scores, dim=-1) @ v
        h = h + z.transpose(1, 2).reshape(B, T, D) @ attn.out.weight.T + attn.out.bias
        m = F.layer_norm(h, (D,), blk.ln2.weight, blk.ln2.bias)
        h = h + blk.mlp[2](F.gelu(blk.mlp[0](m)))
    h = F.layer_norm(h, (D,), model.ln_f.weight, model.ln_f.bias)
    w = keep.float()[:, :, None]
    return model.classifier((h * w).sum(1) / w.sum(1))


def make_step(forward, model, tokens, labels, amp: bool = False):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sync = torch.cuda.synchronize if tokens.is_cuda else (lambda: None)

    def step() -> float:
        sync()
        t0 = time.perf_counter()
        with torch.autocast(tokens.device.type, dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(forward(tokens), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sync()
        return time.perf_counter() - t0
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pe", default="rope")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--task", default="distance")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--heads", type=int, help="override the preset's number of heads")
    ap.add_argument("--d-model", type=int, help="override the preset's model width")
    ap.add_argument("--preset", default="quick", help="quick (default) or paper (a GPU's size)")
    ap.add_argument("--samples", type=int, help="generate fewer examples (only one batch is used)")
    ap.add_argument("--also", default="", help="comma list of extra rows for posenc's model: "
                    "compile (torch.compile), bf16 (bfloat16 autocast) -- other arithmetic or "
                    "a compiler, reported beside the float32 comparison, not instead of it")
    args = ap.parse_args()
    also = [a for a in args.also.split(",") if a]
    if set(also) - {"compile", "bf16"}:
        ap.error(f"--also takes compile and/or bf16; got {args.also!r}")
    torch.set_num_threads(args.threads)
    over = {}
    if args.heads:
        over["model.n_heads"] = args.heads
    if args.d_model:
        over["model.d_model"] = args.d_model
    if args.samples:
        over["task.n_samples"] = args.samples
    cfg = preset(args.preset, args.task, args.pe, **over)
    data = dataset_for(cfg).train
    B = cfg.batch_size
    tokens, labels = data.tokens[:B].to(args.device), data.labels[:B].to(args.device)
    torch.manual_seed(0)
    ours, eager = model_for(cfg).to(args.device), model_for(cfg).to(args.device)
    eager.load_state_dict(ours.state_dict())
    ours.train(), eager.train()
    if cfg.model.dropout:  # the paper preset's dropout would make the two forwards differ
        ours.eval(), eager.eval()
    with torch.no_grad():
        err = (ours(tokens) - eager_forward(eager, tokens)).abs().max().item()
    assert err < 1e-4, f"implementations disagree: {err}"
    steps = {"posenc": make_step(lambda t: ours(t), ours, tokens, labels),
             "eager": make_step(lambda t: eager_forward(eager, t), eager, tokens, labels)}
    for extra in also:
        m = model_for(cfg).to(args.device)
        m.load_state_dict(ours.state_dict())
        m.train(mode=ours.training)
        fwd = torch.compile(m) if extra == "compile" else m
        steps[f"posenc+{extra}"] = make_step(lambda t, f=fwd: f(t), m, tokens, labels,
                                             amp=extra == "bf16")
    rounds: dict[str, list[float]] = {k: [] for k in steps}
    for i in range(args.steps + 3):  # alternate single steps: background load hits both alike
        for k, step in steps.items():
            t = step()
            if i >= 3:  # warm-up excluded
                rounds[k].append(t)
    T = tokens.shape[1]
    print(f"train step, {args.preset} preset ({args.task}, pe {args.pe}): batch {B} x seq {T}, "
          f"d_model {cfg.model.d_model}, {cfg.model.n_heads} heads, {cfg.model.n_layers} layers, "
          f"{args.threads} thread(s), {args.device}; max |logit diff| {err:.1e}")
    best = {k: min(v) for k, v in rounds.items()}  # min: least disturbed by other processes
    for k in steps:
        print(f"  {k:<14} {1000 * best[k]:8.2f} ms/step (best of {len(rounds[k])})  "
              f"{B * T / best[k]:10.0f} tokens/s  vs eager {best['eager'] / best[k]:.2f}x")
    print(f"  speed-up posenc / eager (both float32): {best['eager'] / best['posenc']:.2f}x")


if __name__ == "__main__":
    main()
