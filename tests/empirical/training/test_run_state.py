"""RunState: saved as a checkpoint and resumed, it gives back the model, optimiser, global RNG,
metrics, epochs, best weights and times it held; RunClock keeps "unknown earlier seconds" across
every later save."""

import torch

from posenc.empirical.config import preset
from posenc.empirical.training.run_state import RunClock, RunState
from posenc.empirical.training.runs import model_for, read_checkpoint
from posenc.empirical.training.train import make_optimizer

CPU = torch.device("cpu")


def _state(seed: int) -> RunState:
    cfg = preset("smoke", "distance", "rope")
    torch.manual_seed(seed)
    model = model_for(cfg)
    return RunState(model, make_optimizer(model, cfg))


def _stepped(state: RunState) -> RunState:
    """One optimiser step, so the optimiser holds moments to save."""
    loss = sum(p.square().sum() for p in state.model.parameters())
    loss.backward()
    state.optimizer.step()
    return state


def test_a_saved_state_resumes_to_the_same_model_optimiser_rng_and_records(tmp_path):
    cfg = preset("smoke", "distance", "rope")
    state = _stepped(_state(0))
    state.epoch, state.metrics = 3, [{"epoch": e + 1, "val_acc": 0.1 * e} for e in range(3)]
    state.snapshot_best()
    state.clock.epoch_seconds = [1.0, 2.0, 3.0]
    path = tmp_path / "checkpoint.pt"
    state.save(path, cfg, CPU, dynamics_seconds=0.5)
    after_save = torch.rand(4)  # the RNG draws after the save ...

    other = _state(1)  # another initialisation, another RNG position
    other.resume(path, CPU)
    assert torch.equal(torch.rand(4), after_save)  # ... are drawn again after the resume
    a, b = state.model.state_dict(), other.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert all(torch.equal(state.best[k], other.best[k]) for k in a)
    sa, sb = state.optimizer.state_dict()["state"], other.optimizer.state_dict()["state"]
    assert sa.keys() == sb.keys() and all(
        torch.equal(sa[i]["exp_avg"], sb[i]["exp_avg"]) for i in sa)
    assert other.epoch == 3 and other.metrics == state.metrics
    assert other.clock.epoch_seconds == [1.0, 2.0, 3.0] and other.clock.known
    assert other.clock.earlier >= 0.0 and other.clock.earlier_dynamics == 0.5
    assert other.clock.earlier_cpu is not None and other.clock.earlier_cpu >= 0.0
    assert other.clock.resumed(3) == {"from_epoch": 3, "earlier_seconds": round(other.clock.earlier, 3),
                                      "earlier_cpu_seconds": round(other.clock.earlier_cpu, 3)}
    assert RunClock().resumed(0) is None


def test_unknown_earlier_seconds_stay_unknown_through_later_saves(tmp_path):
    cfg = preset("smoke", "distance", "rope")
    path = tmp_path / "checkpoint.pt"
    state = _state(0)
    state.save(path, cfg, CPU)
    legacy = read_checkpoint(path)
    for key in ("seconds", "epoch_seconds", "dynamics_seconds", "seconds_known", "cpu_seconds"):
        del legacy[key]  # a checkpoint written before posenc kept times
    torch.save(legacy, path)
    resumed = _state(0)
    resumed.resume(path, CPU)
    assert not resumed.clock.known and resumed.clock.resumed(2)["earlier_seconds"] is None
    assert resumed.clock.resumed(2)["earlier_cpu_seconds"] is None
    resumed.save(path, cfg, CPU)
    again = _state(0)
    again.resume(path, CPU)
    assert not again.clock.known  # a later checkpoint still says the earliest epochs are untimed
    assert again.clock.earlier_cpu is None and read_checkpoint(path)["cpu_seconds"] is None


def test_the_cpu_seconds_add_up_across_resumes(tmp_path):
    cfg = preset("smoke", "distance", "rope")
    path = tmp_path / "checkpoint.pt"
    state = _state(0)
    state.clock.start()
    _stepped(state)
    state.save(path, cfg, CPU)
    first = read_checkpoint(path)["cpu_seconds"]
    resumed = _state(0)
    resumed.resume(path, CPU)
    resumed.clock.start()
    _stepped(resumed)
    resumed.save(path, cfg, CPU)
    assert read_checkpoint(path)["cpu_seconds"] > first > 0  # the earlier CPU time and this call's


def test_the_kept_checkpoint_holds_the_best_weights(tmp_path):
    cfg = preset("smoke", "distance", "rope")
    path = tmp_path / "checkpoint.pt"
    state = _state(0)
    state.metrics, state.epoch = [{"epoch": 1}], 1
    state.snapshot_best()
    best = {k: v.clone() for k, v in state.best.items()}
    _stepped(state)  # the model moves on past its best epoch
    state.save(path, cfg, CPU)
    state.use_best()
    state.save_kept(path, CPU, best_epoch=1)
    ckpt = read_checkpoint(path)
    assert ckpt["best_epoch"] == 1
    assert all(torch.equal(ckpt["model"][k], best[k]) for k in best)
    assert all(torch.equal(state.model.state_dict()[k], best[k]) for k in best)
