"""The per-run summary of ``dynamics.jsonl`` (see :mod:`.dynamics`); its figures are in
:mod:`.dynamics_plots`, its sweep worker and jobs in :mod:`.dynamics_sweep`.

:func:`summarize` answers, for one run of Gu et al.'s (arXiv 2505.13027) setting, the questions
of Sec. 6 and of its reviewers:

* **final deposit** -- (layer, head) with the largest single-head zero-ablation accuracy drop on
  the run's ``ablation_zero.json`` when there is one (the reproduction's definition), else the
  largest loss increase of the final record;
* **prediction from the first N steps** -- the records with ``step <= N`` (the *early window*,
  default 10% of training) name a predicted head three ways: the largest mean |seed|
  (``signal``), the largest mean first-order ``attribution`` and the largest measured
  ``importance`` of the last early record that has one.  Each is scored as an exact hit
  (layer and head; chance 1 / (L H)) and a head hit within the deposit layer (chance 1 / H);
  ``curve`` repeats this for every recorded N;
* **advantage step** -- the first importance record from which the final deposit head stays the
  most important head of its layer until the end (None if it never does), and
  ``advantage_share``, its importance there as a fraction of its final importance (near 0 when
  the lead at that record is only a hair's breadth above heads that do nothing yet);
* **coherence** -- the early mean of |seed| / mean |psi| per head (Prop. 6.1 / 6.2 statistics:
  its maximum over heads) and the sign consistency over batches of the top-signal head;
  beside it the **sign balance**, the early mean of |#positive - #negative| / n of the
  examples' signals per head (a record's ``sign_balance``; in records made before it was
  recorded, |2 agreement - 1|, the same number unless the seed is exactly 0 -- such a head is
  left out), and its maximum over heads (``sign_balance_max``).
  With signals of one common magnitude the two are equal; the sign balance ignores the
  magnitudes, so under sign-symmetric signals (each example's sign a fair coin, whatever its
  magnitude) it has the random-sign null's distribution exactly
  (:func:`posenc.verdicts.dynamics.random_sign_null`), which the coherence has only when the
  magnitudes are equal;
* **margins and gains** -- per layer the margin (top minus runner-up) of |seed| averaged over the
  early window and of the final importance; the gains ``gamma_k = M_k / M_{k+1}`` (layer 0 the
  shallowest) and their mean log (Thm. 6.1: positive when margins grow towards shallow layers);
  the same for the **scale-free margin** (``signal_margin_relative``: per record the layer's
  |seed| margin divided by its mean |seed| over heads, averaged over the early window; unchanged
  when every seed of a layer is rescaled, so a layer whose seeds are all smaller -- absolute
  margins shrink with depth under ALiBi too -- does not by that alone have a smaller margin);
* **sign-flip randomisation** (``sign_flip``, when the early records keep their per-example
  signals): the coherence statistic against its exact null under sign symmetry, conditional on
  the observed magnitudes (:func:`.sign_flip.sign_flip_test`; Prop. 6.1).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional

from ...errors import PosencError
from .early_window import default_early_steps
from .sign_flip import sign_flip_test, window_signals
from .dynamics import read_dynamics_file


def nan_of(x: Optional[float]) -> float:
    """A recorded number, None (not recorded) as NaN."""
    return float("nan") if x is None else float(x)


def _argmax(grid: list[list[float]], layers: Optional[list[int]] = None) -> Optional[tuple[int, int]]:
    best, where = -math.inf, None
    for l, row in enumerate(grid):
        if layers is not None and l not in layers:
            continue
        for h, v in enumerate(row):
            if not math.isnan(v) and v > best:
                best, where = v, (l, h)
    return where


def _mean_grid(records: list[dict], key: str, transform=lambda x: x) -> list[list[float]]:
    grids = [[[transform(nan_of(v)) for v in row] for row in r[key]] for r in records]
    L, H = len(grids[0]), len(grids[0][0])
    return [[sum(g[l][h] for g in grids) / len(grids) for h in range(H)] for l in range(L)]


def _hits(pred: Optional[tuple[int, int]], grid: Optional[list[list[float]]],
          deposit: tuple[int, int]) -> dict[str, Any]:
    if pred is None or grid is None:
        return {"predicted": None, "hit": None, "head_hit": None}
    in_layer = _argmax([grid[deposit[0]]])
    return {"predicted": list(pred), "hit": tuple(pred) == tuple(deposit),
            "head_hit": in_layer is not None and in_layer[1] == deposit[1]}


def _predict(window: list[dict], deposit: tuple[int, int]) -> dict[str, Any]:
    out = {}
    has_signal = any(v is not None for row in window[0]["seed"] for v in row)
    sig = _mean_grid(window, "seed", abs) if has_signal else None
    out["signal"] = _hits(_argmax(sig) if sig else None, sig, deposit)
    att = _mean_grid(window, "attribution")
    out["attribution"] = _hits(_argmax(att), att, deposit)
    imp_recs = [r for r in window if r.get("importance") is not None]
    imp = [[nan_of(v) for v in row] for row in imp_recs[-1]["importance"]] if imp_recs else None
    out["importance"] = _hits(_argmax(imp) if imp else None, imp, deposit)
    return out


def _final_deposit(records: list[dict], ablation: Optional[dict]) -> tuple[tuple[int, int], str]:
    if ablation is not None:
        best = max(ablation["layers"], key=lambda la: (la["largest_drop"], -la["layer"]))
        return (best["layer"], best["deposit_head"]), "ablation_zero.json"
    final = [r for r in records if r.get("importance") is not None]
    if not final:
        raise PosencError("the dynamics file has no importance record to find the deposit head")
    grid = [[nan_of(v) for v in row] for row in final[-1]["importance"]]
    return _argmax(grid), f"importance at step {final[-1]['step']}"


def _with_balance(record: dict[str, Any]) -> dict[str, Any]:
    """The record with its ``sign_balance`` grid; from ``agreement`` (a = the share of examples
    with the seed's sign: balance |2a - 1|) when the record predates it.  a = 0 means a seed of
    exactly 0, whose balance the agreement does not tell: NaN, left out."""
    if "sign_balance" in record:
        return record
    grid = [[None if a is None or nan_of(a) == 0.0 else abs(2.0 * nan_of(a) - 1.0) for a in row]
            for row in record["agreement"]]
    return {**record, "sign_balance": grid}


def _relative_margin(seeds: list[Optional[float]]) -> float:
    """A record's layer margin made scale-free: (top - runner-up of |seed|) / mean |seed| over
    the layer's heads (NaN for a layer without a signal or with every seed 0)."""
    a = sorted((abs(nan_of(v)) for v in seeds), reverse=True)
    mean = sum(a) / len(a)
    if any(math.isnan(v) for v in a) or not mean > 0:
        return float("nan")
    return (a[0] - a[1]) / mean if len(a) > 1 else 0.0


def _gains(margins: list[float]) -> tuple[list[Optional[float]], Optional[float]]:
    gains = []
    for k in range(len(margins) - 1):
        a, b = margins[k], margins[k + 1]
        gains.append(a / b if b > 0 and a > 0 else None)
    logs = [math.log(g) for g in gains if g is not None]
    ok = len(logs) == len(gains) and logs
    return gains, (sum(logs) / len(logs) if ok else None)


def summarize(header: dict[str, Any], records: list[dict[str, Any]],
              early_steps: Optional[int] = None,
              ablation: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """The run's dynamics summary (JSON-serialisable; see the module doc)."""
    if not records:
        raise PosencError("the dynamics file has no records yet")
    total = int(header["total_steps"])
    if early_steps is None:
        early_steps = default_early_steps(total, int(header["dynamics"]["every"]))
    if early_steps < 0:
        raise PosencError(f"--early must be >= 0 steps; got {early_steps}")
    window = [r for r in records if r["step"] <= early_steps] or records[:1]
    deposit, source = _final_deposit(records, ablation)
    L, H = int(header["n_layers"]), int(header["n_heads"])
    has_signal = any(header.get("signal_layers", [True]))
    curve = []
    for r in records:
        w = [x for x in records if x["step"] <= r["step"]]
        p = _predict(w, deposit)
        curve.append({"step": r["step"], **{f"{k}_hit": v["hit"] for k, v in p.items()},
                      **{f"{k}_head_hit": v["head_hit"] for k, v in p.items()}})
    imp_recs = [r for r in records if r.get("importance") is not None]
    advantage, advantage_share = None, None
    for i, r in enumerate(imp_recs):
        if all(_argmax([[nan_of(v) for v in x["importance"][deposit[0]]]])[1] == deposit[1]
               for x in imp_recs[i:]):
            advantage = r["step"]
            final = nan_of(imp_recs[-1]["importance"][deposit[0]][deposit[1]])
            here = nan_of(r["importance"][deposit[0]][deposit[1]])
            advantage_share = here / final if final > 0 else None
            break
    out: dict[str, Any] = {
        "pe": header["pe"], "task": header["task"], "seed": header["seed"], "n_layers": L,
        "n_heads": H, "total_steps": total, "steps": [r["step"] for r in records],
        "complete": bool(records[-1].get("final")), "early_steps": early_steps,
        "early_records": len(window), "deposit": list(deposit), "deposit_source": source,
        "prediction": _predict(window, deposit), "curve": curve,
        "advantage_step": advantage, "advantage_share": advantage_share,
        "chance": {"hit": 1 / (L * H), "head_hit": 1 / H},
        # the shape of the signals (Prop. 6.2's random-sign null): examples per record, heads
        "probe_examples": header.get("probe_examples"),
        "signal_heads": (sum(bool(x) for x in header["signal_layers"]) * H
                         if "signal_layers" in header else None),
    }
    if has_signal:
        coh = _mean_grid(window, "coherence")
        sig = _mean_grid(window, "seed", abs)
        top = _argmax(sig)
        signed = _mean_grid(window, "seed")[top[0]][top[1]]
        batches = [b for r in window for b in r["seed_batches"][top[0]][top[1]]]
        consistency = sum(1 for b in batches if b is not None and b * signed > 0) / len(batches)
        sm = [sum(nan_of(r["margin"]["signal"][l]) for r in window) / len(window) for l in range(L)]
        gains, mlog = _gains(sm)
        if all("sign_balance" in r or "agreement" in r for r in window):
            bal = _mean_grid([_with_balance(r) for r in window], "sign_balance")
            out["sign_balance_max"] = max((v for row in bal for v in row if not math.isnan(v)),
                                          default=None)
        rel = [sum(_relative_margin(r["seed"][l]) for r in window) / len(window)
               for l in range(L)]
        rel_gains, rel_mlog = _gains(rel)
        out.update(signal_margin_relative=rel, signal_relative_gains=rel_gains,
                   signal_relative_mean_log_gain=rel_mlog)
        signals = window_signals(window)
        if signals is not None:
            out["sign_flip"] = sign_flip_test(signals)
        out.update(coherence_max=max(v for row in coh for v in row if not math.isnan(v)),
                   coherence_top=coh[top[0]][top[1]], top_signal_head=list(top),
                   batch_sign_consistency=consistency, signal_margin=sm, signal_gains=gains,
                   signal_mean_log_gain=mlog, coherence=coh)
    if imp_recs:
        im = [nan_of(v) for v in imp_recs[-1]["margin"]["importance"]]
        gains, mlog = _gains(im)
        out.update(importance_margin=im, importance_gains=gains, importance_mean_log_gain=mlog)
    return out


def summarize_run(run_dir: str | Path, early_steps: Optional[int] = None) -> dict[str, Any]:
    """:func:`summarize` of a run folder (its ablation_zero.json, if any, names the deposit)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise PosencError(f"run folder {run_dir} does not exist")
    header, records = read_dynamics_file(run_dir)
    ablation = None
    if (run_dir / "ablation_zero.json").is_file():
        try:
            ablation = json.loads((run_dir / "ablation_zero.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise PosencError(f"cannot read {run_dir / 'ablation_zero.json'}: {exc}") from None
    return summarize(header, records, early_steps, ablation)
