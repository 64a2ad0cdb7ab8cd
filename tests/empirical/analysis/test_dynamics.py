"""Dynamics recording: per-example positional signals against a reference loop, importance
against one-by-one ablation, recording never changes training (bit for bit), resumes to the same
file, the documented fields, the summary's logic on hand-made records, CLI errors."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from posenc.cli import main
from posenc.empirical import load_run
from posenc.empirical.training.train import train
from posenc.empirical.config import ModelConfig, TaskConfig, TrainConfig
from posenc.empirical.analysis.dynamics import (DYNAMICS, DynamicsConfig, _rotary_layout, dynamics_file,
                                                head_importance, margin, per_example_signals,
                                                read_dynamics_file)
from posenc.empirical.analysis.dynamics_summary import summarize
from posenc.empirical.analysis.sign_flip import QMAX
from posenc.empirical.pipeline.dynamics_sweep import dynamics_worker
from posenc.empirical.model.transformer import build_model
from posenc.empirical.training.runs import METRICS, read_config
from posenc.empirical.tasks import TaskData
from posenc.errors import PosencError


def tiny(pe="rope", **kw) -> TrainConfig:
    task = TaskConfig(n_samples=400, max_left=2, max_gap=5, max_right=2, vocab_size=10)
    model = ModelConfig(pe=pe, d_model=16, n_heads=2, n_layers=2, d_ff=16, dropout=0.1)
    return TrainConfig(task=task, model=model, **{"epochs": 2, "batch_size": 50, "lr": 3e-3, **kw})


DYN = DynamicsConfig(every=3, probe_examples=20, probe_batches=4, ablation_every=2,
                     ablation_examples=16)


# --- the per-example signal against a reference loop -----------------------------------------

def _one_hot(h: int, H: int) -> torch.Tensor:
    oh = torch.zeros(H)
    oh[h] = 1.0
    return oh[None, :, None, None]


def reference_signals(model, tokens, labels):
    """psi[l, e, h] by a scalar tau per (example, layer, head), applied a different way from the
    vectorised code: RoPE by rotating q and k of that head by an extra angle t*p*theta (not the
    closed-form direction), a bias by adding t*B[h] to that head's scores.  gate[l, e, h] by a
    scalar gate on that head's output."""
    L, H = len(model.blocks), model.cfg.n_heads
    B, T = tokens.shape
    psi = torch.full((L, B, H), float("nan"), dtype=torch.float64)
    gate = torch.zeros(L, B, H, dtype=torch.float64)
    model.eval()
    for e in range(B):
        for l, block in enumerate(model.blocks):
            attn, layout = block.attn, _rotary_layout(block.attn)
            bias = attn.positional_bias(T, 0)
            for h in range(H):
                t = torch.zeros((), requires_grad=True)
                g = torch.ones((), requires_grad=True)
                oh = _one_hot(h, H)
                # hook layouts (TransformerLens): z, rot_q, rot_k (batch, pos, head, d)
                ohz = oh.transpose(1, 2)  # (1, 1, H, 1)
                hooks = [(f"blocks.{l}.attn.hook_z", lambda z, hook, oh=ohz: z * (1 - oh + g * oh))]
                if layout is not None:
                    a, b, th = layout
                    theta = th[h if th.shape[0] > 1 else 0].float()

                    def rot(x, hook, oh=ohz, theta=theta, a=a, b=b):
                        ang = t * torch.arange(T, dtype=torch.float32)[:, None] * theta[None, :]
                        c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]  # (T, 1, P)
                        cols = list(x.unbind(-1))
                        for m in range(len(a)):
                            xa, xb = x[..., int(a[m])], x[..., int(b[m])]
                            cols[int(a[m])] = xa * c[..., m] - xb * s[..., m]
                            cols[int(b[m])] = xa * s[..., m] + xb * c[..., m]
                        return x * (1 - oh) + torch.stack(cols, -1) * oh
                    hooks += [(f"blocks.{l}.attn.hook_rot_q", rot),
                              (f"blocks.{l}.attn.hook_rot_k", rot)]
                if bias is not None:
                    Bh = bias[h if bias.shape[0] > 1 else 0].detach()
                    hooks.append((f"blocks.{l}.attn.hook_attn_scores",
                                  lambda s, hook, oh=oh, Bh=Bh: s + t * oh * Bh))
                with model.hooks(hooks):
                    loss = F.cross_entropy(model(tokens[e:e + 1]), labels[e:e + 1])
                gt, gg = torch.autograd.grad(loss, [t, g], allow_unused=True)
                if layout is not None or bias is not None:
                    psi[l, e, h] = float(gt)
                gate[l, e, h] = float(gg)
    return psi, gate


