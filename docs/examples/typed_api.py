"""posenc's front door as a type checker sees it: every name of ``posenc.__all__``, used with
annotations.  CI checks it with mypy (``.ci/run``; the settings are pyproject.toml's
[tool.mypy]): each ``assert_type`` fails if a name's type is lost -- a result is asserted to be its
class and one of its fields its concrete type (``str``, ``int``, ...), so the check fails even
when the class itself became ``Any`` -- and a misspelt ``posenc.NAME`` is an error, not ``Any``.

``python3 docs/examples/typed_api.py`` runs the theory half (a few seconds); the empirical
functions below train, ablate and reproduce, and are only type-checked here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator, assert_type

import posenc
from posenc import (AblationResult, BoundReport, BoundRow, ClaimResult, ConformanceReport,
                    GrowthRow, LogitForm, PESpec, PosencError, Run, ablate, all_entries, bound,
                    check, derive, import_checkpoint, load_run, parse_spec, reproduce,
                    spec_from_dict, spec_from_hf_config, train, verify)


def catalogue() -> list[str]:
    entries = all_entries()
    assert_type(entries, Iterator[tuple[str, PESpec]])
    names = [name for name, _ in entries]
    spec = spec_from_dict({"name": "alibi", "slopes": "exp"})
    assert_type(spec, PESpec)
    assert_type(spec.to_string(), str)
    return [*names, spec.to_string(), posenc.__version__]


def theory(text: str) -> tuple[LogitForm, BoundReport]:
    spec = parse_spec(text)
    assert_type(spec, PESpec)
    form = derive(spec, head_dim=4)
    assert_type(form, LogitForm)
    assert_type(form.head_dim, int)
    report = bound(spec, [64, 128], head_dim=16)
    assert_type(report, BoundReport)
    assert_type(report.spec, str)
    rows: tuple[BoundRow, ...] = report.rows
    growth: tuple[GrowthRow, ...] = report.growth
    assert_type(rows[0].n, int)
    assert_type(growth[0].n, int)
    print(f"{spec.to_string()}: {len(form.terms)} logit terms; {len(rows)} bound rows, "
          f"{len(growth)} growth rows, all hold: {all(r.holds is not False for r in rows)}")
    return form, report


def claims(ids: list[str]) -> bool:
    results = verify(ids)
    assert_type(results, list[ClaimResult])
    assert_type(results[0].ok, bool)
    return all(r.ok for r in results)


def conformance(impl: str) -> bool:
    report = check(impl, "rope", head_dim=16)
    assert_type(report, ConformanceReport)
    assert_type(report.ok, bool)
    return report.ok


def from_hf(config: Path) -> PESpec:
    text, info = spec_from_hf_config(config)
    assert_type(text, str)
    assert_type(info, dict[Any, Any])
    return parse_spec(text)


def experiments(folder: Path, paper_state_dict: Path) -> float:
    run = train("distance", "rope", preset="smoke", seed=0, out=folder / "rope",
                overrides={"model.n_layers": 2})
    assert_type(run, Run)
    assert_type(run.epoch, int)
    again = load_run(run.run_dir)
    assert_type(again, Run)
    table = ablate(again, "zero", examples=200)
    assert_type(table, AblationResult)
    assert_type(table.n_examples, int)
    imported = import_checkpoint(paper_state_dict, "rope", "distance", folder / "imported",
                                 trigger_ids=[1, 2])
    assert_type(imported, Run)
    report_md = reproduce("smoke", out=folder / "store", seeds=1, theory=False)
    assert_type(report_md, Path)
    return table.deposit().largest_drop


def main() -> int:
    try:
        parse_spec("rope:base=")
    except PosencError as exc:          # bad input: one line, a ValueError
        assert isinstance(exc, ValueError)
        print(f"refused: {exc}")
    print(f"{len(catalogue())} catalogue names")
    theory("rope:base=10000")
    root = Path(__file__).resolve().parent
    print("claim rope-relative-identity:", claims(["rope-relative-identity"]))
    print("rope_half.py conforms:", conformance(f"{root / 'rope_half.py'}:rope"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
