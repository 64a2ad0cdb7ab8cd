"""The training loop's wiring, checked directly (not through "it learns"), and early stopping.

Each wiring test spies on what ``train()`` really does: the learning rate on the optimiser at
every step, the mode of the model in every forward pass, and the gradients handed to every
optimiser step.  Each fails on one realistic bug that the learning test does not catch: warm-up
set to 0, evaluation in training mode (dropout on), gradients accumulating without ``zero_grad``.
"""

import copy
import importlib
import json

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch.optim.optimizer import register_optimizer_step_pre_hook

from posenc.empirical import load_run
from posenc.empirical.config import ModelConfig, TaskConfig, TrainConfig
from posenc.empirical.training.runs import CHECKPOINT, RESULT, dataset_for
from posenc.empirical.tasks import Split, TaskData, carve_validation
from posenc.empirical.training.schedule import lr_factor
from posenc.empirical.training.train import best_index, should_stop, train
from posenc.errors import PosencError

train_mod = importlib.import_module("posenc.empirical.training.train")  # the package re-exports train()


def tiny(**kw) -> TrainConfig:
    task = TaskConfig(n_samples=500, max_left=2, max_gap=5, max_right=2, vocab_size=10)
    model = ModelConfig(pe="rope", d_model=16, n_heads=2, n_layers=1, d_ff=16,
                        dropout=kw.pop("dropout", 0.0))
    return TrainConfig(task=task, model=model, **{"epochs": 3, "batch_size": 50, "lr": 3e-3, **kw})


@pytest.fixture
def spy_model(monkeypatch):
    """Every model train() builds, in order."""
    built = []

    def model_for(config, *device):
        m = real(config, *device)
        built.append(m)
        return m
    real = train_mod.model_for
    monkeypatch.setattr(train_mod, "model_for", model_for)
    return built


@pytest.fixture
def step_hook():
    handles = []

    def register(fn):
        handles.append(register_optimizer_step_pre_hook(lambda opt, args, kwargs: fn(opt)))
    yield register
    for h in handles:
        h.remove()


# ---------------------------------------------------------------------------------------- wiring

def test_the_learning_rate_train_applies_is_the_warmup_cosine_schedule(tmp_path, step_hook):
    cfg = tiny(warmup_frac=0.3)  # 7 steps per epoch, 21 in all: 6 warm-up steps
    lrs = []
    step_hook(lambda opt: lrs.append(opt.param_groups[0]["lr"]))
    train(cfg, tmp_path / "r")
    total = 3 * 7
    warmup = round(0.3 * total)
    assert len(lrs) == total
    assert lrs == pytest.approx([cfg.lr * lr_factor(s, total, warmup) for s in range(total)],
                                rel=1e-12)
    # independently of lr_factor: a linear rise from lr/warmup to lr, then a decay
    assert lrs[0] == pytest.approx(cfg.lr / warmup) and lrs[warmup - 1] == pytest.approx(cfg.lr)
    assert all(a < b for a, b in zip(lrs[:warmup - 1], lrs[1:warmup]))
    assert all(a > b for a, b in zip(lrs[warmup:-1], lrs[warmup + 1:]))


def test_evaluation_runs_in_eval_mode_and_training_in_train_mode(tmp_path, spy_model):
    seen = []

    def hook(module, args):
        seen.append((torch.is_grad_enabled(), [m.training for m in module.modules()]))
    cfg = tiny(dropout=0.3, epochs=2)
    real = train_mod.model_for

    def hooked(config, *device):
        m = real(config, *device)
        m.register_forward_pre_hook(hook)
        return m
    train_mod.model_for = hooked
    try:
        res = train(cfg, tmp_path / "r")
    finally:
        train_mod.model_for = real
    grad = [modes for g, modes in seen if g]
    nograd = [modes for g, modes in seen if not g]
    assert len(grad) == 2 * 7 and len(nograd) == 2  # 7 steps an epoch, one test pass an epoch
    assert all(all(modes) for modes in grad)  # dropout on while training
    assert not any(any(modes) for modes in nograd)  # and off in every evaluation
    # the reported accuracy is the eval-mode accuracy of the saved weights (same batching)
    run = load_run(tmp_path / "r")
    test = dataset_for(cfg).test
    with torch.no_grad():
        correct = sum(int((run.model(test.tokens[s:s + cfg.eval_batch_size]).argmax(-1)
                           == test.labels[s:s + cfg.eval_batch_size]).sum())
                      for s in range(0, len(test), cfg.eval_batch_size))
    assert res.final_test_acc == correct / len(test)


