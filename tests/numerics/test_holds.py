"""The "holds" column of ``posenc bound`` checked against values the test computes itself.

For every row with an exact value and a bound, the test builds the matrix densely from the
catalogue's documented formulas (ALiBi B_ij = -slope |i - j|; RoPE K(k) = (2/d) sum_m
cos(theta_m k), theta_m = base^(-2m/d); content A = X X^T from the test's own generator),
takes its spectrum with numpy, decides "holds" by comparing that value with the row's bound,
and requires posenc's column to agree.  A second test drops Schur's assumption (K PSD with
unit diagonal) so that the bound must fail, and requires "holds" to say so.  In
``posenc/numerics/bound_table.py`` (``_row``), forcing ``holds = True`` fails the second test and
forcing ``holds = False`` the others.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from posenc.cli import main
from posenc.numerics.contraction import couple
from posenc.numerics.kernels import kernel
from posenc.numerics.bound_table import _coupled_rows, bound_report

H, HEAD_DIM, BASE = 8, 16, 10000.0
#: eigvalsh in float64 on n <= 160: errors ~ n eps ||M|| (< 1e-11 relative); 1e-8 is slack.
RTOL = 1e-8


def content(n_max: int, seed: int = 7) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n_max, 4)) / 2.0
    return x @ x.T


def alibi(n: int) -> np.ndarray:
    slope = 2.0 ** (-8.0 * 1 / H)                             # head 0 of H, press slopes
    k = np.arange(n)
    return -slope * np.abs(k[:, None] - k[None, :]).astype(float)


def rope(n: int) -> np.ndarray:
    theta = BASE ** (-2.0 * np.arange(HEAD_DIM // 2) / HEAD_DIM)
    k = np.arange(n)[:, None] - np.arange(n)[None, :]
    return (2.0 / HEAD_DIM) * np.cos(k[..., None] * theta).sum(axis=-1)


def exact_values(n: int, a: np.ndarray, own: str) -> dict[tuple[str, str], float]:
    """(matrix label, quantity) -> value, from dense eigvalsh in the test."""
    out: dict[tuple[str, str], float] = {}
    norm_a = np.max(np.abs(np.linalg.eigvalsh(a)))
    mats = {"alibi": ("B", alibi(n)), "rope": ("K", rope(n))}
    for label, (sym, m) in mats.items():
        if label == own:
            ev = np.linalg.eigvalsh(m)
            out[(label, f"lam_max({sym})")] = ev[-1]
            out[(label, f"lam_min({sym})")] = ev[0]
            out[(label, f"||{sym}||_2")] = np.max(np.abs(ev))
        coupled, op = (a + m, "A + B") if sym == "B" else (a * m, "A o K")
        name = label if label == own else f"{label} (reference)"
        ev = np.linalg.eigvalsh(coupled)
        out[(name, f"||{op}||_2 / ||A||_2")] = np.max(np.abs(ev)) / norm_a
        out[(name, f"lam_min({op})")] = ev[0]
        out[(name, f"lam_max({op})")] = ev[-1]
    return out


def decide(value: float, bound: float, lower: bool) -> bool:
    slack = RTOL * max(abs(value), abs(bound), 1.0)
    return bool(value >= bound - slack if lower else value <= bound + slack)


@pytest.mark.parametrize("spec", ["alibi", "rope"])
def test_holds_agrees_with_an_independent_dense_comparison(spec):
    ns = [24, 96, 160]
    a = content(max(ns))
    report = bound_report(spec, ns, n_heads=H, head_dim=HEAD_DIM, content=a, method="dense")
    checked = 0
    for n in ns:
        mine = exact_values(n, a[:n, :n], spec)
        for row in (r for r in report["rows"] if r["n"] == n):
            if row["exact"] is None or row["bound"] is None:
                continue
            value = mine[(row["matrix"], row["quantity"])]
            assert row["exact"] == pytest.approx(value, rel=1e-7, abs=1e-9), row
            lower = "(lower)" in row["bound_name"]
            holds = decide(value, row["bound"], lower)
            assert holds, f"theorem violated by the test's own value: {row}"
            assert row["holds"] is holds, row
            checked += 1
    assert checked >= 9 * len(ns)                      # matrix rows and coupled rows, every n


def test_holds_says_no_when_schurs_assumption_is_dropped():
    """ALiBi's B is not PSD and has a zero diagonal: the Schur bound max B_ii ||A|| = 0 and the
    interval [0, 0] are wrong for A o B, whose trace is 0 but which is not 0."""
    n = 48
    a = content(n, seed=3)
    c = couple(a, kernel("alibi", n, n_heads=H, head_dim=HEAD_DIM), "multiplicative", "dense")
    rows = [r.to_dict() for r in _coupled_rows(n, "alibi as a multiplicative kernel", c)]
    ev = np.linalg.eigvalsh(a * alibi(n))
    mine = {"||A o K||_2 / ||A||_2": np.max(np.abs(ev)) / np.max(np.abs(np.linalg.eigvalsh(a))),
            "lam_min(A o K)": ev[0], "lam_max(A o K)": ev[-1]}
    assert len(rows) == 3
    for row in rows:
        value = mine[row["quantity"]]
        holds = decide(value, row["bound"], "(lower)" in row["bound_name"])
        assert holds is False, (row, value)             # the dropped assumption matters here
        assert row["holds"] is False, row


def test_cli_json_holds_column_matches_the_test_s_own_values(capsys, tmp_path):
    a = content(64)
    np.save(tmp_path / "a.npy", a)
    code = main(["bound", "alibi", "--n", "32,64", "--json", "--head-dim", str(HEAD_DIM),
                 "--heads", str(H), "--content", str(tmp_path / "a.npy"), "--method", "dense"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    rows = [r for r in report["rows"] if r["exact"] is not None and r["bound"] is not None]
    for row in rows:
        value = exact_values(row["n"], a[:row["n"], :row["n"]], "alibi")[(row["matrix"],
                                                                          row["quantity"])]
        assert row["holds"] is decide(value, row["bound"], "(lower)" in row["bound_name"]), row
