"""Run configuration for the empirical layer: frozen dataclasses, presets, JSON.

A :class:`TrainConfig` is everything that determines a training run (task,
model, optimiser, seed); it is written as ``train_config.json`` into every run folder
and read back with :func:`config_from_dict`, which rejects unknown keys with a
:class:`~posenc.errors.PosencError`.  :func:`preset` builds the config of a training preset
(``smoke``, ``quick``, ``paper``, ``paper-small``) from its record in
:mod:`posenc.training_presets`, which holds each preset's values, what the paper's code has and
where the preset differs from it (values the paper does not state -- vocabulary size, gradient
clipping, activation -- are our choices and its notes say so).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import InitVar, dataclass, field
from typing import Any, Optional

from ..coerce import coerce, field_hints, is_int
from ..encodings import NAMED_SPECS, PESpec, parse_spec
from ..errors import PosencError
from ..limits import MAX_HEADS, MAX_WIDTH
from ..training_presets import PAPER_CODE_PRESETS, PRESET_NAMES, training_preset  # noqa: F401
from .paper_specs import CODES, check_paper_config, paper_code_task_fields

TASKS = ("distance", "count")
#: the distance task's filler samplers (TaskConfig.sampler)
SAMPLERS = ("clean", "paper")
PRECISIONS = ("float32", "bfloat16")
STEPS = ("fast", "reference")  # TrainConfig.step: posenc.empirical.fast, or the model's own forward
STOP_ON = ("accuracy", "accuracy_or_loss")  # TrainConfig.stop_on: what counts as progress


def _trigger_ids(task: "TaskConfig") -> tuple[int, ...]:
    """``task.trigger_ids`` checked and as a tuple (see :class:`TaskConfig`)."""
    ids = task.trigger_ids
    want = 2 if task.name == "distance" else task.n_triggers
    what = "A and B" if task.name == "distance" else f"task.n_triggers = {task.n_triggers}"
    _check(isinstance(ids, (list, tuple)) and len(ids) == want
           and all(isinstance(t, int) and not isinstance(t, bool) for t in ids),
           f"task.trigger_ids must be a list of {want} integer token ids ({what}); got {ids!r}")
    _check(len(set(ids)) == len(ids), f"task.trigger_ids must be distinct; got {list(ids)}")
    bad = [t for t in ids if not 1 <= t < task.vocab_size]
    _check(not bad, f"task.trigger_ids must lie in 1 .. vocab_size-1 = {task.vocab_size - 1} "
                    f"(0 is PAD); got {bad[:1]}")
    return tuple(ids)


@dataclass(frozen=True)
class TaskConfig:
    """A synthetic task (see :mod:`posenc.empirical.tasks`).

    ``distance``: filler with trigger A then B; left filler 1..max_left,
    between 1..max_gap, right 1..max_right; label = gap + 1 (the offset of B
    from A).  ``count``: ``seq_len`` tokens, k in 0..max_count of them drawn
    from ``n_triggers`` trigger tokens; label = k.  ``seq_len = None`` means the
    longest distance example (max_left + max_gap + max_right + 2).

    ``sampler`` (distance only): ``clean`` (default) draws every filler token independently
    from the non-trigger tokens, so each example holds exactly one A and one B;
    ``paper`` draws each filler segment (left, gap, right) as the paper's data generator does
    (``dis_gen/data-gen.py``: ``random.sample`` of the segment's length from the whole
    vocabulary), without repeats inside a segment and with the triggers among the fillers --
    an example may then hold more than one A or B, and the best possible accuracy is below
    100% (:mod:`posenc.empirical.bayes_ceiling`).  PAD is not a filler (posenc's padding
    masks read it).

    ``trigger_ids`` (default ``None``: distance A = 1, B = 2; count 1 .. n_triggers): the token
    ids of the triggers, e.g. the ids the paper's tokenizer gave its randomly chosen trigger
    words (``posenc import-checkpoint --trigger-ids``).  Distance takes two (A, B), count
    ``n_triggers``; the filler is every other non-PAD id, in increasing order, so the default
    gives exactly the data it gave before the field existed.

    ``pad_to`` (count only; default ``None``: no padding): every count example's ``seq_len``
    tokens are followed by PAD up to ``pad_to`` positions, as the paper's code pads every
    example to 128 (``count_gen/partialrope.py``; paper-code mode at the ``paper`` preset).  The
    label and the tokens are those of the unpadded example; a model whose padding is masked
    sees the same input, the paper code's model (which pools every position unmasked) does not.
    Left out of the config dict at ``None``.
    """

    name: str = "distance"
    n_samples: int = 2000
    train_frac: float = 0.7
    vocab_size: int = 16
    max_left: int = 3
    max_gap: int = 8
    max_right: int = 3
    n_triggers: int = 4
    max_count: int = 8
    seq_len: Optional[int] = None
    data_seed: Optional[int] = None
    sampler: str = "clean"
    trigger_ids: Optional[tuple[int, ...]] = None
    pad_to: Optional[int] = None

    def __post_init__(self) -> None:
        if self.name not in TASKS:
            raise PosencError(f"unknown task {self.name!r}; known: {', '.join(TASKS)}")
        if self.trigger_ids is not None:  # a JSON list (config file, --set) becomes a tuple
            object.__setattr__(self, "trigger_ids", _trigger_ids(self))
        _check(self.sampler in SAMPLERS,
               f"task.sampler must be one of {', '.join(SAMPLERS)}; got {self.sampler!r}")
        _check(self.sampler == "clean" or self.name == "distance",
               f"task.sampler {self.sampler!r} is a distance-task option (count has clean only)")
        for f in ("n_samples", "vocab_size", "max_left", "max_gap", "max_right", "n_triggers"):
            _pos_int(f"task.{f}", getattr(self, f))
        _check(isinstance(self.max_count, int) and self.max_count >= 0,
               f"task.max_count must be an integer >= 0; got {self.max_count!r}")
        _check(isinstance(self.train_frac, (int, float)) and 0 < self.train_frac < 1,
               f"task.train_frac must be in (0, 1); got {self.train_frac!r}")
        if self.seq_len is not None:
            _pos_int("task.seq_len", self.seq_len)
        if self.pad_to is not None:
            _check(self.name == "count", "task.pad_to is a count-task option (a distance "
                                         "example is padded to task.seq_len)")
            _pos_int("task.pad_to", self.pad_to)
            _check(self.pad_to >= self.content_length,
                   f"task.pad_to {self.pad_to} is shorter than the count example's "
                   f"{self.content_length} tokens (task.seq_len)")
        if self.name == "distance":
            _check(self.vocab_size >= 4, "task.vocab_size must be >= 4 for distance "
                                         "(pad, A, B and at least one filler token)")
            longest = max(self.max_left, self.max_gap, self.max_right)
            _check(self.sampler == "clean" or self.vocab_size - 1 >= longest,
                   f"task.sampler paper draws each filler segment without repeats from the "
                   f"{self.vocab_size - 1} non-PAD tokens: task.vocab_size must be >= "
                   f"{longest + 1} for a segment of {longest}")
            _check(self.length >= self.max_left + self.max_gap + self.max_right + 2,
                   f"task.seq_len {self.seq_len} is shorter than the longest distance example "
                   f"({self.max_left + self.max_gap + self.max_right + 2} tokens)")
        else:
            _check(self.vocab_size >= self.n_triggers + 2,
                   f"task.vocab_size must be >= n_triggers + 2 = {self.n_triggers + 2} for count")
            _check(self.max_count <= self.content_length,
                   f"task.max_count {self.max_count} exceeds the sequence length "
                   f"{self.content_length}")

    @property
    def length(self) -> int:
        """The padded sequence length of every example."""
        if self.pad_to is not None:
            return self.pad_to
        return self.content_length

    @property
    def content_length(self) -> int:
        """The tokens of a count example before its padding (``length`` without ``pad_to``; for
        distance, the padded length)."""
        if self.seq_len is not None:
            return self.seq_len
        if self.name == "distance":
            return self.max_left + self.max_gap + self.max_right + 2
        return 2 * self.max_count if self.max_count else 8

    @property
    def triggers(self) -> tuple[int, ...]:
        """The trigger token ids: distance (A, B), count the ``n_triggers`` ids."""
        if self.trigger_ids is not None:
            return self.trigger_ids
        return (1, 2) if self.name == "distance" else tuple(range(1, self.n_triggers + 1))

    @property
    def fillers(self) -> tuple[int, ...]:
        """The filler token ids: every non-PAD id that is not a trigger, increasing."""
        trig = set(self.triggers)
        return tuple(t for t in range(1, self.vocab_size) if t not in trig)

    @property
    def n_classes(self) -> int:
        return self.max_gap + 2 if self.name == "distance" else self.max_count + 1


@dataclass(frozen=True)
class ModelConfig:
    """The encoder: pre-LN blocks, mean pooling, linear classifier.

    ``pe`` is the PE: a catalogue spec string (``posenc encodings``) or a catalogue
    :class:`~posenc.encodings.PESpec`.  The config stores it as a string (the config dict and the
    run id hold that string) and holds its parse as :attr:`spec`: a string is parsed here, once;
    a PESpec is kept as it is and stored as its ``to_string()``.  A named spec (``paper-*``) is
    stored as its spec's string, so a run config records the spec it trained, not a name whose
    meaning may change.  ``parsed``: the parse of a string ``pe`` that the caller already holds
    (:func:`apply_overrides` passes the config's own), which is then not parsed again.

    Paper-code switches: ``kv_source='input'`` computes keys and values of every layer from
    the input embeddings; ``mask_padding=False`` lets attention and pooling see
    the padding tokens.  ``code='paper'`` builds the paper code's model exactly
    (:mod:`posenc.empirical.paper_specs`; the other switches must then be the
    ones that model fixes: :func:`~posenc.empirical.paper_specs.paper_code_fields`).
    """

    pe: str = "rope"
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 64
    dropout: float = 0.0
    causal: bool = False
    kv_source: str = "previous"
    mask_padding: bool = True
    activation: str = "gelu"
    code: str = "posenc"
    parsed: InitVar[Optional[PESpec]] = None

    def __post_init__(self, parsed: Optional[PESpec]) -> None:
        for f in ("d_model", "n_heads", "n_layers", "d_ff"):
            _pos_int(f"model.{f}", getattr(self, f))
        _check(self.d_model % self.n_heads == 0,
               f"model.d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        _check(isinstance(self.dropout, (int, float)) and 0 <= self.dropout < 1,
               f"model.dropout must be in [0, 1); got {self.dropout!r}")
        _check(self.kv_source in ("previous", "input"),
               f"model.kv_source must be previous or input; got {self.kv_source!r}")
        _check(self.activation in ("gelu", "relu"),
               f"model.activation must be gelu or relu; got {self.activation!r}")
        if isinstance(self.pe, PESpec):
            spec, text = self.pe, self.pe.to_string()
        elif isinstance(self.pe, str):
            spec = parsed if parsed is not None else parse_spec(self.pe)
            text = spec.to_string() if self.pe.strip() in NAMED_SPECS else self.pe
        else:
            raise PosencError(f"model.pe must be a PE spec string or PESpec; got {self.pe!r}")
        object.__setattr__(self, "pe", text)
        object.__setattr__(self, "_spec", spec)
        _check(self.code in CODES, f"model.code must be one of {', '.join(CODES)}; got {self.code!r}")
        if self.code == "paper":
            check_paper_config(self)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def spec(self) -> PESpec:
        """``pe`` as a catalogue :class:`~posenc.encodings.PESpec`, parsed (or given) when the
        config was made; the model, the paper-code check and the sweeps read it."""
        return self._spec


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a run.  ``num_threads=None`` keeps torch's setting.

    ``precision``: ``float32`` (default) or ``bfloat16`` -- the training and evaluation forward
    passes under ``torch.autocast`` with bfloat16 (weights, optimiser and loss stay float32).
    Measured 2.6x faster per step than float32 at the paper's size on an H200
    (benchmarks/train_step.py --also bf16); slower on a CPU.  It changes the arithmetic, so it is
    part of the run id; at float32 it is left out of the config dict, so that run ids and stores
    written before the field existed stay valid.

    Early stopping (off while ``patience`` is None): ``val_frac`` of the *training* split is held
    out as a validation split (rows identical to a training row stay on its side; the test split
    is never read for it); after every epoch the model is evaluated on it, and training stops once
    ``patience`` evaluations in a row have not raised the best validation accuracy, at once when
    it is perfect (nothing can replace those weights), or after ``epochs`` (then a maximum).
    ``stop_on = "accuracy_or_loss"``: an evaluation that lowered the best validation loss
    counts as progress too (training stops once ``patience`` evaluations have improved neither);
    the kept weights are still the best-accuracy ones.
    The final model is the best-validation one (earliest on ties): its weights are what the
    finished checkpoint holds and its test accuracy is the run's.  Like
    ``precision``, both fields are left out of the config dict at their defaults.

    ``step``: ``fast`` (default) or ``reference`` -- the training step's forward and optimiser
    (see :mod:`.train`): the CPU fast path (:mod:`posenc.empirical.fast`: packed forward, fused
    AdamW) or the model's own readable forward and torch's default AdamW.  Both compute the same
    step up to float rounding, which training amplifies, so ``reference`` is part of the run id;
    at ``fast`` the field is left out of the config dict (run ids and stores stay valid).
    """

    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    seed: int = 0
    epochs: int = 6
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 1e-5
    betas: tuple[float, float] = (0.9, 0.98)
    warmup_frac: float = 0.06
    grad_clip: Optional[float] = 1.0
    eval_batch_size: int = 512
    num_threads: Optional[int] = None
    device: str = "auto"
    preset: str = "custom"
    precision: str = "float32"
    patience: Optional[int] = None
    val_frac: float = 0.1
    step: str = "fast"
    stop_on: str = "accuracy"

    def __post_init__(self) -> None:
        _check(is_int(self.seed)
               and 0 <= self.seed < 2**63, f"seed must be an integer in 0..2^63-1; got {self.seed!r}")
        for f in ("epochs", "batch_size", "eval_batch_size"):
            _pos_int(f, getattr(self, f))
        _check(_finite(self.lr) and self.lr > 0, f"lr must be a finite number > 0; got {self.lr!r}")
        _check(_finite(self.weight_decay) and self.weight_decay >= 0,
               f"weight_decay must be a finite number >= 0; got {self.weight_decay!r}")
        _check(self.grad_clip is None or (_finite(self.grad_clip) and self.grad_clip > 0),
               f"grad_clip must be a finite number > 0 (or null: no clipping); "
               f"got {self.grad_clip!r}")
        _check(len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas),
               f"betas must be two numbers in [0, 1); got {self.betas!r}")
        _check(0 <= self.warmup_frac < 1, f"warmup_frac must be in [0, 1); got {self.warmup_frac!r}")
        if self.num_threads is not None:
            _pos_int("num_threads", self.num_threads)
        _check(self.device in ("auto", "cpu", "cuda"),
               f"device must be auto, cpu or cuda; got {self.device!r}")
        _check(self.precision in PRECISIONS,
               f"precision must be {' or '.join(PRECISIONS)}; got {self.precision!r}")
        if self.patience is not None:
            _pos_int("patience", self.patience)
        _check(isinstance(self.val_frac, (int, float)) and 0 < self.val_frac < 1,
               f"val_frac must be in (0, 1); got {self.val_frac!r}")
        _check(self.step in STEPS, f"step must be {' or '.join(STEPS)}; got {self.step!r}")
        _check(self.stop_on in STOP_ON,
               f"stop_on must be {' or '.join(STOP_ON)}; got {self.stop_on!r}")
        _check(self.stop_on == "accuracy" or self.patience is not None,
               f"stop_on {self.stop_on} is an early-stopping rule: give patience too")
        # refused here, when the config is made (a sweep validates every config before it runs
        # one), not first when the model is built (the Transformer checks it too)
        _check(self.model.code != "paper" or self.task.n_classes <= self.task.vocab_size,
               f"paper-code mode classifies over the vocabulary ({self.task.vocab_size} tokens), "
               f"which has fewer entries than the {self.task.n_classes} classes; raise "
               f"task.vocab_size (e.g. --set task.vocab_size={self.task.n_classes})")

    @property
    def early_stopping(self) -> bool:
        """Whether a validation split is carved from the training data and training stops early."""
        return self.patience is not None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key, default in _LEFT_OUT_AT_DEFAULT.items():
            if data[key] == default:
                del data[key]
        if data["model"]["code"] == "posenc":  # configs written before the field stay valid
            del data["model"]["code"]
        if data["task"]["sampler"] == "clean":  # (as code)
            del data["task"]["sampler"]
        if data["task"]["pad_to"] is None:  # (as code and sampler)
            del data["task"]["pad_to"]
        if data["task"]["trigger_ids"] is None:  # (as code and sampler)
            del data["task"]["trigger_ids"]
        else:
            data["task"]["trigger_ids"] = list(data["task"]["trigger_ids"])
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def run_id(self) -> str:
        """A short content address of the resolved config (device and threads excluded)."""
        data = self.to_dict()
        for key in ("device", "num_threads", "eval_batch_size"):
            data.pop(key)
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]
        pe = "".join(c if c.isalnum() else "-" for c in self.model.pe).strip("-")
        return f"{self.task.name}_{pe}_{self.preset}_s{self.seed}_{digest}"

    def replace(self, **changes: Any) -> "TrainConfig":
        return dataclasses.replace(self, **changes)