def test_each_step_uses_the_gradient_of_its_own_batch_alone(tmp_path, spy_model, step_hook):
    """The gradient an optimiser step receives equals a fresh backward of that step's batch on a
    copy of the model (dropout 0 and no clipping, so nothing else touches it)."""
    cfg = tiny(grad_clip=None, epochs=2)
    split = dataset_for(cfg)
    label_of = {tuple(r.tolist()): int(y) for r, y in zip(split.train.tokens, split.train.labels)}
    batches, checked = [], []

    def capture(module, args):
        if torch.is_grad_enabled() and module is spy_model[0]:
            batches.append(args[0].detach().clone())

    def compare(opt):
        model = spy_model[0]
        tokens = batches[-1]
        labels = torch.tensor([label_of[tuple(r.tolist())] for r in tokens])
        ref = copy.deepcopy(model)
        ref._forward_pre_hooks.clear()
        ref.zero_grad(set_to_none=True)
        F.cross_entropy(ref(tokens).float(), labels).backward()
        # same float32 kernels on the same inputs: equal up to reduction-order rounding
        checked.append(all(torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-7)
                           for p, q in zip(model.parameters(), ref.parameters())))

    orig = train_mod.model_for

    def hooked(config, *device):
        m = orig(config, *device)
        m.register_forward_pre_hook(capture)
        return m
    train_mod.model_for = hooked
    step_hook(compare)
    try:
        train(cfg, tmp_path / "r")
    finally:
        train_mod.model_for = orig
    assert len(checked) == 14 and all(checked), checked


# -------------------------------------------------------------------------------- early stopping

@given(st.lists(st.integers(0, 5), min_size=1, max_size=30), st.integers(1, 6))
def test_should_stop_matches_a_reference_loop(curve, patience):
    curve = [v / 5 for v in curve]  # accuracies 0, 0.2, ..., 1.0 (1.0: perfect)
    best, since = curve[0], 0
    expected = []
    for v in curve[1:]:
        if v > best:
            best, since = v, 0
        else:
            since += 1
        expected.append(since >= patience or best >= 1.0)
    got = [should_stop(curve[:i + 1], patience) for i in range(1, len(curve))]
    assert got == expected
    assert curve[best_index(curve)] == max(curve) and max(curve) not in curve[:best_index(curve)]


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=30),
       st.integers(1, 6))
def test_should_stop_on_accuracy_or_loss_matches_a_reference_loop(curve, patience):
    """stop_on = accuracy_or_loss: the count of evaluations without progress restarts when the
    accuracy rises above its best or the loss falls below its lowest (ties are no progress)."""
    accs = [a / 5 for a, _ in curve]  # 0 .. 0.8: never perfect
    losses = [float(v) for _, v in curve]
    best, low, since = accs[0], losses[0], 0
    expected = []
    for a, v in zip(accs[1:], losses[1:]):
        if a > best or v < low:
            since = 0
        else:
            since += 1
        best, low = max(best, a), min(low, v)
        expected.append(since >= patience)
    got = [should_stop(accs[:i + 1], patience, losses[:i + 1]) for i in range(1, len(accs))]
    assert got == expected
    # the accuracy-only rule never stops later: its count of no progress is never smaller
    for i in range(1, len(accs)):
        assert should_stop(accs[:i + 1], patience) or not should_stop(accs[:i + 1], patience,
                                                                       losses[:i + 1])


