"""The :class:`Claim` type: one mathematical statement about positional encodings, checkable by machine.

A claim of Gu et al. (arXiv 2505.13027) -- or a precise version of it that posenc states -- carries

* its statement (plain text and LaTeX), its source (the paper's section / proposition, or
  ``"new"``) and its assumptions, each in words;
* ``symbolic``: a proof when one exists (usually calling :mod:`posenc.theory`), a callable
  returning a :class:`SymbolicResult` (proved / not applicable / failed, with a detail line);
* ``strategy`` + ``check``: a Hypothesis strategy drawing inputs that meet *all* assumptions, and
  a numeric check of the conclusion on one drawn input (usually calling :mod:`posenc.numerics`)
  that raises :class:`Violation` (an ``AssertionError``) when the conclusion fails;
* ``variants``: strategies that drop one assumption (or strengthen the conclusion to a false
  one).  Each says whether a counterexample is *expected* there; the runner searches for it with
  Hypothesis, which shrinks it to a minimal one;
* ``reports``: optional measurements shown beside the verdict (e.g. float32 drift of RoPE tables);
* ``empirical``: reserved for claims about trained models -- a callable ``evaluate(store)`` that
  returns a verdict from stored runs.  No registered claim sets it and the runner does not call
  it yet (the paper's empirical claims are judged on stored runs by :mod:`posenc.verdicts`).

Claims are plain data; :mod:`posenc.proofs.runner` runs them and :mod:`posenc.proofs.registry`
lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

#: Symbolic statuses.
PROVED, NOT_APPLICABLE, FAILED = "proved", "not applicable", "failed"


class Violation(AssertionError):
    """Raised by a claim's check when the conclusion fails on one input."""


class LayerMismatch(Exception):
    """Raised when two layers (theory, numerics, empirical) disagree on the same quantity.

    Not an ``AssertionError``: on a variant's strategy a disagreement must not pass for the
    counterexample the variant expects.  On the claim's own strategy the runner treats it as a
    failure (and Hypothesis shrinks it) like a :class:`Violation`."""


def agree(ok: bool, message: "str | Callable[[], str]") -> None:
    """Raise :class:`LayerMismatch` unless ``ok``."""
    if not ok:
        raise LayerMismatch(message() if callable(message) else message)


def require(ok: bool, message: "str | Callable[[], str]") -> None:
    """Raise :class:`Violation` with ``message`` unless ``ok`` (the checks' one assertion form).

    ``message`` may be a callable, evaluated only on failure (when formatting it needs values
    that exist only then)."""
    if not ok:
        raise Violation(message() if callable(message) else message)


@dataclass(frozen=True)
class SymbolicResult:
    status: str            # PROVED | NOT_APPLICABLE | FAILED
    detail: str = ""

    def __post_init__(self) -> None:
        if self.status not in (PROVED, NOT_APPLICABLE, FAILED):
            raise ValueError(f"unknown symbolic status {self.status!r}")


@dataclass(frozen=True)
class Variant:
    """A change to the claim under which posenc looks for a counterexample.

    ``drops`` names the assumption dropped (or, with ``kind="stronger conclusion"``, the false
    conclusion put in place of the true one).  ``expect_counterexample=False`` marks an
    assumption that turns out not to be needed: the runner then checks that the conclusion
    still holds on the wider strategy (and the claim's documentation says so).
    """

    drops: str
    strategy: Callable[[], Any]                       # () -> SearchStrategy
    check: Optional[Callable[[Any], None]] = None     # None: the claim's own check
    kind: str = "drops assumption"                    # or "stronger conclusion"
    expect_counterexample: bool = True
    note: str = ""


@dataclass(frozen=True)
class Claim:
    id: str
    title: str
    statement: str
    latex: str
    source: str
    assumptions: tuple[str, ...]
    strategy: Callable[[], Any]                       # () -> SearchStrategy of inputs
    check: Callable[[Any], None]                      # raises Violation if the conclusion fails
    symbolic: Optional[Callable[[], SymbolicResult]] = None
    variants: tuple[Variant, ...] = ()
    describe: Callable[[Any], str] = repr             # one input -> readable text (counterexamples)
    reports: Optional[Callable[[], dict]] = None      # extra measurements, JSON-serialisable
    empirical: Optional[Callable[[Any], dict]] = None  # evaluate(store) -> verdict (future)
    layers: tuple[str, ...] = field(default=("numerics",))  # layers the claim exercises

    def __post_init__(self) -> None:
        if not self.id or any(c.isspace() for c in self.id):
            raise ValueError(f"claim id must be a non-empty word; got {self.id!r}")
