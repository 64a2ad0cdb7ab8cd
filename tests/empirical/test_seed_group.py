"""Seed-batched training (posenc.empirical.training.seed_group): each seed of a stacked group is its single
run -- the same initialisation, the same loss and gradients at the same weights and batch
(float64, 1e-10), training that tracks S single runs, clipping by each seed's own norm (a shared
norm is caught), and early stopping per seed with its best weights kept."""

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from posenc.empirical.training import seed_group
from posenc.empirical.config import preset
from posenc.empirical.training.runs import dataset_for, model_for
from posenc.empirical.training.seed_group import (SeedGroup, clip_per_seed, clip_shared,
                                         epoch_order, train_group)
from posenc.empirical.tasks import carve_validation
from posenc.empirical.training.train import best_index, lr_factor, should_stop
from posenc.encodings import all_entries
from posenc.errors import PosencError

ENTRIES = list(all_entries())
SEEDS = (0, 1, 2)


def _pe(name, spec):
    return name if name.startswith("paper") else spec.to_string()


def _configs(pe="rope", seeds=SEEDS, **overrides):
    return [preset("smoke", pe=pe, seed=s, **overrides) for s in seeds]


def _single(config, dtype=torch.float64):
    """Seed ``config.seed``'s single model, as train.py builds it, on the padded reference forward."""
    torch.manual_seed(config.seed)
    m = model_for(config).to(dtype)
    if hasattr(m, "pack_tokens"):
        m.pack_tokens = False  # the padded reference forward (the packed one equals it up to rounding)
    return m


def _batches(configs, B=6, offset=3):
    """Each seed its own batch from its own data set (a different slice per seed)."""
    toks, labs = [], []
    for i, c in enumerate(configs):
        d = dataset_for(c).train
        idx = torch.arange(B) * 5 + offset + 11 * i
        toks.append(d.tokens[idx])
        labs.append(d.labels[idx])
    return torch.stack(toks), torch.stack(labs)


def _group_of(models, configs, dtype=torch.float64):
    """A float64 group holding copies of ``models``' weights (built, then loaded: the models stay)."""
    g = SeedGroup(configs, dtype=dtype)
    for s, m in enumerate(models):
        g.load_seed(s, m.state_dict())
    return g


# ------------------------------------------------------------------ (a) loss and gradients


CASES = [(_pe(n, s), {}) for n, s in ENTRIES] + [
    ("rope", {"model.causal": True}), ("alibi", {"model.causal": True}),
    ("rope", {"model.kv_source": "input"}), ("mla", {"model.kv_source": "input"}),
    ("relative_bias:mode=table", {"model.mask_padding": False}),
    ("sinusoidal", {"model.activation": "relu"}),
]


@pytest.mark.parametrize("pe,overrides", CASES, ids=[p + "".join(f",{k}={v}" for k, v in o.items())
                                                      for p, o in CASES])
def test_each_seed_has_its_single_models_loss_and_gradients(pe, overrides):
    configs = _configs(pe, **overrides)
    models = [_single(c) for c in configs]
    g = _group_of(models, configs)
    tok, lab = _batches(configs)
    losses, _ = g.loss(tok, lab)
    g.backward(losses)
    for s, m in enumerate(models):
        loss = F.cross_entropy(m(tok[s]), lab[s])
        loss.backward()
        assert abs(loss.item() - losses[s].item()) < 1e-10
        for name, p in m.named_parameters():
            torch.testing.assert_close(g.params[name].grad[s], p.grad, atol=1e-10, rtol=0,
                                       msg=lambda msg: f"seed {s} {name}: {msg}")
    # the gradients landed in the flat (S, P) buffer the per-seed clip and step read
    assert g.params["embed.weight"].grad.data_ptr() == g.grad.data_ptr()


@pytest.mark.parametrize("pe", ["paper-rope", "paper-mla", "paper-relative"])
def test_paper_code_mode_gradients(pe):
    """The paper code's models (code='paper': K, V from the raw input, biased Q/K/V, ReLU, ...)."""
    from posenc.empirical.paper_specs import paper_code_fields
    from posenc.encodings import parse_spec
    fields = paper_code_fields(parse_spec(preset("smoke", pe=pe).model.pe))
    test_each_seed_has_its_single_models_loss_and_gradients(pe, fields)