@pytest.mark.parametrize("pe", ["rope", "rope:pairing=half,heads=1", "alibi", "relative_bias",
                                "hybrid:additive=alibi", "mla", "nope", "sinusoidal"])
def test_vectorised_signals_equal_the_reference_loop(pe):
    torch.manual_seed(0)
    model = build_model(ModelConfig(pe=pe, d_model=16, n_heads=2, n_layers=2, d_ff=16), 10, 5, 9)
    with torch.no_grad():  # larger weights than at init, so that the signals are O(1e-2..1)
        for p in model.parameters():
            p.mul_(3.0)
    tok = torch.randint(1, 10, (3, 9))
    tok[0, 6:] = 0  # padding
    y = torch.randint(0, 5, (3,))
    got = per_example_signals(model, tok, y)
    psi, gate = reference_signals(model, tok, y)
    assert torch.equal(torch.isnan(got["psi"]), torch.isnan(psi))
    # float32 forward/backward of a 2-layer model with O(1) activations: differences ~1e-6
    # relative to the largest signal; 1e-4 of the scale leaves room and catches a wrong formula
    # (a sign or factor error is O(1) relative).
    scale = 1.0 + float(psi.nan_to_num(0).abs().max())
    assert float((got["psi"].double() - psi).nan_to_num(0).abs().max()) <= 1e-4 * scale
    assert float((got["gate"].double() - gate).abs().max()) <= 1e-4 * (1 + float(gate.abs().max()))
    if pe in ("nope", "sinusoidal"):
        assert torch.isnan(got["psi"]).all()
    else:
        assert float(psi.nan_to_num(0).abs().max()) > 1e-4  # the comparison is not vacuous


def test_importance_equals_one_by_one_zero_ablation():
    torch.manual_seed(1)
    model = build_model(ModelConfig(pe="rope", d_model=16, n_heads=2, n_layers=2, d_ff=16), 10, 5, 9)
    tok = torch.randint(1, 10, (7, 9))
    data = TaskData(tok, torch.randint(0, 5, (7,)), torch.full((7,), 9), 5)
    got = head_importance(model, data, batch_size=4)  # several chunks
    model.eval()
    with torch.no_grad():
        base = model(tok)
        base_loss = float(F.cross_entropy(base, data.labels))
        for l in range(2):
            for h in range(2):
                oh = _one_hot(h, 2)
                out = model.run_with_hooks(tok, fwd_hooks=[(f"blocks.{l}.attn.hook_z",
                                                            lambda z, hook, oh=oh.transpose(1, 2):
                                                            z * (1 - oh))])
                inc = float(F.cross_entropy(out, data.labels)) - base_loss
                drop = float((base.argmax(-1) == data.labels).double().mean()
                             - (out.argmax(-1) == data.labels).double().mean())
                # float32 logits, 7 examples: CE agrees to ~1e-6
                assert got["importance"][l][h] == pytest.approx(inc, abs=1e-5)
                assert got["acc_drop"][l][h] == pytest.approx(drop, abs=1e-12)


@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=8))
def test_margin_is_top_minus_runner_up(values):
    s = sorted(values)
    expected = s[-1] - s[-2] if len(s) > 1 else 0.0
    assert margin(values) == expected
    assert margin(values) >= 0


# --- recording never changes training; resume; the file ---------------------------------------

def test_recording_changes_neither_training_nor_run_id(tmp_path):
    plain = train(tiny(), tmp_path / "plain")
    off = train(tiny(), tmp_path / "off", dynamics=None)
    on = train(tiny(), tmp_path / "on", dynamics=DYN)
    assert plain.metrics == off.metrics == on.metrics  # floats compared exactly
    assert dynamics_file(tmp_path / "off") is None
    assert dynamics_file(tmp_path / "on") == tmp_path / "on" / f"{DYNAMICS}.gz"
    wa = load_run(tmp_path / "plain").model.state_dict()
    wb = load_run(tmp_path / "on").model.state_dict()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert read_config(tmp_path / "on") == tiny() and on.config.run_id() == tiny().run_id()


