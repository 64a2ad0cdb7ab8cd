"""``posenc.verify``: run the registry's claims and return typed results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence
from ..coerce import is_int
from ..errors import PosencError
from ..proofs.registry import all_claims, get
from ..proofs.runner import PROFILES, run_claim


@dataclass(frozen=True)
class ClaimResult:
    """What running one claim found (see :func:`posenc.proofs.runner.run_claim`)."""

    claim: str                      # the claim id
    title: str
    source: str                     # paper section, or "new"
    symbolic: str                   # proved | failed | not applicable | ...
    symbolic_detail: str
    examples: int                   # inputs checked on the claim's own strategy
    holds: bool                     # no counterexample on the claim's own inputs
    counterexample: Optional[str]   # the minimal one, if the claim failed
    variants: tuple[dict[str, Any], ...]  # assumption-dropping searches: expected vs found
    ok: bool                        # behaved as stated (holds, every expected counterexample found)
    error: Optional[str]
    seconds: float
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_dict(cls, r: dict[str, Any]) -> "ClaimResult":
        return cls(r["claim"], r["title"], r["source"], r["symbolic"]["status"],
                   r["symbolic"]["detail"], r["examples"], r["holds"], r["counterexample"],
                   tuple(r["variants"]), r["ok"], r["error"], r["seconds"], raw=r)

    def to_dict(self) -> dict[str, Any]:
        """The runner's JSON-serialisable result, as ``posenc verify --json`` prints it."""
        return self.raw


def verify(ids: Optional[Sequence[str] | str] = None, *, profile: str = "ci",
           examples: Optional[int] = None) -> list[ClaimResult]:
    """Run the claims ``ids`` (default: all): symbolic proof, numeric checks, counterexamples.

    ``profile``: "ci" (25 derandomised examples per search) or "thorough" (400 random ones);
    ``examples`` overrides the profile's count.  Unknown ids, profiles or counts raise
    PosencError before any claim runs.
    """
    return list(iter_verify(ids, profile=profile, examples=examples))


def iter_verify(ids: Optional[Sequence[str] | str] = None, *, profile: str = "ci",
                examples: Optional[int] = None) -> Iterator[ClaimResult]:
    """:func:`verify` one claim at a time (the CLI prints each row as it finishes)."""
    if profile not in PROFILES:
        raise PosencError(f"unknown profile {profile!r}; choose from {', '.join(PROFILES)}")
    if examples is not None and (not is_int(examples)
                                 or examples < 1):
        raise PosencError(f"--examples must be a positive integer; got {examples}")
    if isinstance(ids, str):
        ids = [ids]
    if ids is not None:
        if not isinstance(ids, (list, tuple)) or not all(isinstance(c, str) for c in ids):
            raise PosencError(f"ids must be a claim id, a list of them, or None for all; got {ids!r}")
        if not ids:
            raise PosencError("no claim ids given; pass None for all of them")
    claims = [get(c) for c in ids] if ids is not None else all_claims()
    return (ClaimResult.from_dict(run_claim(c, examples=examples, profile=profile))
            for c in claims)
