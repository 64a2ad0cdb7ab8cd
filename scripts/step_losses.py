"""Per-step training losses (float.hex) of one-epoch smoke runs on the default (fast) step, for
cases covering every branch of the fast path: the block stack, the attention alone
(PackedAttention), and the rows kernel behind the modules' own projections (xPos, half pairing,
MLA, paper-code MLA, dropout), causal, unmasked padding, head dim 32 (SDPA), paper-code mode.

Run it at two commits and compare the files: equal files mean the training numerics did not
change, bit for bit (e.g. 264d8f4 against the reference-model change of 2026-12-04).
Usage: python scripts/step_losses.py OUT.json  (about a minute on one core)
"""
import json
import sys
import tempfile

import torch
from posenc.empirical.config import apply_overrides, preset
from posenc.empirical.paper_specs import paper_code_fields
from posenc.empirical.training.train import train

CASES = [
    ("rope", {}), ("alibi", {}), ("relative_bias", {}), ("sinusoidal", {}), ("xpos", {}),
    ("rope:pairing=half", {}), ("mla", {}), ("kerple_log", {}), ("nope", {}),
    ("xpos", {"model.d_model": 128}), ("mla", {"model.d_model": 128}), ("rope", {"model.d_model": 128}),
    ("alibi", {"model.mask_padding": False}),
    ("rope", {"model.dropout": 0.1}), ("alibi", {"model.causal": True}),
    ("rope", {"model.kv_source": "input"}),
    ("paper-rope", "paper"), ("paper-alibi", "paper"), ("paper-mla", "paper"), ("paper-relative", "paper"),
]
out = {}
for pe, over in CASES:
    cfg = preset("smoke", "distance", pe, epochs=1)
    if over == "paper":
        cfg = apply_overrides(cfg, paper_code_fields(cfg.model.spec))
    else:
        cfg = apply_overrides(cfg, over)
    losses = []
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as d:
        train(cfg, d, progress=False, resume=False, on_step=lambda s, l: losses.append(float(l).hex()))
    key = f"{pe} {over}"
    out[key] = losses
    print(key, len(losses), losses[-1], flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=0)