def test_stop_on_loss_trains_on_while_the_loss_falls_and_keeps_the_best_accuracy(tmp_path,
                                                                                 monkeypatch):
    """The slow start of the quick preset's calibration: the accuracy stalls on a small
    validation split while the loss falls.  Stopping on accuracy alone ends the run after
    epoch 5; stopping on accuracy or loss goes on until epoch 9 (the loss's last fall was at
    epoch 6), and both keep the weights of the best accuracy."""
    curve = [0.1, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]
    losses = [3.0, 2.9, 2.8, 2.7, 2.6, 2.5, 2.6, 2.6, 2.5, 2.7]
    out, unscripted = {}, train_mod.evaluate
    for stop_on in ("accuracy", "accuracy_or_loss"):
        monkeypatch.setattr(train_mod, "evaluate", unscripted)
        cfg = tiny(epochs=10, patience=3, stop_on=stop_on)
        _, val = carve_validation(dataset_for(cfg).train, cfg.val_frac, cfg.seed)
        snaps = []
        scripted_val(monkeypatch, len(val), curve, snaps, losses)
        res = train(cfg, tmp_path / stop_on)
        out[stop_on] = res.early_stopping
        final = load_run(tmp_path / stop_on).model.state_dict()
        assert all(torch.equal(final[k], snaps[1][k]) for k in final)  # epoch 2: best accuracy
    assert out["accuracy"]["stopped_epoch"] == 5 and out["accuracy"]["fired"]
    assert out["accuracy_or_loss"]["stopped_epoch"] == 9 and out["accuracy_or_loss"]["fired"]
    assert out["accuracy_or_loss"]["stop_on"] == "accuracy_or_loss" and "stop_on" not in out["accuracy"]
    assert out["accuracy"]["best_epoch"] == out["accuracy_or_loss"]["best_epoch"] == 2


def test_stop_on_is_checked_and_left_out_of_the_config_at_its_default():
    with pytest.raises(PosencError, match="stop_on must be accuracy or accuracy_or_loss"):
        tiny(stop_on="loss", patience=2)
    with pytest.raises(PosencError, match="stop_on accuracy_or_loss is an early-stopping rule"):
        tiny(stop_on="accuracy_or_loss")  # without patience it would change the id, not training
    assert "stop_on" not in tiny().to_dict()
    lossy = tiny(stop_on="accuracy_or_loss", patience=2)
    assert lossy.to_dict()["stop_on"] == "accuracy_or_loss"
    assert lossy.run_id() != tiny(patience=2).run_id()


def test_a_non_finite_validation_loss_is_no_progress():
    """A NaN or infinite loss never counts as the best: a NaN first loss must not switch the
    loss arm off (it did: every later loss compared with NaN is not lower)."""
    nan, inf = float("nan"), float("inf")
    accs = [0.1, 0.2, 0.2, 0.2]
    assert not should_stop(accs, 2, [nan, 3.0, 2.0, 1.0])  # the loss still falls
    assert not should_stop(accs, 2, [4.0, 3.0, 2.0, 1.0])
    assert should_stop(accs, 2, [1.0, nan, nan, nan])  # non-finite after the best: no progress
    assert should_stop(accs, 2, [1.0, 2.0, inf, nan])
    assert should_stop(accs, 2, [nan] * 4) == should_stop(accs, 2)  # the accuracy arm alone