#: Fields written into the config dict only when they differ from their default, so that run ids
#: and stores written before the field existed stay valid.
_LEFT_OUT_AT_DEFAULT = {"precision": "float32", "patience": None, "val_frac": 0.1, "step": "fast",
                        "stop_on": "accuracy"}


def preset(name: str, task: str = "distance", pe: str | PESpec = "rope", seed: int = 0,
           **overrides: Any) -> TrainConfig:
    """The configuration of training preset ``name`` (its record:
    :func:`posenc.training_presets.training_preset`) for a task and PE (a spec string or a
    catalogue PESpec: :class:`ModelConfig`)."""
    record = training_preset(name)
    if task not in TASKS:
        raise PosencError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    cfg = TrainConfig(task=TaskConfig(name=task, **record.task[task]),
                      model=ModelConfig(pe=pe, **record.model), seed=seed, preset=name,
                      **record.train)
    return apply_overrides(cfg, overrides) if overrides else cfg


def paper_code_task_fields_for(preset: str, cfg: Any, overrides: dict[str, Any]) -> dict[str, Any]:
    """:func:`paper_code_task_fields` of ``cfg``'s task as the user's ``overrides`` leave it
    (a ``task.seq_len`` of the user's own decides the padding: a count task of 200 tokens is
    not padded to 128), or of ``cfg``'s task where those overrides alone do not make a config."""
    try:
        task = apply_overrides(cfg, overrides).task if overrides else cfg.task
    except PosencError:
        task = cfg.task
    return paper_code_task_fields(preset, task)


