"""The registry of claims: every :class:`~posenc.proofs.claim.Claim` posenc can check, by id.

Claims live in the modules named in :data:`CLAIM_MODULES` (each exports ``CLAIMS``); adding a claim is
adding it to one of them, or a module here.  Claims defined elsewhere (e.g. empirical claims that
evaluate stored runs) are added with :func:`register`.  Tests and ``posenc verify`` iterate
:func:`all_claims`, so a new claim is checked automatically.
"""

from __future__ import annotations

import difflib
import importlib

from ..errors import PosencError
from .claim import Claim

#: Modules under ``posenc.proofs.claims``, in the order ``posenc verify`` lists them.
CLAIM_MODULES = (
    "rope_identity",      # 1, 2
    "toeplitz",           # 3
    "schur",              # 4
    "additive",           # 5
    "rope_norm",          # 6
    "mla",                # 7
    "families",           # 8
    "precision",          # RoPE tables at large positions (mpmath oracle)
    "dynamics_seed",      # 15: gradient seed (Prop. 6.1 / 6.2)
    "dynamics_margin",    # 15: layer-wise amplification (Thm. 6.1)
    "xpos_kerple",         # xPos (Schur does not apply; factor bound) and KERPLE-log (CPD)
)

_EXTRA: dict[str, Claim] = {}


def register(claim: Claim) -> Claim:
    """Add a claim defined outside :data:`CLAIM_MODULES` (ids must be unique)."""
    if claim.id in _ids_of_modules() or claim.id in _EXTRA:
        raise ValueError(f"duplicate claim id {claim.id!r}")
    _EXTRA[claim.id] = claim
    return claim


def _module_claims() -> list[Claim]:
    out: list[Claim] = []
    for name in CLAIM_MODULES:
        out.extend(importlib.import_module(f"{__package__}.claims.{name}").CLAIMS)
    return out


def _ids_of_modules() -> set[str]:
    return {c.id for c in _module_claims()}


def all_claims() -> list[Claim]:
    claims = _module_claims() + list(_EXTRA.values())
    ids = [c.id for c in claims]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise ValueError(f"duplicate claim ids: {sorted(dup)}")
    return claims


def get(claim_id: str) -> Claim:
    """The claim with this id; an unknown id is a :class:`PosencError` naming the close ones."""
    claims = {c.id: c for c in all_claims()}
    if claim_id in claims:
        return claims[claim_id]
    close = difflib.get_close_matches(claim_id, list(claims), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise PosencError(f"unknown claim {claim_id!r}{hint}; `posenc verify --list` shows them all")