def test_filler_rows_of_weight_zero_leave_the_gradients_alone():
    """A seed with a short batch is filled up with weight-0 copies: its gradients are those of its
    real rows alone."""
    configs = _configs("alibi")
    models = [_single(c) for c in configs]
    g = _group_of(models, configs)
    tok, lab = _batches(configs)
    w = torch.ones(tok.shape[:2], dtype=torch.float64)
    w[1, 4:] = 0
    losses, _ = g.loss(tok, lab, w)
    g.backward(losses)
    loss = F.cross_entropy(models[1](tok[1, :4]), lab[1, :4])
    loss.backward()
    assert abs(loss.item() - losses[1].item()) < 1e-10
    for name, p in models[1].named_parameters():
        torch.testing.assert_close(g.params[name].grad[1], p.grad, atol=1e-10, rtol=0)


# ------------------------------------------------------------------ (e) initialisation, unstack


def test_each_seeds_slice_is_its_single_models_initialisation():
    configs = _configs("relative_bias:mode=table", seeds=(0, 5, 17))
    g = SeedGroup(configs)
    for s, c in enumerate(configs):
        torch.manual_seed(c.seed)
        own = model_for(c).state_dict()
        got = g.unstack(s)
        assert got.keys() == own.keys()
        for k in own:
            assert torch.equal(got[k], own[k]), (c.seed, k)
    assert not torch.equal(g.unstack(0)["embed.weight"], g.unstack(1)["embed.weight"])


def test_unstacked_model_gives_the_groups_logits():
    configs = _configs("mla")
    g = SeedGroup(configs, dtype=torch.float64)
    tok, _ = _batches(configs)
    with torch.no_grad():
        logits = g(tok)
        for s in range(len(configs)):
            m = g.single_model(s)
            torch.testing.assert_close(m(tok[s]), logits[s], atol=1e-10, rtol=0)


def test_configs_must_differ_only_in_seed():
    with pytest.raises(PosencError, match="only in their seed"):
        SeedGroup([preset("smoke", pe="rope", seed=0), preset("smoke", pe="alibi", seed=1)])
    with pytest.raises(PosencError, match="distinct"):
        SeedGroup([preset("smoke", seed=1), preset("smoke", seed=1)])


# ------------------------------------------------------------------ (b) training tracks single runs


