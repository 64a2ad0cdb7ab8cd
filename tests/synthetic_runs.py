"""Constructed sweep results (the shape of ``experiment_worker``'s) for verdict tests: no training."""

from typing import Any, Optional


def result(task: str, role: str, seed: int, acc: float, drop: float = 0.1, index: float = 0.5,
           n_test: int = 900, r2: Optional[dict[str, float]] = None,
           chance: Optional[float] = None,
           stop: Optional[tuple] = None, length_rate: Optional[float] = None,
           bayes_ceiling: Optional[float] = None) -> dict[str, Any]:
    """One run: test accuracy ``acc`` (fraction), one ablated layer with the given largest drop
    (fraction) and deposit index, a probe R^2 per site, the chance rate, the length-only rate
    and the task's Bayes ceiling (fractions) when given,
    and with ``stop = (stopped epoch, best epoch, max epochs[, patience[, best val acc]])``
    train.py's early-stopping summary (:func:`_stopping`)."""
    layer = {"layer": 0, "largest_drop": drop, "deposit_index": index, "runner_up_gap": 0.0,
             "deposit_head": 0, "baseline_acc": acc}
    return {"summary": {"task": task, "pe": role, "seed": seed, "preset": "smoke",
                        "test_acc": acc, "n_test": n_test, "tags": {"role": role},
                        **({"chance": chance} if chance is not None else {}),
                        **({"length_rate": length_rate} if length_rate is not None else {}),
                        **({"bayes_ceiling": bayes_ceiling} if bayes_ceiling is not None else {}),
                        **({"early_stopping": _stopping(*stop)} if stop is not None else {})},
            "ablation": {"zero": {"layers": [layer]}},
            "probe": {"probe_r2": r2} if r2 is not None else None}


def _stopping(stopped: int, best: int, max_epochs: int, patience: int = 2,
              best_val_acc: float = 0.5) -> dict[str, Any]:
    """train.py's summary: the stopping rule fired when ``patience`` epochs followed the kept one
    or the kept accuracy is perfect, "early" when that happened before the maximum."""
    fired = stopped - best >= patience or best_val_acc >= 1.0
    return {"patience": patience, "val_frac": 0.1, "val_examples": 100,
            "max_epochs": max_epochs, "stopped_epoch": stopped, "stopped_step": 10 * stopped,
            "stopped_early": fired and stopped < max_epochs, "best_epoch": best,
            "best_step": 10 * best, "best_val_acc": best_val_acc}


def sweep(accs: dict[tuple[str, str], list[float]], **kw: Any) -> list[dict[str, Any]]:
    """Results for (task, role) -> one accuracy (fraction) per seed 0, 1, ..."""
    return [result(task, role, s, a, **kw) for (task, role), vals in accs.items()
            for s, a in enumerate(vals)]
