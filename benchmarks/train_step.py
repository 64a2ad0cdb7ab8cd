"""Side by side: ms per training step of posenc's model vs a plain-PyTorch model of the paper's
code (the baseline) and a straightforward eager implementation of posenc's own architecture, at
quick-preset sizes (``--preset paper`` on a GPU), at 1 and 2 threads, for RoPE, ALiBi and
sinusoidal.

* paper baseline (benchmarks/paper_baseline.py): the paper code's architecture at the same sizes
  -- explicit matmul attention, RoPE by view/stack every step, keys and values from the input
  embeddings, separate biased Q/K/V projections, ReLU, no padding mask.  Its own random weights
  (a different architecture, so its logits are not comparable).
* eager reference (below, reading the SAME parameters as posenc's model): attention as
  softmax(Q K^T / sqrt(d) + B + M) V, RoPE by (T, d, d) rotation matrices built every step,
  three separate Q, K, V matmuls.  Checked to give posenc's logits before timing.

A step is forward + backward + AdamW on one batch; every model steps through the same
``--batches`` batches (the first of an epoch's seeded shuffle: the lengths, and so the padding, a
run meets) ``--rounds`` times.  ``--schedule blocks`` (default): in each round every model in
turn takes one untimed step and then its batches in a row, as consecutive steps of a training run
do; ``--schedule steps``: the models alternate single steps (round-robin), so each step starts
with the caches the other models left (the method before 2026-11-30 evening; both are reported in
benchmarks/results/).  Either way background load hits the models alike; per batch the best step
(least disturbed) and the median are taken and averaged over the batches, and the ratio paper /
posenc is reported -- by wall clock and by this process's CPU time (``time.process_time``; on a
shared, loaded machine the scheduler's gaps do not count in it; at 1 thread it is the step's own
cost, at 2 the sum over both threads).  Run:
python benchmarks/train_step.py [--pe rope,alibi,sinusoidal] [--threads 1,2] [--batches 10]
[--rounds 3] [--schedule blocks|steps] [--task distance|count] [--preset quick|paper]
[--device cpu|cuda] [--samples N] [--also compile,bf16] [--profile] [--set KEY=VALUE ...]
[--paper-code]

``--paper-code``: posenc's model in paper-code mode (``ModelConfig(code='paper')``, the fields of
``posenc.empirical.paper_specs.paper_code_fields`` and the paper-code task fields, as a
``posenc reproduce --paper-code`` sweep builds them) beside the baseline of the same paper model
(``--pe`` then takes the paper code's PE names: rope -- trans.py's, with the input-side table --,
alibi, nope, absolute, mla).  Before timing, the baseline's weights, under the code's names
(``paper_baseline.code_state_dict``), go through posenc's importer
(``paper_import.convert``) into posenc's model, and both must give the same logits on every
batch (max |diff| < 1e-4: float32 with logits of order 1, a 4-layer model whose two
implementations differ only in summation order measures ~5e-7).  Rows: ``posenc`` (the training
step's door, ``fast.forward``), ``posenc-ref`` (the reference forward ``model(tokens)``: the same
computation where the door does not cover the model) and ``paper-code``.  The paper's regime at
two cores' size, e.g. ``--paper-code --preset paper-small``, or before that preset exists
``--preset quick --set task.vocab_size=574 --set task.max_left=25 --set task.max_gap=70
--set task.max_right=25 --set task.seq_len=128``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F
from paper_baseline import PaperMLAModel, PaperModel, code_state_dict

from posenc.empirical import fast
from posenc.empirical.config import apply_overrides, paper_code_task_fields_for, preset
from posenc.empirical.paper_specs import paper_code_fields
from posenc.empirical.training.runs import dataset_for, model_for
from posenc.empirical.tasks import PAD
from posenc.empirical.training.paper_import import convert
from posenc.empirical.training.train import make_optimizer

PAPER_PE = {"rope": "rope", "alibi": "alibi", "sinusoidal": "absolute", "nope": "nope"}
#: --paper-code: the paper code's PE name -> posenc's preset name of its model
PAPER_CODE_PE = {"rope": "paper-rope", "alibi": "paper-alibi", "nope": "paper-nope",
                 "absolute": "paper-absolute", "mla": "paper-mla"}


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


def why_not_text(model, tokens: torch.Tensor) -> str:
    """Whether the fast path's door covers ``model`` on ``tokens``, in words."""
    reason = fast.why_not(model, tokens)
    return "packed" if reason is None else f"reference ({reason[1]})"