def _reference_runs(configs, dtype=torch.float64):
    """train.py's loop for each config on its own, in float64 with torch's AdamW (what train.py
    uses off float32): data, validation carve, order, lr, per-run clipping, early stopping with
    the best weights kept.  Returns (metrics, final state dict, pre-clip norms) per run; the
    metrics hold train.py's train_loss, train_acc, lr and val_acc per epoch, and test_acc (every
    epoch without early stopping, else the kept epoch's, of the kept weights)."""
    out = []
    for c in configs:
        split = dataset_for(c)
        tr, val = split.train, None
        if c.early_stopping:
            tr, val = carve_validation(tr, c.val_frac, c.seed)
        m = _single(c, dtype)
        opt = torch.optim.AdamW(m.parameters(), lr=c.lr, betas=c.betas, weight_decay=c.weight_decay)
        n = len(tr)
        spe = math.ceil(n / c.batch_size)
        total = spe * c.epochs
        warmup = int(round(c.warmup_frac * total))
        metrics, best, norms = [], None, []
        def acc(data):
            with torch.no_grad():
                return float((m(data.tokens).argmax(-1) == data.labels).double().mean())
        for epoch in range(c.epochs):
            if val is not None and should_stop([x["val_acc"] for x in metrics], c.patience):
                break
            order = epoch_order(c.seed, epoch, n)
            loss_sum, correct = 0.0, 0
            for b in range(spe):
                for group in opt.param_groups:
                    group["lr"] = c.lr * lr_factor(epoch * spe + b, total, warmup)
                idx = order[b * c.batch_size:(b + 1) * c.batch_size]
                logits = m(tr.tokens[idx])
                loss = F.cross_entropy(logits, tr.labels[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                norms.append(float(torch.nn.utils.clip_grad_norm_(m.parameters(), c.grad_clip)))
                opt.step()
                loss_sum += float(loss.detach()) * len(idx)
                correct += int((logits.argmax(-1) == tr.labels[idx]).sum())
            entry = {"epoch": epoch + 1, "train_loss": loss_sum / n, "train_acc": correct / n,
                     "lr": opt.param_groups[0]["lr"]}
            if val is not None:
                entry["val_acc"] = acc(val)
                metrics.append(entry)
                if best_index([x["val_acc"] for x in metrics]) == len(metrics) - 1:
                    best = {k: v.detach().clone() for k, v in m.state_dict().items()}
            else:
                entry["test_acc"] = acc(split.test)
                metrics.append(entry)
        if best is not None:  # the test split once, for the kept weights
            m.load_state_dict(best)
            metrics[best_index([x["val_acc"] for x in metrics])]["test_acc"] = acc(split.test)
        out.append((metrics, best if best is not None else m.state_dict(), norms))
    return out


def _small(pe="rope", seeds=SEEDS, **kw):
    """~50 steps: 1,200 examples (840 training), batch 32, 2 epochs; lr high enough that
    clipping at 1.0 acts on some steps and not on others."""
    base = {"task.n_samples": 1200, "batch_size": 32, "epochs": 2, "lr": 1e-2, "grad_clip": 1.0}
    return _configs(pe, seeds=seeds, **{**base, **kw})


# Float64 rounding is ~1e-16 per operation; the group and torch's AdamW order a few operations
# differently (a fused vs a for-loop AdamW, a norm of the flat row vs a norm of per-parameter
# norms, batched vs single GEMMs), and ~50 Adam steps amplify such differences by at most a few
# orders of magnitude in this regime (|update| <= lr per element, no division by a near-zero
# sqrt(v) while eps = 1e-8 is far above 1e-16).  1e-9 leaves that margin and is still ~1e7 below
# one update (lr 1e-2): any real difference (a seed's wrong batch, clip, lr or step) exceeds it.
TRACK_TOL = 1e-9


def _track(configs):
    runs = train_group(configs, dtype=torch.float64, record_norms=True)
    refs = _reference_runs(configs)
    worst = 0.0
    for run, (metrics, state, norms) in zip(runs, refs):
        assert len(run.metrics) == len(metrics)
        assert len(run.norms) == len(norms)
        for got, want in zip(run.metrics, metrics):  # each seed's own records, value by value
            assert set(want) <= set(got), (sorted(want), sorted(got))
            assert got["lr"] == pytest.approx(want["lr"], rel=1e-12)
            for key in ("train_acc", "val_acc", "test_acc"):  # counts of argmax hits: exact
                assert got.get(key) == want.get(key), (key, got, want)
            worst = max(worst, abs(got["train_loss"] - want["train_loss"]))
        worst = max(worst, max(abs(a - b) for a, b in zip(run.norms, norms)))
        for k, v in state.items():
            worst = max(worst, float((run.state_dict[k] - v).abs().max()))
    return runs, refs, worst


def _assert_tracks(configs):
    runs, refs, worst = _track(configs)
    assert worst < TRACK_TOL, worst
    return runs, refs


@pytest.mark.parametrize("pe", ["rope", "alibi", "mla"])
def test_fifty_steps_in_float64_track_the_single_runs(pe):
    configs = _small(pe)
    runs, refs = _assert_tracks(configs)
    steps = len(runs[0].norms)
    assert 50 <= steps <= 60
    # clipping acted on some steps and not on others, and the seeds' norms differ
    all_norms = [x for r in runs for x in r.norms]
    assert min(all_norms) < 1.0 < max(all_norms)
    assert runs[0].norms != runs[1].norms
    for r in runs:
        assert r.metrics[-1].keys() >= {"epoch", "step", "lr", "train_loss", "train_acc",
                                        "test_loss", "test_acc"}


# ------------------------------------------------------------------ (c) per-seed clipping


def test_clip_per_seed_clips_each_row_by_its_own_norm():
    grad = torch.randn(3, 1000, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    grad[0] *= 1000 / grad[0].norm()  # a huge gradient
    grad[1] *= 0.5 / grad[1].norm()
    grad[2] *= 0.01 / grad[2].norm()
    before = grad.clone()
    norms = clip_per_seed(grad, 1.0)
    torch.testing.assert_close(norms, torch.tensor([1000, 0.5, 0.01], dtype=torch.float64))
    assert abs(float(grad[0].norm()) - 1.0) < 1e-6
    assert torch.equal(grad[1:], before[1:])  # the small ones untouched
    shared = before.clone()
    clip_shared(shared, 1.0)
    assert float(shared[2].norm()) < 1e-4  # a shared norm would have shrunk the small ones too


def test_group_clipping_equals_torch_clip_per_seed():
    """Each seed's clipped gradient is what clip_grad_norm_ gives that seed's single model."""
    configs = _configs("rope")
    models = [_single(c) for c in configs]
    g = _group_of(models, configs)
    tok, lab = _batches(configs)
    losses, _ = g.loss(tok, lab)
    g.zero_grad()
    scale = torch.tensor([1000.0, 1.0, 1e-3], dtype=torch.float64)
    (losses * scale).sum().backward()
    norms = clip_per_seed(g.grad, 1.0)
    for s, m in enumerate(models):
        (F.cross_entropy(m(tok[s]), lab[s]) * scale[s]).backward()
        ref = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        assert abs(float(ref) - float(norms[s])) < 1e-9 * max(1.0, float(ref))
        for name, p in m.named_parameters():
            torch.testing.assert_close(g.params[name].grad[s], p.grad, atol=1e-10, rtol=0)


def test_a_shared_clip_norm_fails_the_tracking_check(monkeypatch):
    """The mutation: clipping all seeds by one norm over the stack.  The tracking assertion of the
    test above must then fail."""
    monkeypatch.setattr(seed_group, "clip_per_seed", clip_shared)
    configs = _small("rope")
    with pytest.raises(AssertionError):
        _assert_tracks(configs)


# ------------------------------------------------------------------ (d) per-seed stopping


def test_an_inactive_seed_neither_moves_nor_decays():
    configs = _configs("alibi")
    g = SeedGroup(configs, dtype=torch.float64)
    tok, lab = _batches(configs)
    for _ in range(3):
        before = g.flat.clone()
        losses, _ = g.loss(tok, lab)
        g.backward(losses)
        assert bool((g.grad[1] != 0).any())
        g.adamw_step([1e-2, 1e-2, 1e-2], [True, False, True], (0.9, 0.98), weight_decay=0.1)
        assert torch.equal(g.flat[1], before[1])  # bit for bit
        assert not torch.equal(g.flat[0], before[0]) and not torch.equal(g.flat[2], before[2])
    assert g.steps.tolist() == [3, 0, 3]
    assert torch.equal(g.exp_avg[1], torch.zeros_like(g.exp_avg[1]))


def test_early_stopping_per_seed_keeps_each_seeds_best_weights():
    """patience 1 over 6 epochs: each seed stops when its own validation accuracy stalls, keeps its
    best weights, and the others go on -- the same epochs and weights as its single run."""
    configs = _small("rope", seeds=(0, 1, 2, 3), epochs=6, patience=1, **{"task.n_samples": 700})
    runs, refs = _assert_tracks(configs)
    epochs = [len(r.metrics) for r in runs]
    assert epochs == [len(m) for m, _, _ in refs]
    assert any(e < 6 for e in epochs), epochs  # someone stopped early ...
    assert len(set(epochs)) > 1, epochs  # ... and not all at the same epoch
    # a seed kept weights older than its last epoch's (and they are its single run's best ones)
    assert any(r.early_stopping["best_epoch"] < len(r.metrics) for r in runs)
    for r in runs:
        stop = r.early_stopping
        assert stop is not None and stop["stopped_epoch"] == len(r.metrics)
        vals = [m["val_acc"] for m in r.metrics]
        assert stop["best_epoch"] == best_index(vals) + 1
        assert r.final is r.metrics[stop["best_epoch"] - 1]


def test_a_diverging_seed_stops_where_its_single_run_stops(tmp_path):
    """lr 1e6 without clipping makes the seeds diverge, as their single runs do (train.py: no
    update at or after the first non-finite loss, the epoch's sums NaN, ``diverged`` in the
    summary): the same step and epoch, the same records."""
    import json
    from posenc.empirical.training.runs import RESULT
    from posenc.empirical.training.train import train
    configs = _small("alibi", seeds=(0, 1), lr=1e6, grad_clip=None, epochs=2)
    runs = train_group(configs, dtype=torch.float32)
    for c, run in zip(configs, runs):
        single = train(c.replace(num_threads=1), tmp_path / f"s{c.seed}", progress=False)
        want = json.loads((Path(single.run_dir) / RESULT).read_text())["diverged"]
        assert run.diverged == want
        last = run.metrics[-1]
        assert last["diverged_step"] == want["step"] == last["step"]
        assert math.isnan(last["train_loss"]) and math.isnan(last["train_acc"])
        assert len(run.metrics) == want["epoch"] == len(single.metrics)


def test_a_seed_with_a_non_finite_loss_is_not_stepped_and_the_others_are_untouched():
    """Seed 0 at lr 1e6 goes non-finite within a few steps; from then on its row no longer
    moves, and seed 1's row is bit for bit what it is beside a sane seed 0."""
    configs = _configs("alibi")[:2]
    tok, lab = _batches(configs)
    cfg = configs[0].replace(grad_clip=None)
    wild, calm = SeedGroup(configs, dtype=torch.float32), SeedGroup(configs, dtype=torch.float32)
    frozen = None
    for _ in range(12):
        before = wild.flat[0].clone()
        losses, _, _ = wild.train_step(tok, lab, None, [1e6, 1e-3], [True, True], cfg)
        calm.train_step(tok, lab, None, [1e-3, 1e-3], [True, True], cfg)
        if not math.isfinite(float(losses[0])):
            frozen = frozen or 0
            assert torch.equal(wild.flat[0], before)  # not stepped at a non-finite loss
            frozen += 1
        assert torch.equal(wild.flat[1], calm.flat[1])
    assert frozen, "seed 0 never diverged: the test proves nothing"
