"""The typed rows of ``posenc bound``: their JSON is the dict rows printed before they were typed,
each row's ``measure`` is what its number is, and the plot picks exactly the norm rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from posenc.commands.bound import gershgorin_norm_bounds
from posenc.encodings import parse_spec
from posenc.errors import PosencError
from posenc.numerics.bound_rows import MEASURES, BoundRow
from posenc.numerics.kernels import kernel
from posenc.numerics.bound_table import bound_table

#: ``posenc bound ... --json`` (method dense, ``seconds`` removed) as printed by the code before
#: the rows were typed (commit b053e5c), for four specs: additive, rotary, hybrid, a custom kernel
#: with a negative diagonal (where the norm and lam_max Gershgorin bounds differ).
GOLDEN = Path(__file__).parent / "data" / "bound_rows_before_typing.json"


#: Keys added since (the content's scale, the additive ratio at other scales, RoPE's
#: per-plane logit); the old keys keep their names, values and order.
ADDED = {"content_scales", "per_plane_content", "content_norm", "ratio_additive_scaled",
         "balance_scale", "ratio_additive_balanced", "ratio_per_plane"}


def _same(a, b, path="") -> None:
    """Equal structure and key order, up to the keys in ADDED; floats equal to 1e-9 relative
    (LAPACK builds differ in the last bits)."""
    assert type(a) is type(b) or {type(a), type(b)} <= {int, float}, (path, a, b)
    if isinstance(a, dict):
        assert [k for k in a if k not in ADDED] == list(b), path
        for k in b:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), (path, a, b)
    else:
        assert a == b, (path, a, b)


@pytest.mark.parametrize("case", json.loads(GOLDEN.read_text()), ids=lambda c: c["spec"])
def test_json_of_the_typed_rows_is_the_old_output(case):
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in case["kwargs"].items()}
    got = json.loads(bound_table(case["spec"], case["n"], method="dense", **kw).to_json())
    for row, old in zip(got["rows"], case["report"]["rows"]):
        del row["seconds"]
        if str(old.get("quantity", "")).startswith("cond(") and isinstance(old["exact"], float):
            # a condition number kappa is computed with relative error ~ kappa * eps (eigvalsh's
            # smallest eigenvalue is known to eps * ||G|| only): the hybrid's Gram has kappa
            # ~1.5e14 (bound 3%), whose value moved by 0.2% between LAPACK builds (OpenBLAS
            # 0.3.31 here); twice the bound
            assert row["exact"] == pytest.approx(old["exact"],
                                                 rel=max(1e-9, 2 * old["exact"] * 2.2e-16))
            row["exact"] = old["exact"]
    _same(got, case["report"])
    assert all("measure" not in r for r in got["rows"])


def _dense(spec: str, n: int) -> np.ndarray:
    return np.asarray(kernel(parse_spec(spec), n).dense())


@pytest.mark.parametrize("spec", ["alibi", "rope", "sinusoidal", "custom:kernel=-1-0.1*abs(k)"])
def test_each_measure_is_the_value_it_names(spec):
    n = 24
    p = _dense(spec, n)
    ev = np.linalg.eigvalsh((p + p.T) / 2)
    sv = np.linalg.svd(p, compute_uv=False)
    rep = bound_table(spec, [n], method="dense", reference=None)
    own = [r for r in rep.rows if "A" not in r.quantity]        # the positional matrix's rows
    assert {r.measure for r in own} >= {"lam_max", "lam_min", "norm", "cond"}
    singular = sv[-1] <= n * np.finfo(float).eps * sv[0]       # rope's K has rank < n
    expect = {"lam_max": ev[-1], "lam_min": ev[0], "norm": sv[0],
              "cond": np.inf if singular else sv[0] / sv[-1]}
    for r in own:
        if r.measure == "rank":
            assert r.exact is None
        else:
            assert r.exact == pytest.approx(expect[r.measure], rel=1e-7), r


def test_a_row_refuses_an_unknown_measure():
    with pytest.raises(PosencError, match="measure"):
        BoundRow(1, "x", "q", 1.0, 2.0, "upper", "b", True, "dense", 0.0, "norms")
    assert len(MEASURES) == len(set(MEASURES))


@pytest.mark.parametrize("spec", ["alibi", "rope", "custom:kernel=-1-0.1*abs(k)"])
def test_the_plot_picks_exactly_the_gershgorin_norm_rows(spec):
    ns = [10, 30]
    rep = bound_table(spec, ns, method="dense")
    picked = gershgorin_norm_bounds(rep)
    # the rule the plot used before the rows were typed, on the printed rows
    old = {r["n"]: r["bound"] for r in rep.to_dict()["rows"]
           if r["quantity"].startswith("||") and r["bound_name"] == "Gershgorin"}
    assert picked == old
    for n in ns:                            # the Gershgorin norm bound: max_i sum_j |P_ij|
        assert picked[n] == pytest.approx(np.abs(_dense(spec, n)).sum(axis=1).max(), rel=1e-12)