def apply_overrides(cfg: TrainConfig, overrides: dict[str, Any]) -> TrainConfig:
    """Replace fields by dotted keys, e.g. ``{"model.dropout": 0.1, "epochs": 2}``."""
    data = dataclasses.asdict(cfg)  # every field, also those to_dict leaves out at their default
    for key, value in overrides.items():
        parts = key.split(".")
        target = data
        for p in parts[:-1]:
            if not isinstance(target.get(p), dict):
                raise PosencError(f"unknown config key {key!r}")
            target = target[p]
        if parts[-1] not in target:
            raise PosencError(f"unknown config key {key!r}")
        target[parts[-1]] = value
    model = data.get("model")
    same_pe = isinstance(model, dict) and model.get("pe") == cfg.model.pe
    return _from_dict(data, cfg.model.spec if same_pe else None)  # the PE stays parsed


def config_from_dict(data: Any) -> TrainConfig:
    """Inverse of :meth:`TrainConfig.to_dict`; unknown or mistyped keys raise PosencError."""
    return _from_dict(data, None)


def _from_dict(data: Any, spec: Optional[PESpec]) -> TrainConfig:
    """:func:`config_from_dict`, with ``spec`` (not None) the parse of the dict's ``model.pe``."""
    if not isinstance(data, dict):
        raise PosencError(f"a run config must be a JSON object; got {type(data).__name__}")
    kwargs = {}
    for key, value in _fields(TrainConfig, data, "").items():
        if key == "task":
            value = _build(TaskConfig, value, "task.")
        elif key == "model":
            value = _build(ModelConfig, value, "model.", parsed=spec)
        kwargs[key] = value
    return TrainConfig(**kwargs)