def test_dynamics_file_has_the_documented_fields(tmp_path):
    train(tiny(), tmp_path / "r", dynamics=DYN)
    header, records = read_dynamics_file(tmp_path / "r")
    assert header["dynamics"] == DYN.to_dict() and header["signal_layers"] == [True, True]
    total = header["total_steps"]  # 2 epochs of 6 steps
    assert total == 12 and [r["step"] for r in records] == [0, 3, 6, 9, 12]
    assert [r["final"] for r in records] == [False] * 4 + [True]
    L, H, nb = 2, 2, 4
    for r in records:
        for key in ("seed", "abs_signal", "coherence", "agreement", "attribution"):
            assert len(r[key]) == L and all(len(row) == H for row in r[key]), key
        assert all(len(cell) == nb for row in r["seed_batches"] for cell in row)
        assert all(0 <= c <= 1 + 1e-9 for row in r["coherence"] for c in row)
        assert len(r["margin"]["signal"]) == L
        seed, batches = r["seed"][0][0], r["seed_batches"][0][0]
        assert seed == pytest.approx(sum(batches) / nb, rel=1e-5)  # equal batches of 5
    # the early window's records (steps <= 10% of training, at least one interval: 0 and 3)
    # keep the per-example signals, quantised per (layer, head) with the coherence unchanged
    assert [r["step"] for r in records if "psi_q" in r] == [0, 3]
    for r in records[:2]:
        for l in range(L):
            for h in range(H):
                q = r["psi_q"][l][h]
                assert len(q) == 20 and max(abs(v) for v in q) == QMAX
                assert abs(sum(q)) / sum(abs(v) for v in q) == pytest.approx(
                    r["coherence"][l][h], abs=1e-3)
    # importance on every 2nd record (steps 0, 6, 12) and the final one
    assert [r["step"] for r in records if "importance" in r] == [0, 6, 12]
    assert all(len(r["margin"]["importance"]) == L for r in records if "importance" in r)


def test_dynamics_file_reads_plain_or_compressed_and_a_damaged_one_is_one_line(tmp_path, capsys):
    """Written gzip-compressed; a folder of before holds the plain file, read the same; a
    compressed file cut short is refused in one line (by the CLI with exit status 2)."""
    import gzip
    run = tmp_path / "r"
    train(tiny(epochs=1), run, dynamics=DYN)
    packed = dynamics_file(run)
    assert packed.name == "dynamics.jsonl.gz" and not (run / DYNAMICS).exists()
    read = read_dynamics_file(run)
    (run / DYNAMICS).write_bytes(gzip.decompress(packed.read_bytes()))  # a folder of before
    data = packed.read_bytes()
    packed.unlink()
    assert read_dynamics_file(run) == read_dynamics_file(run / DYNAMICS) == read
    cfg = tiny(epochs=1)
    assert read_dynamics_file(run, of=(cfg.task.name, cfg.model.pe, cfg.seed)) == read
    with pytest.raises(PosencError, match=f"^{run / DYNAMICS} holds the dynamics of rope on "
                                          f"distance, seed {cfg.seed}, not of the run it is in "
                                          f"\\(rope on distance, seed {cfg.seed + 1}\\)$"):
        read_dynamics_file(run, of=(cfg.task.name, cfg.model.pe, cfg.seed + 1))
    packed.write_bytes(data[:-9])  # cut short: the compressed file is the one read
    with pytest.raises(PosencError, match=f"^{packed} is damaged .*truncated"):
        read_dynamics_file(run)
    assert main(["dynamics", str(run)]) == 2
    err = capsys.readouterr().err
    assert err == f"posenc: error: {packed} is damaged (the compressed file is truncated)\n"


def test_interrupted_recording_resumes_to_the_same_file(tmp_path):
    train(tiny(), tmp_path / "full", dynamics=DYN)

    def interrupt(step, loss):
        if step == 8:  # in epoch 2
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(tiny(), tmp_path / "cut", dynamics=DYN, on_step=interrupt)
    _, partial = read_dynamics_file(tmp_path / "cut")
    assert [r["step"] for r in partial] == [0, 3]  # flushed with the epoch-1 checkpoint
    train(tiny(), tmp_path / "cut", dynamics=DYN)
    # the compressed file too, byte for byte (no time stamp in its gzip header)
    assert dynamics_file(tmp_path / "cut").read_bytes() == \
        dynamics_file(tmp_path / "full").read_bytes()
    assert (tmp_path / "cut" / METRICS).read_text() == (tmp_path / "full" / METRICS).read_text()
    with pytest.raises(PosencError, match="other dynamics settings"):
        (tmp_path / "cut" / "train_summary.json").unlink()
        train(tiny(), tmp_path / "cut", dynamics=DynamicsConfig(every=5))


