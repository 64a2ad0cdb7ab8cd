"""The results stores of a reproduction, checked before anything trains: one model-code mode
per store (paper-code and standard runs never share one: their reports would mix), and a
replication's store beside the first on a disjoint seed set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PosencError
from ..empirical.pipeline.store import RunStore


def replica_root(root: str | Path) -> Path:
    """The replication's store beside the first one: ``ROOT-replicate`` (of the absolute path:
    ``--out .`` puts it beside the current folder); a root without a name (``/``) is refused."""
    root = Path(root).resolve()
    if not root.name:
        raise PosencError(f"--replicate needs a store folder with a name beside which its "
                          f"replication can go; got {str(root)!r}")
    return root.with_name(root.name + "-replicate")


def stored_records(root: Path) -> list[Any]:
    """The runs of the store at ``root`` as it is, created by nothing (none when there is no
    store there yet)."""
    if root.exists() and not root.is_dir():
        raise PosencError(f"results store {root} is not a folder")
    if not (root / "posenc-store.json").exists():
        return []
    return list(RunStore(root, create=False).records())


def done_configs(records: list[Any]) -> list[dict[str, Any]]:
    return [rec.config for rec in records if rec.kind == "experiment" and rec.state == "done"]


def _seeds_in(records: list[Any]) -> set[int]:
    """The seeds of every experiment run of ``records`` (finished or not)."""
    return {int(rec.config["train"]["seed"]) for rec in records
            if rec.kind == "experiment" and "train" in rec.config}


def check_disjoint_stores(root: Path, plan: Any, stored: list[Any], replica_dir: Path,
                          replica_plan: Any, replica_stored: list[Any]) -> None:
    """Before anything trains: the replication's seeds (planned and already stored, ``*stored``:
    the stores' records) share none with the first store's (planned and already stored -- an
    earlier ``--until-decided`` or ``--seeds`` may have added seeds past the plan)."""
    def planned(p: Any) -> set[int]:
        return {e.train.seed for e in p.experiments()}
    first = planned(plan) | _seeds_in(stored)
    second = planned(replica_plan) | _seeds_in(replica_stored)
    shared = sorted(first & second)
    if shared:
        raise PosencError(f"the replication {replica_dir} would share seeds {shared[:10]}"
                          f"{' ...' if len(shared) > 10 else ''} with {root}: a replication "
                          "needs a disjoint seed set (--replicate-first-seed)")


def _run_mode(config: dict[str, Any]) -> str:
    train = config.get("train", config) if isinstance(config, dict) else {}
    model = train.get("model", {}) if isinstance(train, dict) else {}
    return "paper-code" if isinstance(model, dict) and model.get("code") == "paper" else "standard"


def check_store_mode(store: Any, mode: str) -> None:
    """Paper-code and standard runs never share a store (their reports would mix)."""
    check_mode(store.records(), store.root, mode)


def check_mode(records: Any, root: Path, mode: str) -> None:
    for rec in records:
        if rec.kind == "experiment" and _run_mode(rec.config) != mode:
            raise PosencError(f"the store {root} holds {_run_mode(rec.config)} runs; give "
                              f"another --out for a {mode} sweep")