#: Named specs (``paper-*``) whose meaning changed in named specs version 2: a stored run
#: config that holds one of these bare names was trained under the old meaning.
CHANGED_NAMED_SPECS = {
    "paper-rope": "rope:add_absolute=true", "paper-absolute-rope": "hybrid:additive=sinusoidal",
    "paper-alibi": "alibi:slopes=exp", "paper-relative": "relative_bias:mode=table",
    "paper-mla": "mla:absolute=learned",
}


def stored_config(data: Any, where: str) -> TrainConfig:
    """:func:`config_from_dict` for a config read back from a run folder or a store.

    New configs record the resolved spec of a named spec (``paper-*``); a stored config that
    holds a bare name whose meaning has changed since (:data:`CHANGED_NAMED_SPECS`) was trained under
    the old meaning, and is refused rather than loaded as the new model."""
    pe = data.get("model", {}).get("pe") if isinstance(data, dict) and \
        isinstance(data.get("model"), dict) else None
    if isinstance(pe, str) and pe.strip() in CHANGED_NAMED_SPECS:
        old = CHANGED_NAMED_SPECS[pe.strip()]
        raise PosencError(f"{where} was made with named spec {pe!r} before posenc's paper-* "
                          f"specs were corrected to the paper's code (named specs version 2); it "
                          f"meant {old!r} then, and the name is another model now: retrain it, "
                          f"or edit its model.pe to {old!r} in both config and checkpoint")
    return config_from_dict(data)


