"""``posenc.train`` / ``load_run`` / ``ablate`` / ``reproduce``: the empirical half of the library.

A :class:`~posenc.empirical.training.runs.Run` is what a run folder holds, loaded: its config, the model
with trained weights (on the CPU, in eval mode), its metrics, and -- when it came from
:func:`train` -- ``run.training``, the :class:`~posenc.empirical.training.train.RunResult` of that call.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, overload

from ..errors import PosencError
from ..limits import check_int
from ..training_presets import training_preset
from .. import arguments as arg
from .pretrained import PRETRAINED_OPTIONS, ablate_pretrained, is_pretrained

if TYPE_CHECKING:  # torch is imported only when a function runs
    from ..empirical.analysis.ablation import AblationTable as AblationResult
    from ..empirical.pretrained.result import PretrainedAblation
    from ..empirical.training.runs import Run

#: Keyword options that ablate() passes on to posenc.empirical.analysis.ablation.ablate.
ABLATE_OPTIONS = frozenset({"batch_size", "seed", "batched", "layers", "distances", "expand"})


def _positive(name: str, value: Optional[int]) -> Optional[int]:
    return None if value is None else check_int(name, value, 2**63 - 1)  # ranges: the config


def train(task: str = "distance", pe: Any = "rope", *, preset: str = "quick", seed: int = 0,
          out: Optional[str | Path] = None, config: Any = None, epochs: Optional[int] = None,
          samples: Optional[int] = None, threads: Optional[int] = None,
          device: Optional[str] = None, precision: Optional[str] = None,
          paper_code: bool = False, overrides: Optional[dict[str, Any]] = None,
          resume: bool = True, progress: Optional[bool] = None) -> Run:
    """Train (or resume, or find finished) a small Transformer with ``pe`` on ``task``.

    ``pe``: a spec string (``"alibi:slopes=exp"``) or a :class:`~posenc.PESpec`;
    ``preset``: a training preset (:data:`posenc.training_presets.TRAINING_PRESETS`);
    ``config``: a TrainConfig or the path of a config
    JSON instead of a preset; ``out``: the run folder (default ``runs/<run id>``);
    ``overrides``: dotted config fields, e.g. ``{"model.n_layers": 2}``.  Returns the
    loaded :class:`~posenc.empirical.training.runs.Run`, with ``run.training`` set.
    """
    from ..empirical.config import TrainConfig, apply_overrides, check_overrides, load_config
    from ..empirical.config import preset as make_preset
    from ..empirical.training.train import train as run_training

    paper_code, resume = arg.flag("paper_code", paper_code), arg.flag("resume", resume)
    progress = arg.flag("progress", progress, optional=True)
    out = arg.path("out", out, optional=True)
    if config is not None:
        cfg = config if isinstance(config, TrainConfig) else load_config(str(arg.path("config", config)))
    else:
        training_preset(preset)
        cfg = make_preset(preset, task=task, pe=arg.spec(pe), seed=seed)  # a PESpec as it is
    epochs, samples = _positive("epochs", epochs), _positive("samples", samples)
    threads = _positive("threads", threads)
    changes: dict[str, Any] = check_overrides(arg.mapping("overrides", overrides), "overrides")
    for key, value in (("epochs", epochs), ("task.n_samples", samples), ("num_threads", threads),
                       ("device", device), ("precision", precision)):
        if value is not None:
            changes[key] = value
    if paper_code:  # the paper code's model and data for this PE (posenc.empirical.paper_specs)
        from ..empirical.config import paper_code_task_fields_for
        from ..empirical.paper_specs import paper_code_fields
        changes = {**paper_code_task_fields_for(cfg.preset, cfg, changes), **changes,
                   **paper_code_fields(cfg.model.spec)}
    if changes:
        cfg = apply_overrides(cfg, changes)
    result = run_training(cfg, out, resume=resume, progress=progress)
    return dataclasses.replace(load_run(result.run_dir), training=result)


def load_run(path: str | Path, device: str = "cpu") -> Run:
    """Load a run folder: config, model with trained weights (eval mode), metrics, result."""
    from ..empirical.training.runs import load_run as load
    from ..empirical.training.train import resolve_device

    resolve_device(device)  # a device that is not there is named, not blamed on the checkpoint
    return load(arg.path("path", path), device)


def import_checkpoint(file: str | Path, pe: str, task: str, out: str | Path, *,
                      heads: int = 16, preset: str = "paper", seq_len: Optional[int] = None,
                      trigger_ids: Optional[Sequence[int]] = None,
                      vocab: Optional[str | Path] = None,
                      triggers: Optional[Sequence[str]] = None) -> Run:
    """Turn a ``state_dict`` saved by the paper's scripts into a paper-code run folder ``out``.

    ``pe``: the paper's model -- nope | absolute | alibi | relative | random | rope
    (``dis_gen/trans.py``), ``partialrope:K`` (``count_gen/partialrope.py``, K heads rotated)
    or mla (``dis_gen/mla.py``); ``heads``: its head count (the key names do not say it, except
    for relative and mla); ``preset``/``task``: the task data that ``ablate`` and the probe
    use, with the checkpoint's vocabulary (``seq_len`` to change its length).  The triggers the
    model was trained with are required, as ``trigger_ids`` (distance: A, B; count: every
    trigger) or as the words ``triggers`` looked up in the tokenizer vocabulary file ``vocab``:
    the paper's scripts chose random trigger words, so posenc's default ids would score the model
    on data it was not trained on.  Returns the loaded
    :class:`~posenc.empirical.training.runs.Run`; nothing is written on a PosencError."""
    from ..empirical.training.paper_import import import_checkpoint as run_import

    training_preset(preset)
    if not isinstance(pe, str) or not isinstance(task, str):
        raise PosencError(f"pe and task must be strings; got {pe!r}, {task!r}")
    heads = check_int("heads", heads, 4096)
    if seq_len is not None:
        seq_len = check_int("seq_len", seq_len, 100_000)
    if trigger_ids is not None:
        if isinstance(trigger_ids, (str, bytes)) or not isinstance(trigger_ids, Sequence):
            raise PosencError(f"trigger_ids must be a list of integers; got {trigger_ids!r}")
    if triggers is not None:
        if isinstance(triggers, (str, bytes)) or not isinstance(triggers, Sequence) or not all(
                isinstance(w, str) for w in triggers):
            raise PosencError(f"triggers must be a list of words; got {triggers!r}")
    folder = run_import(arg.path("file", file), pe, task, arg.path("out", out), n_heads=heads,
                        preset=preset, seq_len=seq_len, trigger_ids=trigger_ids,
                        vocab=None if vocab is None else arg.path("vocab", vocab),
                        triggers=triggers)
    return load_run(folder)


@overload
def ablate(run: Run, mode: Optional[str] = None, *, examples: Optional[int] = None,
           device: Optional[str] = None, save: bool = False, **options: Any) -> AblationResult: ...


@overload
def ablate(run: Any, mode: Optional[str] = None, *, examples: Optional[int] = None,
           device: Optional[str] = None, save: bool = False,
           **options: Any) -> AblationResult | PretrainedAblation: ...


def ablate(run: Any, mode: Optional[str] = None, *, examples: Optional[int] = None,
           device: Optional[str] = None, save: bool = False,
           **options: Any) -> AblationResult | PretrainedAblation:
    """Ablate every attention head of ``run`` (a Run or a run folder) one at a time.

    ``run`` may also be a real pretrained model -- a transformers model, a local model folder
    (config.json, no posenc run.json) or a GGUF file: then the keyword options are
    :func:`posenc.api.pretrained.ablate_pretrained`'s (probe, unit, length, ...), the default
    mode is mean, and the result a
    :class:`~posenc.empirical.pretrained.result.PretrainedAblation`.

    ``mode``: zero (default) | mean | resample, applied to the head output before the output
    projection, or latent-columns (MLA runs only; one PosencError otherwise): the paper code's MLA ablation,
    variant v zeroing the latent dimensions [w v, w v + w) the up-projections read
    (:mod:`posenc.empirical.analysis.latent_ablation`), reported as "head" v;
    ``examples``: use only the first N test examples; ``device``: default the run's training
    device; ``save``: also write ``ablation-MODE.json`` into the run folder.  Further keyword
    options go to :func:`posenc.empirical.analysis.ablation.ablate` (batch_size, seed, layers, ...).
    Returns an :class:`~posenc.empirical.analysis.ablation.AblationTable` (``posenc.AblationResult``).
    """
    if is_pretrained(run):
        unknown = sorted(set(options) - PRETRAINED_OPTIONS)
        if unknown or save or device is not None:
            bad = unknown + (["save"] if save else []) + (["device"] if device is not None else [])
            raise PosencError(f"ablate: option(s) {', '.join(bad)} do not apply to a pretrained model; "
                              f"known: examples, {', '.join(sorted(PRETRAINED_OPTIONS))}")
        return ablate_pretrained(run, mode, examples=examples, **options)
    from ..empirical.analysis.ablation import MODES
    from ..empirical.analysis.ablation import ablate as run_ablation
    from ..empirical.training.runs import Run
    from ..empirical.training.train import resolve_device

    mode = "zero" if mode is None else mode
    if mode not in MODES:
        raise PosencError(f"unknown ablation mode {mode!r}; known: {', '.join(MODES)}")
    if examples is not None:
        examples = check_int("examples", examples, 2**31 - 1, minimum=2)
    save = arg.flag("save", save)
    unknown = sorted(set(options) - ABLATE_OPTIONS)
    if unknown:
        raise PosencError(f"ablate: unknown option(s) {', '.join(unknown)}; known: "
                          f"{', '.join(sorted(ABLATE_OPTIONS))}")
    if "seed" in options:  # torch's generator takes seeds below 2^64 (2^70 was a RuntimeError)
        options["seed"] = check_int("seed", options["seed"], 2**63 - 1, minimum=0)
    if options.get("batch_size") is not None:
        options["batch_size"] = check_int("batch_size", options["batch_size"], 10_000_000)
    for name in ("batched", "distances"):
        if name in options:
            options[name] = arg.flag(name, options[name])
    if "expand" in options:
        options["expand"] = arg.flag("expand", options["expand"], optional=True)
    if not isinstance(run, Run):
        run = load_run(arg.path("run (a Run or a run folder)", run))
    run.check_not_diverged("ablate")
    dev = resolve_device(run.config.device if device is None else device)
    run.model.to(dev)
    test = run.data().test
    if examples is not None:
        test = test.subset(slice(0, examples))
    table = run_ablation(run.model, test, mode, device=dev, **options)
    if save:
        table.save(Path(run.run_dir) / f"ablation-{mode}.json")
    return table


def reproduce(preset: str = "quick", *, out: Optional[str | Path] = None,
              backend: str = "local", seeds: Optional[int] = None,
              count_seeds: Optional[int] = None, workers: int = 2, threads: int = 1,
              ray_address: Optional[str] = None, device: Optional[str] = None,
              roles: Optional[Sequence[str]] = None, tasks: Optional[Sequence[str]] = None,
              overrides: Optional[dict[str, Any]] = None, theory: bool = True,
              log: Callable[[str], None] = print, wait: bool = False,
              until_decided: bool = False, max_seeds: Optional[int] = None,
              seed_batch: Optional[int] = None, first_seed: int = 0,
              paper_code: Optional[bool] = None, replicate: bool = False,
              replicate_first_seed: Optional[int] = None,
              keep_checkpoints: bool = False, retrain_incomplete: bool = False,
              progress: Optional[bool] = None) -> Path:
    """Run (or resume) the paper's experiments into a results store and write its report.

    Returns the path of ``report.md`` (default store ``posenc-out/PRESET``).  ``log`` receives
    the progress lines (``print`` by default; ``lambda s: None`` for silence).  ``wait``: if
    another sweep is writing the store, wait for it (default: a PosencError naming its PID).
    A failed run is a PosencError after the report of the finished runs is written.
    ``until_decided``: then add ``seed_batch`` (default 2) seeds at a time to the runs of claims
    still inconclusive, until each is decided or has ``max_seeds`` seeds.
    ``first_seed``: run seeds ``first_seed, first_seed + 1, ...`` (calibration sweeps use seeds
    the report never runs).
    ``paper_code``: the paper code's models, exactly (default: on for the ``paper`` preset
    only); the report says which mode its runs are in.
    ``replicate``: also run the same plan on a disjoint seed set (``replicate_first_seed``,
    default ``first_seed`` + 2000) into ``OUT-replicate``; the report shows both verdicts of
    each claim side by side, and a claim is decided only where they agree.
    ``keep_checkpoints``: keep each run's ``checkpoint.pt`` and ``trace.jsonl``; by default they
    are dropped once the run's analysis is done, and the store keeps its results (the trace's
    statistics among them), metrics, ablation, probe and
    dynamics (a store that can be committed and resumed: finished runs are skipped).
    ``retrain_incomplete``: train again the runs whose folder lacks a file a finished run keeps
    (result.json, config.json, run.json, ...); by default such a folder is a PosencError naming
    it and the file, before anything runs.
    ``progress``: a tqdm bar over the runs (runs done of N, elapsed, ETA, the runs in flight);
    None (default): where ``log`` is ``print`` and stdout is a terminal, else a ``log`` line per
    finished run with the same numbers.
    Ctrl-C (KeyboardInterrupt) stops the runs in flight within seconds and starts none: a
    :class:`~posenc.empirical.pipeline.interrupt.SweepInterrupted` (a KeyboardInterrupt) says
    how many finished; calling it again resumes the stopped runs from their checkpoints.
    """
    from ..reproduction import ReproduceOptions
    from ..reproduction import reproduce as run_reproduction

    given = locals()
    if not callable(log):
        raise PosencError(f"log must be a callable taking one string; got {log!r}")
    # the one options value of this reproduction, checked here and handed down whole
    return run_reproduction(ReproduceOptions(**{name: given[name]
                                                for name in ReproduceOptions.names()}), log=log)