def test_bad_dynamics_settings_are_one_clear_error():
    with pytest.raises(PosencError, match="every"):
        DynamicsConfig(every=0)
    with pytest.raises(PosencError, match="unknown dynamics key"):
        DynamicsConfig.from_dict({"evry": 3})


# --- the summary on hand-made records ----------------------------------------------------------

def _rec(step, seed, importance=None, final=False):
    r = {"kind": "record", "step": step, "final": final, "seed": seed,
         "seed_batches": [[[v, v] for v in row] for row in seed],
         "coherence": [[0.5 for _ in row] for row in seed],
         "attribution": [[0.0 for _ in row] for row in seed],
         "margin": {"signal": [margin([abs(v) for v in row]) for row in seed]}}
    if importance is not None:
        r["importance"] = importance
        r["margin"]["importance"] = [margin(row) for row in importance]
    return r


def test_summary_predictions_and_advantage_step():
    header = {"pe": "rope", "task": "distance", "seed": 0, "n_layers": 2, "n_heads": 3,
              "total_steps": 100, "dynamics": {"every": 10}, "signal_layers": [True, True]}
    s0 = [[0.1, -0.9, 0.2], [0.0, 0.3, 0.1]]      # largest |seed|: L0 H1
    records = [_rec(0, s0, [[0.0, 0.1, 0.2], [0.0, 0.0, 0.0]]),   # importance: L0 H2 first
               _rec(10, s0),
               _rec(50, s0, [[0.0, 0.5, 0.2], [0.1, 0.0, 0.0]]),  # L0 H1 takes the lead ...
               _rec(100, s0, [[0.0, 0.9, 0.1], [0.2, 0.0, 0.0]], final=True)]  # ... and keeps it
    s = summarize(header, records, early_steps=10)
    assert s["deposit"] == [0, 1] and s["deposit_source"].startswith("importance")
    assert s["early_records"] == 2
    assert s["prediction"]["signal"] == {"predicted": [0, 1], "hit": True, "head_hit": True}
    assert s["prediction"]["importance"] == {"predicted": [0, 2], "hit": False, "head_hit": False}
    assert s["advantage_step"] == 50
    assert s["top_signal_head"] == [0, 1] and s["batch_sign_consistency"] == 1.0
    assert s["importance_margin"] == pytest.approx([0.8, 0.2])
    assert s["importance_mean_log_gain"] == pytest.approx(math.log(4.0))
    ablation = {"layers": [{"layer": 0, "largest_drop": 0.1, "deposit_head": 2},
                           {"layer": 1, "largest_drop": 0.3, "deposit_head": 0}]}
    s2 = summarize(header, records, early_steps=10, ablation=ablation)
    assert s2["deposit"] == [1, 0] and not s2["prediction"]["signal"]["hit"]


# --- worker and CLI ----------------------------------------------------------------------------

