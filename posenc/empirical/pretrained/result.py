"""A real model's ablation as posenc reports its own: the per-layer table (deposit index, the
deposit head and the runner-up), per-unit loss, the head scores, and the JSON it is saved as."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ...atomic import atomic_write_text
from ..analysis.ablation import AblationTable, LayerAblation, deposit_index
from .probes import Probe
from .sweep import Sweep


@dataclass(frozen=True)
class PretrainedAblation:
    """``table``: accuracy per layer and unit as an :class:`AblationTable` (so posenc's strip plot
    and deposit measures apply); ``loss``: mean loss per layer and unit (the baseline's beside it);
    ``scores``: per layer, per query head, the attended distance, previous-token and induction
    scores; ``single_head_layers``: the layers holding the paper's single-head pattern (one unit
    costs at least 30 points, every other unit of the layer under 5), filled in by the caller that
    owns those thresholds."""

    model: dict[str, Any]
    probe: dict[str, Any]
    unit: str
    table: AblationTable
    baseline_loss: float
    loss: tuple[tuple[float, ...], ...]
    scores: tuple[dict[str, list[Optional[float]]], ...]
    seconds: dict[str, float]
    single_head_layers: Optional[tuple[int, ...]] = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: per layer, per unit: the 95% half-width of the drop over the probe's examples (or None)
    drop_half_width: tuple[tuple[Optional[float], ...], ...] = ()

    @property
    def mode(self) -> str:
        return self.table.mode

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "probe": self.probe, "mode": self.mode, "unit": self.unit,
                "baseline_acc": self.table.baseline_acc, "baseline_loss": self.baseline_loss,
                "layers": [dict(la.__dict__, loss=list(lo), scores=sc,
                                drop_half_width=None if hw is None else list(hw))
                           for la, lo, sc, hw in
                           zip(self.table.layers, self.loss, self.scores or [None] * len(self.loss),
                               self.drop_half_width or [None] * len(self.loss))],
                "single_head_layers": (None if self.single_head_layers is None
                                       else list(self.single_head_layers)),
                "seconds": self.seconds, "notes": list(self.notes)}

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")

    def lines(self) -> list[str]:
        """The text table: per layer the top unit and the runner-up, their drops, the deposit
        index; per head the largest previous-token and induction scores."""
        m, p = self.model, self.probe
        unit = "head" if self.unit == "head" else "kv group"
        out = [f"{m['source'] or m['class']}: {m['model_type']}, {m['layers']} layers, {m['heads']} query "
               f"heads, {m['kv_heads']} key/value heads of dim {m['head_dim']}",
               f"probe {p['name']} ({', '.join(f'{k} {v}' for k, v in p['params'].items())}; "
               f"{p['predictions']} predictions): baseline accuracy {100 * self.table.baseline_acc:.1f}%, "
               f"loss {self.baseline_loss:.3f}; {self.mode} ablation per {unit}",
               f"{'layer':>5} {'top ' + unit:>9} {'drop':>6} {'±95%':>5} {'runner-up':>9} {'drop':>6} "
               f"{'index':>6} "
               f"{'loss+':>6}  {'prev-token head':>15} {'induction head':>15}"]
        for i, la in enumerate(self.table.layers):
            order = sorted(range(len(la.drops)), key=lambda h: (-la.drops[h], h))
            second = order[1] if len(order) > 1 else None
            dloss = self.loss[i][la.deposit_head] - self.baseline_loss
            sc = self.scores[i] if self.scores else None
            best = ""
            for key in ("previous_token", "induction"):
                vals = sc[key] if sc else None
                if vals and vals[0] is not None:
                    h = max(range(len(vals)), key=lambda j: vals[j])
                    best += f" {f'H{h} {vals[h]:.2f}':>15}"
                else:
                    best += f" {'-':>15}"
            hw = self.drop_half_width[i][la.deposit_head] if self.drop_half_width else None
            out.append(f"{la.layer:>5} {la.deposit_head:>9} {100 * la.largest_drop:>6.1f} "
                       f"{'-' if hw is None else f'{100 * hw:.1f}':>5} "
                       f"{'-' if second is None else second:>9} "
                       f"{0.0 if second is None else 100 * la.drops[second]:>6.1f} "
                       f"{la.deposit_index:>6.2f} {dloss:>6.3f} {best}")
        if self.single_head_layers is not None:
            shown = ", ".join(map(str, self.single_head_layers)) or "none"
            out.append(f"single-head layers (one {unit} >= 30 points, the others < 5): {shown}")
        out.append(f"{self.seconds['cpu']:.0f} CPU s, {self.seconds['wall']:.0f} s wall")
        out += [f"note: {n}" for n in self.notes]
        return out


def assemble(sweep: Sweep, probe: Probe, model_info: dict[str, Any]) -> PretrainedAblation:
    rows = []
    for i, l in enumerate(sweep.layers):
        acc = sweep.acc[i]
        drops = tuple(sweep.baseline_acc - a for a in acc)
        index, head, gap = deposit_index(drops)
        dist = tuple(sweep.scores[i]["distance"]) if sweep.scores and sweep.unit == "head" else None
        rows.append(LayerAblation(l, sweep.baseline_acc, acc, drops, max(drops), head, index, gap,
                                  dist))  # type: ignore[arg-type]
    table = AblationTable(sweep.mode, probe.n_examples, sweep.baseline_acc, tuple(rows))
    info = {"name": probe.name, "params": dict(probe.params), "predictions": sweep.n_predictions,
            "positions": probe.tokens.shape[1]}
    return PretrainedAblation(model_info, info, sweep.unit, table, sweep.baseline_loss, sweep.loss,
                              sweep.scores, {"cpu": sweep.cpu_seconds, "wall": sweep.wall_seconds},
                              drop_half_width=sweep.drop_half_width)
