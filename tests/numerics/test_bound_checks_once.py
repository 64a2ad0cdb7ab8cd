"""The sequence lengths of ``posenc bound`` are checked once per call path:
:func:`posenc.limits.check_lengths` does every check of the list at the edge and returns it typed
(:class:`~posenc.limits.Lengths`), which ``bound_table`` and the kernel of each length take
without checking again; ``bound_table`` and ``kernel`` check raw input themselves.  Every error
line stays as it was."""

from __future__ import annotations

import sys

import pytest

import posenc
from posenc import limits
from posenc.errors import PosencError
from posenc.numerics.bound_table import bound_table
from posenc.numerics.kernels import kernel

SMALL = {"head_dim": 4, "n_heads": 2}


def _patch_everywhere(monkeypatch, real, name, replacement) -> None:
    """Replace ``real`` by ``replacement`` in every loaded posenc module that holds it."""
    for mod_name, module in list(sys.modules.items()):
        if (mod_name == "posenc" or mod_name.startswith("posenc.")) and \
                getattr(module, name, None) is real:
            monkeypatch.setattr(module, name, replacement)


@pytest.fixture
def checks(monkeypatch) -> dict[str, list]:
    """``length``: every length checked against the numeric layer's limit (``check_int("sequence
    length n", ...)``); ``lengths``: every list of lengths checked (``check_lengths``)."""
    seen: dict[str, list] = {"length": [], "lengths": []}
    real_int = limits.check_int

    def counting_int(what, value, *args, **kwargs):
        if what == "sequence length n":
            seen["length"].append(value)
        return real_int(what, value, *args, **kwargs)

    _patch_everywhere(monkeypatch, real_int, "check_int", counting_int)
    real_lengths = getattr(limits, "check_lengths", None)
    if real_lengths is not None:
        def counting_lengths(n, *args, **kwargs):
            seen["lengths"].append(n)
            return real_lengths(n, *args, **kwargs)
        _patch_everywhere(monkeypatch, real_lengths, "check_lengths", counting_lengths)
    return seen


def test_posenc_bound_checks_its_lengths_once(checks):
    rep = posenc.bound("alibi", n=[8, 16, 8], **SMALL)       # with the reference kernel (rope)
    assert [g.n for g in rep.growth] == [8, 16]
    assert checks["length"] == [8, 16]
    assert checks["lengths"] == [[8, 16, 8]]


def test_bound_table_checks_raw_lengths_once(checks):
    rep = bound_table("rope", [8, 16], **SMALL)
    assert [g.n for g in rep.growth] == [8, 16]
    assert checks["length"] == [8, 16]
    assert checks["lengths"] == [[8, 16]]


def test_bound_table_takes_checked_lengths_without_checking_again(checks):
    from posenc.limits import Lengths, check_lengths

    ns = check_lengths([8, 16])
    assert isinstance(ns, Lengths) and ns == (8, 16)
    checks["length"].clear()
    checks["lengths"].clear()
    bound_table("alibi", ns, **SMALL)
    assert checks == {"length": [], "lengths": []}


def test_kernel_checks_a_raw_length_once(checks):
    assert kernel("rope", 8, **SMALL).n == 8
    assert checks["length"] == [8]


@pytest.mark.parametrize("kwargs,line", [
    ({"n": 0}, "n must be positive integers (n >= 1); got 0"),
    ({"n": [8, -1]}, "n must be positive integers (n >= 1); got -1"),
    ({"n": 8.0}, "n must be a positive integer or a list of them; got 8.0"),
    ({"n": "8"}, "n must be a positive integer or a list of them; got '8'"),
    ({"n": []}, "give at least one sequence length n"),
    ({"n": list(range(1, 100))}, "n holds 99 distinct lengths; the limit is 64 per call"),
    ({"n": [8, 10**8]}, "sequence length n=100000000 exceeds the limit 10000000 (the numeric "
                        "layer is O(n) in memory)"),
    ({"n": [8, 20000], "method": "dense"}, "n=20000 is too large for --method dense: an n x n "
                                           "float64 array needs 3 GiB (limit n <= 8192)"),
])
def test_the_lines_of_posenc_bound_are_unchanged(kwargs, line):
    with pytest.raises(PosencError) as err:
        posenc.bound("alibi", **kwargs)
    assert str(err.value).startswith(line)


@pytest.mark.parametrize("n,line", [
    (0, "sequence length n must be a positive integer; got 0"),
    (10**8, "sequence length n=100000000 exceeds the limit 10000000"),
])
def test_the_lines_of_kernel_are_unchanged(n, line):
    with pytest.raises(PosencError, match=line.replace("(", r"\(")):
        kernel("rope", n)