def load_config(path: str) -> TrainConfig:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise PosencError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise PosencError(f"config {path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except UnicodeDecodeError:
        raise PosencError(f"config {path} is not UTF-8 text") from None
    return config_from_dict(data)


def _build(cls: type, data: Any, prefix: str, **extra: Any) -> Any:
    if not isinstance(data, dict):
        raise PosencError(f"config section {prefix.rstrip('.')!r} must be an object")
    return cls(**_fields(cls, data, prefix), **extra)


def _fields(cls: type, data: dict, prefix: str) -> dict[str, Any]:
    hints = field_hints(cls)
    names = list(hints)
    out = {}
    for key, value in data.items():
        if key not in names:
            raise PosencError(f"unknown config key {prefix + key!r}; known: {', '.join(names)}")
        out[key] = coerce(hints[key], value, f"config key {prefix + key!r}", text=False)
    return out


def _finite(value: Any) -> bool:
    """A real number that is neither infinite nor NaN (bools are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


#: Config keys an override (``--set``, ``overrides=``) may not set: what a run *is* -- its task,
#: PE, seed, preset and model code -- which the command's own arguments choose (``--task``,
#: ``--pe``, ``--seed``, ``--preset``, ``--paper-code``; a sweep's role).  Setting them through an
#: override would relabel the run: a reproduce role "rope" training ALiBi, a distance run that is
#: a count run.
IDENTITY_KEYS = {"task": "the task (--task, --tasks)", "task.name": "the task (--task, --tasks)",
                 "model": "the model (--pe, --roles)", "model.pe": "the PE (--pe, --roles)",
                 "model.code": "the model code (--paper-code)",
                 "seed": "the seed (--seed, --first-seed)", "preset": "the preset (--preset)"}


def check_overrides(overrides: Any, where: str = "--set") -> dict[str, Any]:
    """``overrides`` as a dict of dotted config keys, refusing what :data:`IDENTITY_KEYS` names
    (one line naming the key and the argument that chooses it)."""
    if not isinstance(overrides, dict):
        raise PosencError(f"{where} must be a mapping of config keys to values; got "
                          f"{type(overrides).__name__}")
    for key in overrides:
        if not isinstance(key, str):
            raise PosencError(f"{where}: config keys are dotted names; got {key!r}")
        _known_key(key)
        if key.strip() in IDENTITY_KEYS:
            raise PosencError(f"{where} {key}=... would change what the run is: set "
                              f"{IDENTITY_KEYS[key.strip()]} with its own argument")
    return dict(overrides)


def _known_key(key: str) -> None:
    """Refuse a dotted key that names no field of :class:`TrainConfig` (apply_overrides' rule)."""
    cls: Any = TrainConfig
    for part in key.split("."):
        names = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) \
            else {}
        if part not in names:
            raise PosencError(f"unknown config key {key!r}")
        cls = {"task": TaskConfig, "model": ModelConfig}.get(part) if cls is TrainConfig else None


def _check(ok: bool, msg: str) -> None:
    if not ok:
        raise PosencError(msg)


def check_threads(value: Any, flag: str = "--threads") -> None:
    """The one rule for a thread count, in every command: an integer >= 1 (0 is refused, not
    read as "all cores")."""
    _pos_int(flag, value)


#: Upper bounds of the integer fields (posenc.limits for the shared ones); the rest of a config's
#: cost is checked against the available memory by :func:`memory_estimate` before training.
_LIMITS = {"task.n_samples": 1_000_000, "task.vocab_size": 1_000_000,
           "task.seq_len": 100_000, "model.d_model": MAX_WIDTH, "model.n_heads": MAX_HEADS,
           "model.n_layers": 1_024, "model.d_ff": 4 * MAX_WIDTH, "epochs": 1_000_000,
           "batch_size": 10_000_000, "eval_batch_size": 10_000_000, "num_threads": 4_096,
           "--threads": 4_096}


def _pos_int(name: str, value: Any) -> None:
    _check(is_int(value) and value >= 1,
           f"{name} must be a positive integer; got {value!r}")
    limit = _LIMITS.get(name, 100_000)                          # task lengths and counts
    _check(value <= limit, f"{name}={value} exceeds the limit {limit}")


def memory_estimate(cfg: "TrainConfig") -> float:
    """A lower estimate of the peak bytes of training ``cfg`` (sequences of ``task.length``
    tokens), to refuse only what surely does not fit: the data (int64 tokens), float32
    parameters with gradients and two Adam moments, and one batch's attention maps kept for the
    backward pass."""
    m, t = cfg.model, cfg.task
    seq_len = t.length
    params = m.n_layers * (4 * m.d_model ** 2 + 2 * m.d_model * m.d_ff) + \
        (t.vocab_size + seq_len) * m.d_model
    maps = cfg.batch_size * m.n_layers * m.n_heads * seq_len ** 2
    return 8.0 * t.n_samples * seq_len + 16.0 * params + 4.0 * maps
