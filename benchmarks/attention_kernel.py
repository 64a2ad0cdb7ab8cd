"""Side by side: the explicit attention kernel vs torch's scaled_dot_product_attention, forward +
backward of one layer, by head dim -- the measurement behind posenc.empirical.model.attention.kernel_for
(each kernel as :meth:`AttentionBase.attend` runs it).

Batch 64 x 52 tokens (the quick preset), 8 heads, a padding mask on a third of the examples.
The two kernels alternate single calls (background load hits both alike); best of --reps, by
wall clock and by this process's CPU time (``time.process_time``: on a loaded machine the
scheduler's gaps do not count; at 1 thread it is the cost of the call itself).
Run:  python benchmarks/attention_kernel.py [--threads 1,2] [--dims 8,16,32,64,128]
[--device cpu|cuda] [--reps 20]
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from posenc.empirical.model.attention import Attention, attention_mask, kernel_for


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dims", default="8,16,32,64,128")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=52)
    ap.add_argument("--heads", type=int, default=8)
    args = ap.parse_args()
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    B, T, H = args.batch, args.seq, args.heads
    keep = torch.ones(B, T, dtype=torch.bool, device=dev)
    keep[::3, 2 * T // 3:] = False
    print(f"torch {torch.__version__}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{args.device}; batch {B} x seq {T}, {H} heads, padding mask; fwd + bwd, "
          f"best of {args.reps}; load average {os.getloadavg()[0]:.1f}")
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        print(f"\n{threads} thread(s)   head dim   explicit ms    SDPA ms   SDPA/explicit   "
              f"(CPU time:) expl. ms   SDPA ms   SDPA/explicit   chosen")
        for d in [int(x) for x in args.dims.split(",")]:
            g = torch.Generator(device=dev).manual_seed(d)
            q, k, v = (torch.randn(B, H, T, d, device=dev, generator=g, requires_grad=True)
                       for _ in range(3))
            grad = torch.randn(B, H, T, d, device=dev, generator=g)

            explicit_attn, sdpa_attn = Attention(H * d, H).to(dev), Attention(H * d, H).to(dev)
            explicit_attn.kernel, sdpa_attn.kernel = "explicit", "sdpa"

            def explicit() -> torch.Tensor:
                mask = attention_mask(keep, False, T, q.dtype, dev)  # built per forward, as the model
                return explicit_attn.attend(q, k, v, mask, None)

            def sdpa() -> torch.Tensor:
                mask = attention_mask(keep, False, T, q.dtype, dev)
                return sdpa_attn.attend(q, k, v, mask, None)

            with torch.no_grad():
                err = (explicit() - sdpa()).abs().max().item()
            assert err < 1e-4, f"kernels disagree by {err}"
            wall: dict[str, list[float]] = {"explicit": [], "sdpa": []}
            cpu: dict[str, list[float]] = {"explicit": [], "sdpa": []}
            for i in range(args.reps + 3):
                for name, fn in (("explicit", explicit), ("sdpa", sdpa)):
                    sync()
                    t0, c0 = time.perf_counter(), time.process_time()
                    fn().backward(grad)
                    sync()
                    if i >= 3:
                        wall[name].append(time.perf_counter() - t0)
                        cpu[name].append(time.process_time() - c0)
                    q.grad = k.grad = v.grad = None
            e, s = 1000 * min(wall["explicit"]), 1000 * min(wall["sdpa"])
            ec, sc = 1000 * min(cpu["explicit"]), 1000 * min(cpu["sdpa"])
            chosen = "SDPA" if kernel_for(d) == "sdpa" else "explicit"
            print(f"{'':14}{d:8d}   {e:11.2f}  {s:9.2f}   {s / e:13.2f}   {ec:10.2f}  {sc:9.2f}"
                  f"   {sc / ec:13.2f}   {chosen}")


if __name__ == "__main__":
    main()
