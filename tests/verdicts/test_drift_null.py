"""RA's drift null (posenc.verdicts.drift_null): the growth of a learned table that carries no
signal under AdamW in a run's own schedule -- against torch's AdamW on a table of noise, and on
the quick preset's schedule against figures measured independently."""

import dataclasses
import math

import pytest
import torch

from posenc.empirical.config import preset
from posenc.empirical.training.schedule import OptimizerSchedule
from posenc.verdicts.drift_null import (_CURVES, TABLE_INIT_STD, _simulate, drift_curve,
                                        null_attenuation)

#: the quick preset's schedule (count and distance alike: 1,890 training examples in batches of
#: 16 = 119 steps per epoch, at most 60 epochs)
QUICK = OptimizerSchedule(lr=1e-3, betas=(0.9, 0.98), weight_decay=1e-5, warmup_frac=0.06,
                          epochs=60, steps_per_epoch=119)


def adamw_on_noise(schedule, steps, scale, shape=(8, 8, 65), seed=0):
    """A of a table (layers, heads, offsets) initialised as TableBias is, stepped by torch's
    AdamW on i.i.d. normal gradients of sd ``scale``: log(final / initial) of the head-centred
    RMS, mean over layers, as the training trace computes it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(seed)
        w = torch.nn.Parameter(torch.randn(shape, generator=gen) * TABLE_INIT_STD)
        opt = torch.optim.AdamW([w], lr=schedule.lr, betas=schedule.betas,
                                weight_decay=schedule.weight_decay)

        def centred_rms():
            x = w.detach().double()
            return float((x - x.mean(-1, keepdim=True)).pow(2).mean((1, 2)).sqrt().mean())
        initial = centred_rms()
        for k in range(steps):
            opt.param_groups[0]["lr"] = schedule.rate(k)
            w.grad = torch.randn(shape, generator=gen) * scale
            opt.step()
        return math.log(centred_rms() / initial)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_the_null_is_adamws_growth_of_a_table_of_noise_at_any_gradient_scale(scale):
    """torch's AdamW on a 4,160-entry table of noise grows it as the null says, whatever the
    gradients' scale (Adam's update is scale-free: the noise model needs no scale).  A large
    weight decay (0.5 at lr 1e-2: the initial table kept at ~0.4) makes the decay visible; the
    tolerance is about three Monte-Carlo sds of the difference (each side ~0.01)."""
    s = OptimizerSchedule(lr=1e-2, betas=(0.9, 0.98), weight_decay=0.5, warmup_frac=0.06,
                          epochs=10, steps_per_epoch=40)
    got = adamw_on_noise(s, 300, scale)
    assert got == pytest.approx(null_attenuation(s, 300), abs=0.04)
    # without the weight decay the same noise grows the table further: the null sees the decay
    no_decay = dataclasses.replace(s, weight_decay=0.0)
    assert null_attenuation(no_decay, 300) > got + 0.1


def test_on_the_quick_schedule_the_null_grows_the_table_as_issue_37_measured():
    """Measured independently: a table of RMS 0.020 grows to 0.048-0.054 under AdamW on pure
    noise over the 2,500-4,800 steps the quick runs trained; the null gives 0.047 and 0.054
    (measured).  The band is the issue's range widened by 0.002 on each side: the null's
    Monte-Carlo error (~1% of the RMS) and the issue's single simulated tables."""
    cfg = preset("quick", task="count", pe="relative_bias:mode=table")
    assert OptimizerSchedule.of(cfg, 119) == QUICK  # the preset's optimiser, as written above
    rms = {k: TABLE_INIT_STD * math.exp(null_attenuation(QUICK, k)) for k in (2500, 4800)}
    assert 0.046 <= rms[2500] < rms[4800] <= 0.056


def test_the_null_is_deterministic_zero_before_any_step_and_capped_at_the_schedule():
    s = OptimizerSchedule(lr=1e-2, betas=(0.9, 0.999), weight_decay=0.0, warmup_frac=0.0,
                          epochs=2, steps_per_epoch=5)
    assert null_attenuation(s, 0) == 0.0
    assert null_attenuation(s, 10) == null_attenuation(s, 99) == drift_curve(s)[-1]
    # a curve simulated up to fewer steps is the longer one's start (one seed, step by step)
    assert _simulate(s, 4) == drift_curve(s)[:4] == drift_curve(s, 4) and len(drift_curve(s)) == 10
    # a run that stopped early in a long schedule costs its own steps, not the schedule's
    long = dataclasses.replace(s, epochs=10 ** 6)
    assert null_attenuation(long, 3) == pytest.approx(null_attenuation(s, 3), abs=0.05)
    assert len(_CURVES[long]) == 3
    # the first Adam step moves every entry by the rate (bias correction: |m_hat / sqrt(v_hat)|
    # = 1), so E w^2 = s0^2 + lr^2 exactly
    assert null_attenuation(s, 1) == pytest.approx(
        0.5 * math.log(1 + (1e-2 / TABLE_INIT_STD) ** 2), rel=1e-6)