def make_step(forward, model, batches, amp: bool = False, opt=None):
    """A function doing step i on batch i mod len(batches) and returning its (wall, CPU) seconds.
    ``opt``: the optimiser (default: torch's default AdamW, what the paper's code uses)."""
    opt = opt if opt is not None else torch.optim.AdamW(model.parameters(), lr=1e-4)
    device = batches[0][0].device
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def step(i: int = 0) -> tuple[float, float]:
        tokens, labels = batches[i % len(batches)]
        sync()
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(forward(tokens), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sync()
        return time.perf_counter() - t0, time.process_time() - c0
    return step


def paper_model(cfg, device) -> PaperModel:
    m, t = cfg.model, cfg.task
    if cfg.model.pe not in PAPER_PE:
        raise SystemExit(f"the paper baseline has no counterpart of pe {cfg.model.pe!r}")
    return PaperModel(t.vocab_size, t.n_classes, m.d_model, m.n_heads, m.n_layers, m.d_ff,
                      m.dropout, PAPER_PE[m.pe], t.length).to(device)


def parse_sets(items: list[str]) -> dict:
    """``KEY=VALUE`` items -> overrides (the value read as JSON where it is, else a string)."""
    over = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise SystemExit(f"--set takes KEY=VALUE; got {item!r}")
        try:
            over[key] = json.loads(value)
        except json.JSONDecodeError:
            over[key] = value
    return over


def make_config(args, pe: str):
    """The run config of ``pe`` at ``args.preset`` with the overrides; with ``--paper-code`` the
    paper-code model and task fields of a paper-code sweep (the user's overrides win)."""
    over = parse_sets(args.set)
    if args.heads:
        over["model.n_heads"] = args.heads
    if args.d_model:
        over["model.d_model"] = args.d_model
    if args.samples:
        over["task.n_samples"] = args.samples
    if not args.paper_code:
        return preset(args.preset, args.task, pe, **over)
    if pe not in PAPER_CODE_PE:
        raise SystemExit(f"--paper-code takes the paper code's PEs {', '.join(PAPER_CODE_PE)}; got {pe!r}")
    cfg = preset(args.preset, args.task, PAPER_CODE_PE[pe])
    fields = {**paper_code_fields(cfg.model.spec), **paper_code_task_fields_for(args.preset, cfg, over)}
    return apply_overrides(cfg, {**fields, **over})


def paper_code_pair(cfg, pe: str, device) -> tuple[torch.nn.Module, torch.nn.Module]:
    """(posenc's paper-code model, the baseline) holding the same weights: the baseline's own
    random ones (MLA's zero-initialised position table drawn too, so that it is tested), mapped
    by posenc's importer of the code's checkpoints."""
    m, t = cfg.model, cfg.task
    torch.manual_seed(0)
    ours = model_for(cfg)
    if pe == "mla":
        paper: torch.nn.Module = PaperMLAModel(t.vocab_size, ours.n_classes, m.d_model, m.n_heads,
                                               m.n_layers, m.d_ff, m.dropout,
                                               ours.blocks[0].attn.q_latent, t.length)
        with torch.no_grad():
            paper.pos_embed.normal_(std=0.02)
    else:
        paper = PaperModel(t.vocab_size, ours.n_classes, m.d_model, m.n_heads, m.n_layers, m.d_ff,
                           m.dropout, pe, t.length)
    spec, _, state = convert(code_state_dict(paper), pe, m.n_heads)
    if spec.to_string() != cfg.model.spec.to_string():      # convert gives the PESpec (h-specs)
        raise SystemExit(f"the importer maps the code's {pe} onto {spec.to_string()}, the config "
                         f"has {cfg.model.spec.to_string()}")
    ours.load_state_dict(state)
    return ours.to(device), paper.to(device)


def measure(args, pe: str, threads: int, also: list[str]) -> dict[str, list[float]]:
    torch.set_num_threads(threads)
    cfg = make_config(args, pe)
    data = dataset_for(cfg).train
    B = cfg.batch_size
    # the first batches of a training epoch (a seeded shuffle), in turn: the lengths a run meets
    order = torch.randperm(len(data.tokens), generator=torch.Generator().manual_seed(0))
    batches = [(data.tokens[idx].to(args.device), data.labels[idx].to(args.device))
               for idx in order[:args.batches * B].split(B)]
    if args.paper_code:  # the same weights in both; the reference forward a row of its own
        ours, paper = paper_code_pair(cfg, pe, args.device)
        other, other_name = model_for(cfg).to(args.device), "posenc-ref"
        other.load_state_dict(ours.state_dict())
        other_forward = other
        checks = [(lambda t: paper(t), "paper-code"), (other_forward, "posenc-ref")]
    else:
        torch.manual_seed(0)
        ours, other = model_for(cfg).to(args.device), model_for(cfg).to(args.device)
        other.load_state_dict(ours.state_dict())
        paper, other_name = paper_model(cfg, args.device), "eager"
        other_forward = lambda t: eager_forward(other, t)  # noqa: E731
        checks = [(other_forward, "eager")]
    for m in (ours, other, paper):
        m.train(not cfg.model.dropout)  # the paper preset's dropout would make forwards differ
    with torch.no_grad():
        errs = {name: max((fast.forward(ours, t) - f(t)).abs().max().item() for t, _ in batches)
                for f, name in checks}
    for name, err in errs.items():
        assert err < 1e-4, f"posenc and {name} disagree: max |logit diff| {err}"
    # posenc: the training step's forward (the fast path's door; the default TrainConfig.step)
    steps = {"posenc": make_step(lambda t: fast.forward(ours, t), ours, batches,
                                 opt=make_optimizer(ours, cfg)),
             "paper-code": make_step(lambda t: paper(t), paper, batches),
             other_name: make_step(other_forward, other, batches,
                                   opt=make_optimizer(other, cfg) if args.paper_code else None)}
    for extra in also:
        m = model_for(cfg).to(args.device)
        m.load_state_dict(ours.state_dict())
        m.train(mode=ours.training)
        fwd = torch.compile(m) if extra == "compile" else m
        steps[f"posenc+{extra}"] = make_step(lambda t, f=fwd: f(t), m, batches,
                                             amp=extra == "bf16")
    K = len(batches)
    wall: dict[str, list[list[float]]] = {k: [[] for _ in range(K)] for k in steps}
    cpu: dict[str, list[list[float]]] = {k: [[] for _ in range(K)] for k in steps}
    if args.schedule == "steps":
        for i in range(K * args.rounds + 3):  # round-robin single steps: load hits all alike
            for k, step in steps.items():
                w, c = step(i)
                if i >= 3:  # warm-up excluded
                    wall[k][i % K].append(w)
                    cpu[k][i % K].append(c)
    else:  # "blocks": each model steps through all K batches in a row, as in a training run
        warm: dict[str, float] = {}
        for r in range(args.rounds + 1):
            for k, step in steps.items():
                t0 = time.perf_counter()
                step(K - 1)  # one untimed step first: the model's own state warm, as in training
                for i in range(K):
                    w, c = step(i)
                    if r:  # round 0: warm-up
                        wall[k][i].append(w)
                        cpu[k][i].append(c)
                if not r:  # round 0's K + 1 steps: a compiler compiles here, once per shape
                    warm[k] = time.perf_counter() - t0
    T = max(int((t != PAD).sum(1).max()) for t, _ in batches)
    real = statistics.mean(float((t != PAD).sum(1).float().mean()) for t, _ in batches)
    mode = f"paper-code {cfg.model.spec.to_string()}, " if args.paper_code else ""
    print(f"\ntrain step, {args.preset} preset ({args.task}, {mode}pe {pe}): {K} batches of {B} x "
          f"{batches[0][0].shape[1]} columns (real tokens <= {T}, mean {real:.1f}) in turn, "
          f"d_model {cfg.model.d_model}, {cfg.model.n_heads} heads of dim "
          f"{cfg.model.head_dim}, {cfg.model.n_layers} layers, {threads} thread(s), {args.device}; "
          f"fast path: {why_not_text(ours, batches[0][0])}; max |logit diff| posenc vs "
          + ", ".join(f"{k} {v:.1e}" for k, v in errs.items())
          + f"; load average {os.getloadavg()[0]:.1f}")
    # per batch the best (least disturbed) / median step, averaged over the batches
    best = {k: statistics.mean(min(b) for b in v) for k, v in wall.items()}
    med = {k: statistics.mean(statistics.median(b) for b in v) for k, v in wall.items()}
    cbest = {k: statistics.mean(min(b) for b in v) for k, v in cpu.items()}
    print(f"  {'':<14} {'wall best':>10} {'median':>8}   {'CPU best':>9}   "
          f"paper-code / this: wall best, median, CPU")
    for k in steps:
        print(f"  {k:<14} {1000 * best[k]:10.2f} {1000 * med[k]:8.2f}   {1000 * cbest[k]:9.2f}   "
              f"{best['paper-code'] / best[k]:5.2f}x {med['paper-code'] / med[k]:5.2f}x "
              f"{cbest['paper-code'] / cbest[k]:5.2f}x")
    print(f"  speed-up posenc vs paper-code baseline: {best['paper-code'] / best['posenc']:.2f}x "
          f"wall best, {med['paper-code'] / med['posenc']:.2f}x wall median, "
          f"{cbest['paper-code'] / cbest['posenc']:.2f}x CPU time; vs {other_name} "
          f"{best[other_name] / best['posenc']:.2f}x wall best, "
          f"{cbest[other_name] / cbest['posenc']:.2f}x CPU time")
    if args.schedule == "blocks" and also:  # what a compiler costs before its first fast step
        shapes = len({tuple(t.shape) for t, _ in batches})
        for k in steps:
            extra = warm[k] - (K + 1) * med[k]
            print(f"  warm-up {k:<14} {warm[k]:8.2f} s for {K + 1} steps ({shapes} batch shapes): "
                  f"{extra:8.2f} s over its median step (compilation, once per shape)")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for i in range(5):
                steps["posenc"](i)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pe", default="rope,alibi,sinusoidal", help="comma list")
    ap.add_argument("--threads", default="1,2", help="comma list of thread counts")
    ap.add_argument("--batches", type=int, default=10, help="distinct batches, stepped in turn "
                    "(the first of an epoch's seeded shuffle; 1: one batch again and again)")
    ap.add_argument("--rounds", type=int, default=3, help="steps per batch and model")
    ap.add_argument("--schedule", default="blocks", choices=["blocks", "steps"],
                    help="blocks (default): per round, each model takes its --batches steps in a "
                    "row (after one untimed step), as consecutive steps of a training run do; "
                    "steps: the models alternate single steps (each step then starts with the "
                    "caches the other models left)")
    ap.add_argument("--task", default="distance")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--heads", type=int, help="override the preset's number of heads")
    ap.add_argument("--d-model", type=int, help="override the preset's model width")
    ap.add_argument("--preset", default="quick", help="quick (default), paper (a GPU's size) or "
                    "any other preset")
    ap.add_argument("--samples", type=int, help="generate fewer examples (only one batch is used)")
    ap.add_argument("--also", default="", help="comma list of extra rows for posenc's model: "
                    "compile (torch.compile), bf16 (bfloat16 autocast) -- other arithmetic or "
                    "a compiler, reported beside the float32 comparison, not instead of it")
    ap.add_argument("--profile", action="store_true", help="print torch.profiler's top ops of "
                    "posenc's step")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config field (dotted key, JSON value), repeatable")
    ap.add_argument("--paper-code", action="store_true", help="posenc's paper-code model beside "
                    "the baseline of the same model, parity checked on shared weights (--pe: "
                    f"{', '.join(PAPER_CODE_PE)})")
    args = ap.parse_args()
    also = [a for a in args.also.split(",") if a]
    if set(also) - {"compile", "bf16"}:
        ap.error(f"--also takes compile and/or bf16; got {args.also!r}")
    print(f"torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for threads in [int(t) for t in args.threads.split(",")]:
        for pe in args.pe.split(","):
            measure(args, pe, threads, also)


if __name__ == "__main__":
    main()
