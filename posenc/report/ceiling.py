"""The best possible accuracy of each task configuration in a report's runs
(:mod:`posenc.empirical.bayes_ceiling`), read from the runs' own ``train_config.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Optional

from ..errors import PosencError


def task_ceilings(results: Iterable[Any], examples: Optional[int] = None) -> list[dict[str, Any]]:
    """One row per distinct task configuration of ``results`` that have a run folder:
    {task, sampler, accuracy (percent), se (points), text}; a run folder whose config is of
    another task than its result is a PosencError (a report must not describe other data).
    ``examples``: of each Monte Carlo estimate (default
    :data:`~posenc.empirical.bayes_ceiling.DEFAULT_EXAMPLES`)."""
    from ..empirical.bayes_ceiling import DEFAULT_EXAMPLES, bayes_ceiling
    from ..empirical.training.runs import CONFIG, read_config

    tasks: dict[Any, None] = {}
    for r in results:
        path = Path(r.run_dir) / CONFIG if r.run_dir is not None else None
        if path is None or not path.is_file():
            continue
        task = read_config(path.parent).task
        if task.name != r.task:
            raise PosencError(f"{path} is a {task.name} run; its result says {r.task}")
        tasks.setdefault(task, None)
    rows = []
    for task in sorted(tasks, key=lambda t: (t.name, repr(t))):
        c = bayes_ceiling(task, examples or DEFAULT_EXAMPLES)
        rows.append({"task": task.name, "sampler": task.sampler, "accuracy": 100 * c.accuracy,
                     "se": 100 * c.se, "text": c.describe()})
    return rows
