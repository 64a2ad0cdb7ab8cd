"""The training presets by name, with one line each on what it is: pure data (importing it
loads nothing), so the CLI's help and ``posenc encodings`` list them without loading torch.

:func:`posenc.empirical.config.preset` builds each; ``posenc reproduce`` runs the paper's
models (paper-code mode) by default at the presets in :data:`PAPER_CODE_PRESETS`.
"""

from __future__ import annotations

#: name -> what the preset is (one line)
TRAINING_PRESETS = {
    "smoke": "seconds on a CPU, for tests and CI (tiny model and task)",
    "quick": "the default: posenc's standard model on an easier distance task (40 gaps, "
             "vocabulary 32, clean sampler) and count task; about an hour on two CPU cores",
    "paper": "the sizes and optimiser of the paper's code (d_model 256, 6 layers, 100 epochs of "
             "70,000 examples at batch 512): GPU-sized; paper-code mode by default",
    "paper-small": "the paper code's own distance task (sampler and vocabulary 574, gaps 1..70, "
                   "padded to 128) and models (paper-code mode), scaled down to two CPU cores: "
                   "quick's width and depth, fewer examples and epochs (calibrated on seeds "
                   "1000+, docs/methods.md)",
}
PRESET_NAMES = tuple(TRAINING_PRESETS)

#: where a preset follows the paper's code and where it differs from it
PRESET_NOTES = {
    "paper-small": "the paper code's distance task and models (paper-code mode), scaled down; "
                   "against dis_gen/trans.py and mla.py it differs in: width 64, 8 heads of dim 8, "
                   "4 layers, d_ff 128 (the code: 256, 16 of dim 16, 6, 512); dropout 0 (0.1); "
                   "20,000 examples split 12,600 train / 1,400 validation / 6,000 test (100,000 "
                   "split 70,000 / 30,000, no validation split); 15 epochs of batch 16 (100 of "
                   "512), MLA 23 of batch 32 (150 of 1,024: the code's ratios, 1.5x the epochs "
                   "at twice the batch); AdamW peak rate 3e-3, betas (0.9, 0.98) (1e-4, "
                   "(0.98, 0.9)), weight decay 1e-5 and 6% warm-up then cosine as the code; "
                   "gradient clipping 1.0 (the code clips nothing); the best validation epoch's "
                   "weights (the code reports its last epoch); heads ablated on 500 test "
                   "examples (the code's *vis.py: the whole data set); one sampler seed per run "
                   "(the code: seed 42); every example padded to 128 tokens and pooled unmasked, "
                   "as the code, but none truncated (the code cuts at 120; the longest is 122).",
    "paper": "from the paper's code: distance vocab_size 574, count 50,000 examples, MLA "
             "150 epochs at batch 1024 (mla.py; the other roles 100 at 512); in paper-code mode "
             "(the default here) each model's own activation, as the code has it: ReLU "
             "(trans.py, partialrope.py) and GELU (mla.py); the count vocabulary: the code's "
             "comes from a tokenizer it trains (up to 5,000 tokens), ours is 128 tokens (it must "
             "hold the 101 classes, which the code's classifier over the vocabulary needs); our "
             "choices (not the code's): gradient clipping 1.0, and GELU in posenc's standard "
             "model (--standard); the distance task's longest example is L+G+R+2 = 122 tokens "
             "(the code truncates at 120 and pads to 128; paper-code mode pads to 128).",
}
#: presets whose sweep runs the paper code's models unless told otherwise (``--standard``)
PAPER_CODE_PRESETS = ("paper", "paper-small")


def preset_help(default: str = "quick") -> str:
    """The ``--preset`` help of a command: every name, the default marked."""
    names = " | ".join(f"{n} (default)" if n == default else n for n in PRESET_NAMES)
    return f"{names}; `posenc encodings` says what each is"
