"""posenc: the mathematics of positional encodings in Transformers.

Built around Gu et al., "Deconstructing Positional Information: From Attention Logits to
Training Biases" (arXiv 2505.13027, ICLR 2026).  Layers: ``theory`` (sympy), ``numerics``
(numpy/scipy), ``empirical`` (torch) and ``proofs``, which holds them against each other;
``encodings`` is the shared catalogue.

The library's front door (each name is imported on first use, so ``import posenc`` and
``posenc --help`` stay fast)::

    posenc.derive(spec) -> LogitForm                        symbolic attention logit (sympy)
    posenc.bound(spec, n=[...]) -> BoundReport              spectra beside their bounds
    posenc.verify(ids=None, profile="ci") -> [ClaimResult]  the theorems, checked
    posenc.check(fn, kind=None, expect=None) -> ConformanceReport  your RoPE / bias code
    posenc.train(task=, pe=, preset=, seed=, out=) -> Run   a small Transformer, trained
    posenc.load_run(path) -> Run                            a run folder, loaded
    posenc.import_checkpoint(file, pe=, task=, out=) -> Run  the paper code's state_dict, as a run
    posenc.ablate(run, mode="zero") -> AblationResult       single-head ablations
    posenc.reproduce(preset="quick", out=None) -> Path      the paper's experiments + report
    posenc.spec_from_hf_config(path) -> (spec, info)        a local HF config.json as a spec

Bad input raises :class:`PosencError` (a :class:`ValueError`) with one line of text.  See
``docs/api.md``.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from .public_call import public
from .encodings import PESpec, all_entries, parse_spec, spec_from_dict
from .errors import PosencError  # noqa: F401

# Every public function refuses a call its signature does not take in one line (see public).
all_entries, parse_spec, spec_from_dict = map(public, (all_entries, parse_spec, spec_from_dict))

__version__ = "0.1.0"

#: Public name -> (module, attribute), imported on first access (PEP 562).
_LAZY: dict[str, tuple[str, str]] = {
    "derive": ("posenc.theory.derive", "derive"),
    "LogitForm": ("posenc.theory.form", "LogitForm"),
    "bound": ("posenc.api.bound", "bound"),
    "BoundReport": ("posenc.api.bound", "BoundReport"),
    "BoundRow": ("posenc.api.bound", "BoundRow"),
    "GrowthRow": ("posenc.api.bound", "GrowthRow"),
    "verify": ("posenc.api.claims", "verify"),
    "ClaimResult": ("posenc.api.claims", "ClaimResult"),
    "check": ("posenc.api.conformance", "check"),
    "ConformanceReport": ("posenc.api.conformance", "ConformanceReport"),
    "train": ("posenc.api.experiments", "train"),
    "load_run": ("posenc.api.experiments", "load_run"),
    "spec_from_hf_config": ("posenc.encodings.hf_config", "spec_from_hf_config"),
    "import_checkpoint": ("posenc.api.experiments", "import_checkpoint"),
    "ablate": ("posenc.api.experiments", "ablate"),
    "reproduce": ("posenc.api.experiments", "reproduce"),
    "Run": ("posenc.empirical.training.runs", "Run"),
    "AblationResult": ("posenc.empirical.analysis.ablation", "AblationTable"),
}

__all__ = ["PESpec", "PosencError", "all_entries", "parse_spec", "spec_from_dict",
           "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'posenc' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    if inspect.isfunction(value):   # a public function: a call it does not take is one line
        value = public(value)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
