"""Per-step training trace: loss, gradient norm, batch accuracy, and the learned relative tables.

Two claims of Gu et al. (arXiv 2505.13027) are about *how* training goes, not where it ends:
v1's "multiplicative coupling improves optimisation stability" and "a relative PE attenuates its
bias toward zero on the count task".  :func:`~posenc.empirical.training.train.train` therefore keeps, for
every optimiser step ``t`` (0-based, before update t is applied):

``loss``       the mini-batch cross-entropy the update was computed from
``grad_norm``  the global L2 norm of all parameter gradients, before any clipping
``acc``        the mini-batch accuracy of that forward pass (training mode)

and, at the initialisation (step 0) and after every epoch, the magnitude of every learned
relative-bias table (:class:`~posenc.empirical.model.pe.bias.TableBias`, one per layer) over the
offsets the task can use, |k| <= min(max_distance, T - 1):

``table_rms``          root mean square of the raw table entries, per layer
``table_centred_rms``  the same after subtracting each head's mean over those offsets (a
                       constant shift of a head's table does not change its attention)

Recording never changes training (it reads values the step computed anyway; the gradient norm
is that of ``clip_grad_norm_`` when clipping is on) and is always on, so it is not part of the
run's config and changes no run id.  **File** ``trace.jsonl`` in the run folder: line 1 a header
(``kind: header``, format, the run id it belongs to, steps per epoch), then one line per
finished epoch (``kind: epoch``).  It is rewritten atomically before every checkpoint, and a
resumed run keeps only the epochs before its checkpoint.  :func:`read_trace` refuses a file of
another run; a run trained before the trace existed has none (:func:`read_trace` -> None).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any, Optional

import torch

from ...atomic import atomic_write_text
from ...errors import PosencError
from ..model.pe.bias import TableBias

TRACE = "trace.jsonl"
FORMAT = 1


def table_magnitudes(model: torch.nn.Module, seq_len: int) -> Optional[dict[str, list[float]]]:
    """RMS and head-centred RMS of each layer's learned per-offset bias table over the offsets
    |k| <= min(max_distance, seq_len - 1); None when the model has no such table."""
    raw, centred = [], []
    for block in getattr(model, "blocks", []):
        b = getattr(block.attn, "bias", None)
        if not isinstance(b, TableBias):
            continue
        w = b.weight.detach().double()[:, b.used_columns(seq_len)]  # (H, 2 reach + 1)
        raw.append(float(w.pow(2).mean().sqrt()))
        centred.append(float((w - w.mean(1, keepdim=True)).pow(2).mean().sqrt()))
    if not raw:
        return None
    return {"table_rms": raw, "table_centred_rms": centred}


class TraceRecorder:
    """Collects the per-step values of one run and writes ``trace.jsonl`` (see the module doc)."""

    def __init__(self, out: Path, run_id: str, steps_per_epoch: int, seq_len: int) -> None:
        self.path = Path(out) / TRACE
        self.seq_len = seq_len
        self.header = {"kind": "header", "format": FORMAT, "run_id": run_id,
                       "steps_per_epoch": steps_per_epoch}
        self.epochs: list[dict[str, Any]] = []
        self.initial: Optional[dict[str, list[float]]] = None
        self._loss: list[torch.Tensor] = []
        self._norm: list[torch.Tensor] = []
        self._acc: list[float] = []

    def start(self, model: torch.nn.Module, start_epoch: int) -> None:
        """Keep the epochs of a resumed run before ``start_epoch``; note the initial tables."""
        self.epochs = []
        if start_epoch == 0:
            self.initial = table_magnitudes(model, self.seq_len)
            return
        got = read_trace(self.path.parent, self.header["run_id"])
        if got is not None:
            self.initial = got[0].get("initial_tables")
            self.epochs = [e for e in got[1] if e["epoch"] <= start_epoch]
        if len(self.epochs) != start_epoch:  # no (complete) trace to continue: none for this run
            self.epochs, self.header["incomplete"] = [], True

    def step(self, loss: torch.Tensor, grad_norm: torch.Tensor, acc: float) -> None:
        self._loss.append(loss.detach().float().reshape(()))
        self._norm.append(grad_norm.detach().float().reshape(()))
        self._acc.append(acc)

    def end_epoch(self, epoch: int, model: torch.nn.Module) -> None:
        """Close epoch ``epoch`` (1-based) and write the file."""
        rec: dict[str, Any] = {"kind": "epoch", "epoch": epoch,
                               "loss": [float(x) for x in torch.stack(self._loss).cpu()],
                               "grad_norm": [float(x) for x in torch.stack(self._norm).cpu()],
                               "acc": list(self._acc)}
        tables = table_magnitudes(model, self.seq_len)
        if tables is not None:
            rec["tables"] = tables
        self.epochs.append(rec)
        self._loss, self._norm, self._acc = [], [], []
        self.flush()

    def flush(self) -> None:
        head = dict(self.header, initial_tables=self.initial)
        atomic_write_text(self.path, "".join(json.dumps(x) + "\n" for x in [head] + self.epochs))


def grad_norm(parameters) -> torch.Tensor:
    """Global L2 norm of the gradients (a 0-d tensor; 0 when none has a gradient): the L2 norm of
    the per-tensor norms, as ``clip_grad_norm_`` computes it (``torch.nn.utils.get_total_norm``
    does the same but came in torch 2.6; the declared minimum is 2.4)."""
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.zeros(())
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g, 2.0) for g in grads]), 2.0)


def read_trace(run_dir: str | Path, run_id: str) -> Optional[tuple[dict[str, Any],
                                                                   list[dict[str, Any]]]]:
    """(header, epoch records) of the run's ``trace.jsonl``; None when the run has none or it
    was left incomplete by a resume from a run without one.  A damaged file or one of another
    run (its header's run id is not ``run_id``) is a PosencError."""
    path = Path(run_dir) / TRACE
    if not path.is_file():
        return None
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    except (OSError, ValueError) as exc:
        raise PosencError(f"{path} is damaged ({exc})") from None
    if not rows or not isinstance(rows[0], dict) or rows[0].get("kind") != "header" \
            or rows[0].get("format") != FORMAT:
        raise PosencError(f"{path} is not a posenc training trace (format {FORMAT})")
    if rows[0].get("run_id") != run_id:
        raise PosencError(f"{path} belongs to run {rows[0].get('run_id')}, not {run_id}")
    if rows[0].get("incomplete"):
        return None
    return rows[0], [r for r in rows[1:] if isinstance(r, dict) and r.get("kind") == "epoch"]


# --- statistics of a trace (the stability and attenuation claims) ------------------------------

SKIP_SHARE = 0.1   # the first 10% of steps (initial transient, warm-up) are left out of CV / spikes
SPIKE_RATIO, SPIKE_NATS = 2.0, 0.1


def window(total: int) -> int:
    """The window W of the step statistics: max(5, round(0.02 * total steps))."""
    return max(5, round(0.02 * total))


def grad_norm_cv(norms: list[float], w: int, skip: int) -> Optional[float]:
    """Mean over consecutive windows of ``w`` steps from step ``skip`` on (a last partial window
    dropped) of the window's coefficient of variation sd / mean (population sd): step-to-step
    jitter of the gradient norm, not its trend over training.  None without a whole window."""
    cvs = []
    for s in range(skip, len(norms) - w + 1, w):
        x = norms[s:s + w]
        m = sum(x) / w
        if m > 0:
            cvs.append((sum((v - m) ** 2 for v in x) / w) ** 0.5 / m)
    return sum(cvs) / len(cvs) if cvs else None


def epoch_grad_norm_cv(epochs: list[dict[str, Any]]) -> list[Optional[float]]:
    """Per epoch (in order) the coefficient of variation sd / mean (population sd) of its
    steps' gradient norms (None for an epoch without steps or with a zero mean): the window is
    one epoch, the same steps of the same learning-rate schedule in every run of a task, so
    runs can be compared over the epochs they all trained (:func:`matched_epochs_cv`)."""
    out: list[Optional[float]] = []
    for e in epochs:
        x = e["grad_norm"]
        m = sum(x) / len(x) if x else 0.0
        out.append((sum((v - m) ** 2 for v in x) / len(x)) ** 0.5 / m if m > 0 else None)
    return out


#: epochs at the start of every matched window left out (the initial transient)
MATCHED_SKIP = 1


def matched_epochs_cv(per_epoch: list[list[Optional[float]]],
                      skip: int = MATCHED_SKIP) -> tuple[Optional[list[Optional[float]]], int]:
    """(each run's mean per-epoch CV over the epochs skip+1..E, E): E the fewest epochs any of
    the runs trained -- the same epoch window, before any of them stopped.  The list is None
    when that window is empty; a run's entry is None when an epoch of the window has none."""
    last = min((len(cvs) for cvs in per_epoch), default=0)
    if last <= skip:
        return None, last
    means: list[Optional[float]] = []
    for cvs in per_epoch:
        window = cvs[skip:last]
        means.append(None if any(v is None for v in window) else sum(window) / len(window))
    return means, last


def loss_spikes(losses: list[float], w: int, skip: int) -> tuple[int, int]:
    """(spikes, steps tested): step t >= max(skip, w) is a spike when its loss exceeds
    SPIKE_RATIO times the median m of the w losses before it and m by more than SPIKE_NATS."""
    spikes, tested = 0, 0
    for t in range(max(skip, w), len(losses)):
        m = statistics.median(losses[t - w:t])
        tested += 1
        spikes += losses[t] > SPIKE_RATIO * m and losses[t] - m > SPIKE_NATS
    return spikes, tested


def steps_to_fraction(accs: list[float], w: int, fraction: float = 0.9) -> Optional[float]:
    """With a_t the mean batch accuracy of steps t-w+1..t (fewer at the start): the share of
    training, (t + 1) / total, at the first t with a_t >= fraction * a_last."""
    if not accs:
        return None
    run, smooth = 0.0, []
    for t, a in enumerate(accs):
        run += a - (accs[t - w] if t >= w else 0.0)
        smooth.append(run / min(t + 1, w))
    goal = fraction * smooth[-1]
    first = next(t for t, a in enumerate(smooth) if a >= goal - 1e-12)
    return (first + 1) / len(accs)


def summarize_trace(header: dict[str, Any], epochs: list[dict[str, Any]],
                    kept_epoch: Optional[int] = None) -> dict[str, Any]:
    """The run's trace statistics (JSON): ``grad_norm_cv``, ``spikes``/``spike_rate``,
    ``steps_to_90`` (share of training), ``grad_norm_epoch_cv`` (:func:`epoch_grad_norm_cv`
    of every epoch trained, ``kept_epoch`` or not), and for a learned relative table ``tables``: the mean
    over layers of the head-centred RMS at the initialisation and after each epoch, and
    ``log_attenuation`` = log(final / initial) of it (< 0: the table shrank toward zero).

    ``kept_epoch`` (early stopping: the epoch whose weights the run kept): the statistics are
    over the training up to that epoch's end, the training that made the kept model.  The
    epochs after it (the patience tail) differ by PE -- a run whose validation accuracy reaches
    1.0 stops at once, another trains ``patience`` more epochs -- and would make the runs'
    statistics cover different phases of training."""
    every_epoch = epoch_grad_norm_cv(epochs)  # the whole training, the patience tail included
    if kept_epoch is not None:
        epochs = [e for e in epochs if e["epoch"] <= kept_epoch]
    loss = [x for e in epochs for x in e["loss"]]
    norms = [x for e in epochs for x in e["grad_norm"]]
    accs = [x for e in epochs for x in e["acc"]]
    total = len(loss)
    w, skip = window(total), math.ceil(SKIP_SHARE * total)
    spikes, tested = loss_spikes(loss, w, skip)
    out: dict[str, Any] = {"steps": total, "window": w, "skip": skip,
                           "grad_norm_cv": grad_norm_cv(norms, w, skip), "spikes": spikes,
                           "spike_rate": spikes / tested if tested else None,
                           "steps_to_90": steps_to_fraction(accs, w, 0.9),
                           "grad_norm_epoch_cv": every_epoch}
    init = header.get("initial_tables")
    if init is not None and all("tables" in e for e in epochs) and epochs:
        def mean(t: dict) -> float:
            return sum(t["table_centred_rms"]) / len(t["table_centred_rms"])
        curve = [mean(init)] + [mean(e["tables"]) for e in epochs]
        out["tables"] = {"centred_rms": curve, "log_attenuation":
                         math.log(curve[-1] / curve[0]) if curve[0] > 0 and curve[-1] > 0
                         else None}
    return out
