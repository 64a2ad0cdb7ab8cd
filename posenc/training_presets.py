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
                   "1000+, docs/reproduction.md)",
}
PRESET_NAMES = tuple(TRAINING_PRESETS)
#: presets whose sweep runs the paper code's models unless told otherwise (``--standard``)
PAPER_CODE_PRESETS = ("paper", "paper-small")


def preset_help(default: str = "quick") -> str:
    """The ``--preset`` help of a command: every name, the default marked."""
    names = " | ".join(f"{n} (default)" if n == default else n for n in PRESET_NAMES)
    return f"{names}; `posenc encodings` says what each is"
