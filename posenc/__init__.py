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
from typing import TYPE_CHECKING, Any

from .public_call import public
from .encodings import PESpec, all_entries, parse_spec, spec_from_dict
from .errors import MissingExtraError, PosencError  # noqa: F401

# Every public function refuses a call its signature does not take in one line (see public).
all_entries, parse_spec, spec_from_dict = public(all_entries), public(parse_spec), public(spec_from_dict)

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

if TYPE_CHECKING:  # the lazy names, as type checkers see them (a test holds this list to _LAZY)
    from .api.bound import BoundReport, BoundRow, GrowthRow, bound
    from .api.claims import ClaimResult, verify
    from .api.conformance import ConformanceReport, check
    from .api.experiments import ablate, import_checkpoint, load_run, reproduce, train
    from .empirical.analysis.ablation import AblationTable as AblationResult
    from .empirical.training.runs import Run
    from .encodings.hf_config import spec_from_hf_config
    from .theory.derive import derive
    from .theory.form import LogitForm

# Written out (not built from _LAZY): type checkers read __all__ as a literal list to know what
# posenc re-exports (mypy --strict and pyright refuse a name that a py.typed package only imports).
# tests/test_typed_api.py holds it, and the block above, to _LAZY.
__all__ = ["PESpec", "PosencError", "all_entries", "parse_spec", "spec_from_dict", "__version__",
           "derive", "LogitForm", "bound", "BoundReport", "BoundRow", "GrowthRow", "verify",
           "ClaimResult", "check", "ConformanceReport", "train", "load_run", "spec_from_hf_config",
           "import_checkpoint", "ablate", "reproduce", "Run", "AblationResult"]


if not TYPE_CHECKING:  # hidden from type checkers: a misspelt posenc.NAME is an error, not Any
    def __getattr__(name: str) -> Any:
        try:
            module, attr = _LAZY[name]
        except KeyError:
            raise AttributeError(f"module 'posenc' has no attribute {name!r}") from None
        try:
            value = getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:  # a name of the train extra, on the light install
            missing = MissingExtraError.of(exc, f"posenc.{name}")
            if missing is None:
                raise
            raise missing from None
        if inspect.isfunction(value):   # a public function: a call it does not take is one line
            value = public(value)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
