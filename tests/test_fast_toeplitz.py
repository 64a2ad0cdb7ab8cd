"""The fast path merges the rows of short examples (posenc.empirical.fast.merges_rows) only for
PEs whose attention sees positions through i - j.  That requirement is checked here from the
NUMERIC layer's kernel (posenc.numerics.kernels), independently of the declaration
(posenc.encodings.parts.NOT_TOEPLITZ) the fast path reads: for every catalogue entry the fast path would
merge, every part that acts inside the attention (bias, rotary, MLA) has a positional matrix that
is constant along its diagonals, for every head.  Absolute parts are added to the input before
packing, by each token's own column, so they never constrain a merge.  The mutation tests show
the check fails for a non-Toeplitz part declared Toeplitz.  (The empirical layer may not import
numerics; the check lives in the tests.)"""

from __future__ import annotations

import types

import numpy as np
import pytest

from posenc.encodings import parts
from posenc.empirical import fast
from posenc.encodings import all_entries, parse_spec
from posenc.numerics import kernels
from posenc.encodings.parts import structure

ENTRIES = list(all_entries())
N, HEADS, HEAD_DIM = 9, 4, 8


def is_toeplitz(K: np.ndarray) -> bool:
    """K (n, n) constant along every diagonal (relative to the diagonal's size)."""
    n = K.shape[0]
    for k in range(-n + 1, n):
        d = np.diagonal(K, k)
        if not np.allclose(d, d[0], rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(d).max()))):
            return False
    return True


def toeplitz_violations(spec) -> list[str]:
    """The attention parts of ``spec`` whose numeric kernel is not Toeplitz (or that the numeric
    layer refuses as such), when the fast path would merge rows for ``spec``; [] otherwise."""
    if not fast.merges_rows(spec):
        return []
    bad = []
    for part in structure(spec).parts:
        if part.role == "absolute":
            continue
        for head in range(HEADS):
            ctx = kernels.part_context(head, HEADS, HEAD_DIM, None, None, 0)
            try:
                K = np.asarray(kernels.part_kernel(part, spec, N, ctx).dense())
            except Exception as exc:  # the numeric layer has no Toeplitz form for it
                bad.append(f"{part.kind}: {exc}")
                break
            if not is_toeplitz(K):
                bad.append(f"{part.kind}: head {head}'s kernel is not constant along diagonals")
                break
    return bad


@pytest.mark.parametrize("name,spec", ENTRIES, ids=[n for n, _ in ENTRIES])
def test_rows_are_merged_only_for_a_numerically_toeplitz_attention(name, spec):
    assert toeplitz_violations(spec) == []


def test_the_check_is_not_vacuous():
    """Most entries merge, and the one declared not Toeplitz does not."""
    merged = [n for n, s in ENTRIES if fast.merges_rows(s)]
    assert len(merged) >= len(ENTRIES) - 2
    assert not fast.merges_rows(parse_spec("mla:rope=paper_code"))


def test_a_non_toeplitz_part_missing_from_the_declaration_fails(monkeypatch):
    """Drop mla_paper_code from NOT_TOEPLITZ: the fast path would merge it, and the numeric
    layer's kernel (no Toeplitz form) makes the check fail."""
    spec = parse_spec("mla:rope=paper_code")
    monkeypatch.delitem(parts.NOT_TOEPLITZ, "mla_paper_code")
    assert fast.merges_rows(spec)
    assert toeplitz_violations(spec)


def test_a_non_toeplitz_bias_declared_toeplitz_fails(monkeypatch):
    """A bias whose matrix depends on i, not only i - j (ALiBi plus a position-dependent
    diagonal), with nothing in NOT_TOEPLITZ: the check fails."""
    real = kernels.PART_FORMULAS["alibi"]

    def absolute_alibi(spec, n, ctx):
        K = np.asarray(real(spec, n, ctx).dense()) + np.diag(np.arange(n, dtype=float))
        return types.SimpleNamespace(dense=lambda: K)

    spec = parse_spec("alibi")
    assert toeplitz_violations(spec) == []
    monkeypatch.setitem(kernels.PART_FORMULAS, "alibi", absolute_alibi)
    assert fast.merges_rows(spec)
    assert toeplitz_violations(spec)