def test_worker_result_and_cli(tmp_path, capsys):
    cfg = tiny(epochs=1)
    res = dynamics_worker({"train": cfg.to_dict(), "dynamics": DYN.to_dict(),
                           "ablation_examples": 30, "tags": {"role": "rope"}},
                          str(tmp_path / "w"), 1)
    json.dumps(res)  # JSON-serialisable
    s = res["summary"]
    assert {"task", "pe", "seed", "test_acc", "tags"} <= set(s)
    assert s["tags"] == {"role": "rope", "dynamics": True}
    assert res["dynamics"]["deposit_source"] == "ablation_zero.json"
    assert main(["dynamics", str(tmp_path / "w"), "--plot", str(tmp_path / "d.png")]) == 0
    out = capsys.readouterr().out
    assert "final deposit head" in out and (tmp_path / "d.png").stat().st_size > 1000
    assert main(["dynamics", str(tmp_path / "w"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deposit"] == res["dynamics"]["deposit"]
    again = dynamics_worker({"train": cfg.to_dict(), "dynamics": DYN.to_dict(),
                             "ablation_examples": 30, "tags": {"role": "rope"}},
                            str(tmp_path / "w"), 1)  # finished: skipped, same answer
    assert again["dynamics"] == res["dynamics"]
    with pytest.raises(PosencError, match="other dynamics settings"):
        dynamics_worker({"train": cfg.to_dict(), "dynamics": {"every": 5}},
                        str(tmp_path / "w"), 1)


def _unrecorded(tmp_path):
    """A finished and a partly trained (epoch 1 of 2) run of tiny(), both without recording."""
    train(tiny(), tmp_path / "done")

    def interrupt(step, loss):
        if step == 8:  # in epoch 2
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train(tiny(), tmp_path / "cut", on_step=interrupt)
    return tmp_path / "done", tmp_path / "cut"


def test_recording_a_run_trained_without_it_is_refused_and_the_run_kept(tmp_path, capsys):
    """--record on a finished run used to delete its checkpoint and train it again in place,
    silently; on a partly trained one it recorded from the resume step on, and the summary took
    that record for 'the first N steps'.  Both are one line now, and the run is untouched."""
    done, cut = _unrecorded(tmp_path)
    before = {d: {f.name: f.read_bytes() for f in d.iterdir()} for d in (done, cut)}
    job = {"train": tiny().to_dict(), "dynamics": DYN.to_dict(), "ablation_examples": 30}
    for folder, state in ((done, "a finished"), (cut, "a partly trained")):
        with pytest.raises(PosencError, match=f"holds {state} run trained without dynamics "
                                              f"recording.*NEW_DIR --record"):
            dynamics_worker(job, str(folder), 1)
        assert main(["dynamics", str(folder), "--record", "--preset", "smoke"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"posenc: error: {folder} holds {state}") and err.count("\n") == 1
    with pytest.raises(PosencError, match="trained 6 steps without dynamics recording"):
        train(tiny(), cut, dynamics=DYN)  # the recorder itself, for train(dynamics=...)
    assert before == {d: {f.name: f.read_bytes() for f in d.iterdir()} for d in (done, cut)}


@pytest.mark.parametrize("argv, needle", [
    (["dynamics", "/nonexistent/run"], "does not exist"),
    (["dynamics", "{tmp}"], "without dynamics recording"),
    (["dynamics", "{tmp}", "--plot", "x.svg"], ".png or .pdf"),
    (["dynamics", "{tmp}", "--early", "-1"], "--early"),
])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, needle):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_summary_sign_balance_from_records_old_and_new():
    """sign_balance_max: the early mean of |#positive - #negative| / n, max over heads; records
    made before it was recorded give the same number from their agreement, except a head whose
    seed is exactly 0 (agreement 0), which is left out."""
    import numpy as np

    from posenc.empirical.analysis.dynamics import signal_grids
    rng = np.random.default_rng(0)
    psi = rng.normal(size=(2, 16, 3)) + 0.3
    psi[1, :, 2] = np.abs(psi[1, :, 2])  # L1 H2: every example positive, balance 1
    grids = signal_grids(torch.as_tensor(psi), probe_batches=2)
    signs = np.sign(psi)
    # k / 16 in float64: exact
    assert grids["sign_balance"] == np.abs(signs.mean(1)).tolist()
    header = {"pe": "rope", "task": "distance", "seed": 0, "n_layers": 2, "n_heads": 3,
              "total_steps": 100, "dynamics": {"every": 10}, "signal_layers": [True, True]}
    recs = [{"kind": "record", "step": s, "final": s == 10, **grids,
             "attribution": [[0.0] * 3] * 2} for s in (0, 10)]
    ablation = {"layers": [{"layer": 0, "largest_drop": 0.1, "deposit_head": 0},
                           {"layer": 1, "largest_drop": 0.0, "deposit_head": 0}]}
    new = summarize(header, recs, early_steps=10, ablation=ablation)
    assert new["sign_balance_max"] == 1.0
    old = [{k: v for k, v in r.items() if k != "sign_balance"} for r in recs]
    assert summarize(header, old, early_steps=10, ablation=ablation)["sign_balance_max"] == 1.0
    balanced = np.tile(np.repeat([1.0, -1.0], 8), (2, 3, 1)).transpose(0, 2, 1)  # seed 0 everywhere
    balanced[0, :, 0] = np.r_[np.full(12, 1.0), np.full(4, -3.0)]  # L0 H0: seed 0, balance 0.5
    g = signal_grids(torch.as_tensor(balanced), probe_batches=2)
    recs = [{"kind": "record", "step": 0, "final": True, **g, "attribution": [[0.0] * 3] * 2}]
    assert summarize(header, recs, early_steps=10, ablation=ablation)["sign_balance_max"] == 0.5
    old = [{k: v for k, v in r.items() if k != "sign_balance"} for r in recs]
    assert summarize(header, old, early_steps=10, ablation=ablation)["sign_balance_max"] is None
