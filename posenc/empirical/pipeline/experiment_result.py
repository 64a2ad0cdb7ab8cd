"""A stored experiment result, typed: what the report and the verdicts read of a finished run.

:func:`~posenc.empirical.pipeline.experiment.experiment_worker` (and the dynamics worker) return a JSON
result; a results store keeps it as the run's ``result.json`` (:mod:`.store`).  Its readers
(:mod:`posenc.report`, :mod:`posenc.verdicts`) see it as one :class:`ExperimentResult`,
built and checked once by :meth:`ExperimentResult.from_stored`: a record without a task, role
or seed, with a field of the wrong type, or (given the run's config) of another task, seed or
role than its config is a :class:`~posenc.errors.PosencError` naming the run, not a ``KeyError``
somewhere in a report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from ...coerce import is_int
from ...errors import PosencError
from ..config import config_from_dict
from ..bayes_ceiling import length_only_rate, recorded_ceiling
from ..training.schedule import OptimizerSchedule


#: the measurements of a result beside its summary, and their JSON types
_MEASUREMENTS = {"ablation": dict, "probe": dict, "trace": dict, "dynamics": dict, "metrics": list,
                 "table_mean": dict}
_KIND_NAMES = {dict: "object", list: "array"}


def _train_config(config: dict[str, Any], where: str) -> Any:
    try:
        return config_from_dict(config.get("train", config))
    except PosencError as e:
        raise PosencError(f"{where}: its config is not a training config ({e})") from None


def _of_task(config: dict[str, Any], where: str) -> dict[str, float]:
    """What a run's summary records of its task configuration alone -- ``length_rate``
    (:func:`~posenc.empirical.bayes_ceiling.length_only_rate`, exact) and ``bayes_ceiling``
    (:func:`~posenc.empirical.bayes_ceiling.recorded_ceiling`, cached per configuration) -- for
    results stored before runs recorded them."""
    task = _train_config(config, where).task
    return {"length_rate": length_only_rate(task), "bayes_ceiling": recorded_ceiling(task)}


def _schedule(config: dict[str, Any], metrics: Any, where: str) -> Optional[dict[str, Any]]:
    """The run's optimiser schedule (:class:`~posenc.empirical.training.schedule.OptimizerSchedule`)
    from its config and metrics, for results stored before runs recorded it; None without
    metrics."""
    if not metrics:
        return None
    got = OptimizerSchedule.of_run(_train_config(config, where), metrics)
    return None if got is None else got.to_dict()


@dataclass(frozen=True)
class ExperimentResult:
    """One finished run: its (task, role, seed), the worker's ``summary`` (test_acc, pe,
    n_layers, ...) and the measurements (``ablation`` per mode, ``probe``, ``trace`` and
    ``dynamics`` summaries, per-epoch ``metrics``, ``table_mean`` -- the test accuracy with
    each learned relative table replaced by its mean, :mod:`~posenc.empirical.analysis.table_mean`:
    None when not recorded); ``id`` and ``run_dir`` when read from a store."""

    task: str
    role: str
    seed: int
    summary: dict[str, Any]
    ablation: dict[str, Any]
    probe: Optional[dict[str, Any]] = None
    trace: Optional[dict[str, Any]] = None
    dynamics: Optional[dict[str, Any]] = None
    metrics: Optional[list[Any]] = None
    table_mean: Optional[dict[str, Any]] = None
    id: Optional[str] = None
    run_dir: Optional[Path] = None

    @property
    def pe(self) -> str:
        return self.summary["pe"]

    @property
    def test_acc(self) -> float:
        """Test accuracy, a fraction."""
        return self.summary["test_acc"]

    @property
    def paper_code(self) -> bool:
        """Whether the run trained the paper code's model of its role (paper-code mode: its
        summary's ``code`` is ``"paper"``)."""
        return self.summary.get("code") == "paper"

    @property
    def schedule(self) -> Any:
        """The run's :class:`~posenc.empirical.training.schedule.OptimizerSchedule` (its
        ``summary["schedule"]``); None when not recorded (a result of a run measured before it
        was, read without its config)."""
        data = self.summary.get("schedule")
        where = f"run {self.id}" if self.id else "an experiment result"
        return None if data is None else OptimizerSchedule.from_dict(data, where)

    @classmethod
    def from_store(cls, store: Any, rid: str, config: dict[str, Any]) -> "ExperimentResult":
        """Run ``rid``'s result in ``store`` (a :class:`~posenc.empirical.pipeline.store.RunStore`),
        checked against ``config``, the config it was run for."""
        return cls.from_stored(store.result(rid), id=rid, run_dir=store.run_dir(rid), config=config)

    @classmethod
    def from_stored(cls, data: Any, id: Optional[str] = None, run_dir: Optional[Path] = None,
                    config: Optional[dict[str, Any]] = None) -> "ExperimentResult":
        """The result of a stored ``result.json`` (``data``); ``config``: the run's config
        (an :class:`~posenc.empirical.pipeline.experiment.ExperimentConfig` as a dict) to check it against."""
        where = f"run {id}" if id else "an experiment result"
        if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
            raise PosencError(f"{where} has no summary; run the sweep again to redo the run")
        s = data["summary"]
        tags = s.get("tags")
        role = tags.get("role") if isinstance(tags, dict) else None
        task, seed = s.get("task"), s.get("seed")
        for name, value, ok in (("task", task, isinstance(task, str) and task),
                                ("tags.role", role, isinstance(role, str) and role),
                                ("seed", seed, is_int(seed) and seed >= 0)):
            if not ok:
                raise PosencError(f"{where}: summary {name} must be a "
                                  f"{'non-negative integer' if name == 'seed' else 'name'}; "
                                  f"got {value!r}")
        fields = {}
        for key, kind in _MEASUREMENTS.items():
            value = data.get(key)
            if value is not None and not isinstance(value, kind):
                raise PosencError(f"{where}: {key} must be a JSON {_KIND_NAMES[kind]}; "
                                  f"got {type(value).__name__}")
            fields[key] = value
        out = cls(task=task, role=role, seed=int(seed), summary=s,
                  **{**fields, "ablation": fields["ablation"] or {}}, id=id, run_dir=run_dir)
        if config is not None:
            out._check_against(config, where)
            if "length_rate" not in s or "bayes_ceiling" not in s:  # a run stored before they
                for key, value in _of_task(config, where).items():  # were recorded: its config's
                    s.setdefault(key, value)
            if "schedule" not in s:  # (as length_rate), with the steps per epoch of its metrics
                schedule = _schedule(config, fields["metrics"], where)
                if schedule is not None:
                    s["schedule"] = schedule
        if s.get("schedule") is not None:  # a malformed one names the run here, not in a report
            out.schedule
        return out

    def to_stored(self) -> dict[str, Any]:
        """The stored form (``result.json``'s keys; a measurement not recorded is left out)."""
        out: dict[str, Any] = {"summary": self.summary, "ablation": self.ablation}
        out.update({k: getattr(self, k) for k in _MEASUREMENTS
                    if k != "ablation" and getattr(self, k) is not None})
        return out

    @classmethod
    def of(cls, result: Union["ExperimentResult", dict[str, Any]]) -> "ExperimentResult":
        """``result`` itself, or a worker's result dict read by :meth:`from_stored`."""
        return result if isinstance(result, cls) else cls.from_stored(result)

    def _check_against(self, config: dict[str, Any], where: str) -> None:
        train = config.get("train", config) if isinstance(config, dict) else {}
        task = (train.get("task") or {}).get("name") if isinstance(train, dict) else None
        expected = {"task": task, "seed": train.get("seed") if isinstance(train, dict) else None,
                    "role": (config.get("tags") or {}).get("role")}
        got = {"task": self.task, "seed": self.seed, "role": self.role}
        wrong = [f"{k} {got[k]!r} (its config: {v!r})" for k, v in expected.items()
                 if v is not None and v != got[k]]
        if wrong:
            raise PosencError(f"{where}: its result does not match its config: {'; '.join(wrong)}; "
                              "run the sweep again to redo the run")