def test_a_perfect_validation_accuracy_stops_at_once_with_the_same_model(tmp_path, monkeypatch):
    """Waiting ``patience`` epochs after a perfect validation accuracy keeps the same weights
    (only a strictly higher accuracy replaces them): the run stops at once, with the model and
    test accuracy that waiting would have given (checked against a copy of the old rule)."""
    cfg = tiny(epochs=10, patience=3)
    split = dataset_for(cfg)
    _, val = carve_validation(split.train, cfg.val_frac, cfg.seed)
    curve = [0.2, 0.6, 1.0, 0.9, 1.0, 1.0, 0.8, 1.0, 1.0, 1.0]
    unscripted = train_mod.evaluate
    scripted_val(monkeypatch, len(val), curve, [])
    fast = train(cfg, tmp_path / "fast")
    assert fast.early_stopping["stopped_epoch"] == fast.early_stopping["best_epoch"] == 3
    assert fast.early_stopping["stopped_early"]
    monkeypatch.setattr(train_mod, "should_stop", lambda v, p, losses=None: bool(v) and
                        len(v) - 1 - best_index(v) >= p)  # the rule without the perfect stop
    monkeypatch.setattr(train_mod, "evaluate", unscripted)
    scripted_val(monkeypatch, len(val), curve, [])
    slow = train(cfg, tmp_path / "slow")
    assert slow.early_stopping["stopped_epoch"] == 6 and slow.early_stopping["best_epoch"] == 3
    assert slow.final_test_acc == fast.final_test_acc
    a, b = (load_run(tmp_path / d).model.state_dict() for d in ("fast", "slow"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def scripted_val(monkeypatch, n_val, curve, snapshots, losses=None):
    """Replace the validation accuracy train() sees (the evaluation on ``n_val`` examples) by
    ``curve`` (one value per epoch), and its loss by ``losses`` where given, and keep a copy of
    the weights at each validation."""
    real = train_mod.evaluate

    def evaluate(model, data, *a, **k):
        loss, acc = real(model, data, *a, **k)
        if len(data) == n_val:
            snapshots.append({k2: v.clone() for k2, v in model.state_dict().items()})
            i = len(snapshots) - 1
            return (loss if losses is None else losses[i]), curve[i]
        return loss, acc
    monkeypatch.setattr(train_mod, "evaluate", evaluate)


def test_early_stopping_stops_on_a_scripted_validation_curve_and_keeps_the_best(tmp_path,
                                                                                 monkeypatch):
    cfg = tiny(epochs=10, patience=2)
    split = dataset_for(cfg)
    _, val = carve_validation(split.train, cfg.val_frac, cfg.seed)
    snaps = []
    assert len(val) != len(split.test)
    scripted_val(monkeypatch, len(val), [0.2, 0.5, 0.5, 0.7, 0.6, 0.7, 0.9, 0.9, 0.9, 0.9], snaps)
    res = train(cfg, tmp_path / "r")
    stop = res.early_stopping
    # best 0.7 at epoch 4; epochs 5 and 6 do not beat it (a tie is no improvement): stop after 6
    assert (stop["stopped_epoch"], stop["best_epoch"], stop["best_val_acc"]) == (6, 4, 0.7)
    assert stop["stopped_early"] and stop["stopped_step"] == 6 * 7 and stop["best_step"] == 4 * 7
    assert len(res.metrics) == 6 and len(snaps) == 6
    assert res.final_test_acc == res.metrics[3]["test_acc"]
    final = load_run(tmp_path / "r").model.state_dict()
    assert all(torch.equal(final[k], snaps[3][k]) for k in final)  # the best epoch's weights
    assert not all(torch.equal(final[k], snaps[5][k]) for k in final)
    summary = json.loads((tmp_path / "r" / RESULT).read_text())
    assert summary["early_stopping"] == stop and summary["final"]["epoch"] == 4


def test_early_stopping_never_reads_the_test_split(tmp_path, monkeypatch):
    cfg = tiny(epochs=12, patience=2, seed=3)
    clean = train(cfg, tmp_path / "clean")
    split = dataset_for(cfg)
    t = split.test
    # poison the test split: labels shifted by one class, so every test accuracy changes
    poisoned = TaskData(t.tokens, (t.labels + 1) % t.n_classes, t.lengths, t.n_classes)
    monkeypatch.setattr(train_mod, "dataset_for", lambda config: Split(split.train, poisoned))
    dirty = train(cfg, tmp_path / "dirty")
    # the test split is evaluated once, for the kept epoch
    kept = clean.early_stopping["best_epoch"] - 1
    assert [i for i, m in enumerate(clean.metrics) if "test_acc" in m] == [kept]
    assert dirty.metrics[kept]["test_acc"] != clean.metrics[kept]["test_acc"]
    strip = ("test_loss", "test_acc")
    assert [{k: v for k, v in m.items() if k not in strip} for m in dirty.metrics] == \
        [{k: v for k, v in m.items() if k not in strip} for m in clean.metrics]
    assert dirty.early_stopping == clean.early_stopping
    a, b = (load_run(tmp_path / d).model.state_dict() for d in ("clean", "dirty"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_early_stopping_evaluates_the_test_split_once_for_the_kept_weights(tmp_path,
                                                                          monkeypatch):
    cfg = tiny(epochs=10, patience=2)
    split = dataset_for(cfg)
    real, seen = train_mod.evaluate, []

    def evaluate(model, data, *a, **k):
        if len(data) == len(split.test):
            seen.append({k2: v.clone() for k2, v in model.state_dict().items()})
        return real(model, data, *a, **k)
    monkeypatch.setattr(train_mod, "evaluate", evaluate)
    res = train(cfg, tmp_path / "r")
    assert len(seen) == 1 and len(res.metrics) > 1
    kept = load_run(tmp_path / "r").model.state_dict()
    assert all(torch.equal(kept[k], seen[0][k]) for k in kept)
    assert res.final_test_acc == res.best_test_acc == res.metrics[
        res.early_stopping["best_epoch"] - 1]["test_acc"]
    # without early stopping every epoch's model is evaluated
    seen.clear()
    train(tiny(epochs=3), tmp_path / "plain")
    assert len(seen) == 3


def test_the_validation_split_is_carved_from_the_training_split():
    cfg = tiny(patience=1)
    split = dataset_for(cfg)
    keep, val = carve_validation(split.train, 0.2, 0)
    rows = lambda d: {tuple(r.tolist()) for r in d.tokens}  # noqa: E731
    assert len(keep) + len(val) == len(split.train) and abs(len(val) - 0.2 * len(split.train)) < 10
    assert rows(val) <= rows(split.train) and not rows(val) & rows(split.test)
    assert not rows(val) & rows(keep)  # duplicates stay on one side
    again = carve_validation(split.train, 0.2, 0)[1]
    assert torch.equal(again.tokens, val.tokens)


def test_early_stopping_is_deterministic_and_resumes_bit_identically(tmp_path):
    cfg = tiny(epochs=12, patience=2, dropout=0.1)
    full = train(cfg, tmp_path / "full")
    assert full.early_stopping["stopped_epoch"] < 12  # it does stop early on this task
    again = train(cfg, tmp_path / "again")
    assert again.metrics == full.metrics and again.early_stopping == full.early_stopping
    cut_at = full.early_stopping["best_step"] + 3  # after the best epoch, before the stop

    def interrupt(step, loss):
        if step == cut_at:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "cut", on_step=interrupt)
    assert not (tmp_path / "cut" / RESULT).exists() and (tmp_path / "cut" / CHECKPOINT).exists()
    resumed = train(cfg, tmp_path / "cut")
    assert resumed.metrics == full.metrics and resumed.early_stopping == full.early_stopping
    assert resumed.final_test_acc == full.final_test_acc
    a, b = (load_run(tmp_path / d).model.state_dict() for d in ("full", "cut"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_early_stopping_fields_are_left_out_at_their_defaults():
    base = tiny()
    assert "patience" not in base.to_dict() and "val_frac" not in base.to_dict()
    on = tiny(patience=3)
    assert on.to_dict()["patience"] == 3 and on.run_id() != base.run_id()
    from posenc.errors import PosencError
    with pytest.raises(PosencError, match="patience must be a positive integer"):
        tiny(patience=0)
    with pytest.raises(PosencError, match="val_frac must be in"):
        tiny(patience=2, val_frac=1.0)


def test_train_steps_with_the_fused_adamw(tmp_path, step_hook):
    """train() uses make_optimizer: torch's fused AdamW on a CPU, with the config's settings."""
    seen = []
    step_hook(lambda opt: seen.append(opt.defaults))
    cfg = tiny(epochs=1)
    train(cfg, tmp_path / "run")
    assert seen and all(d["fused"] is True and d["betas"] == cfg.betas
                        and d["weight_decay"] == cfg.weight_decay for d in seen)


def test_fused_adamw_follows_the_default_adamw():
    """The fused update is torch's default AdamW (a loop over parameters on a CPU) up to float32
    rounding: 30 steps on the same gradients stay within 1e-5 (weights O(1), lr 1e-2)."""
    from posenc.empirical.training.runs import model_for
    cfg = tiny(lr=1e-2)
    torch.manual_seed(0)
    a = model_for(cfg)
    b = copy.deepcopy(a)
    fused = train_mod.make_optimizer(a, cfg)
    plain = torch.optim.AdamW(b.parameters(), lr=cfg.lr, betas=cfg.betas,
                              weight_decay=cfg.weight_decay, foreach=False)
    data = dataset_for(cfg).train
    for step in range(30):
        tok, y = data.tokens[step * 8:(step + 1) * 8], data.labels[step * 8:(step + 1) * 8]
        for model, opt in ((a, fused), (b, plain)):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(tok), y).backward()
        for pa, pb in zip(a.parameters(), b.parameters()):
            pa.grad.copy_(pb.grad)  # the same gradients: only the update rule is compared
        fused.step()
        plain.step()
    moved = max((pa - pb).abs().max().item() for pa, pb in zip(a.parameters(), b.parameters()))
    assert moved < 1e-5
    torch.manual_seed(0)
    start = model_for(cfg)  # the weights did move: the comparison is not vacuous
    assert max((pa - p0).abs().max().item() for pa, p0 in zip(a.parameters(), start.parameters())) > 1e-2
