"""The PE modules' table cache (posenc.empirical.model.pe.table_cache): one build per key while it fits,
least recently used evicted, plain tensors even when first asked for under inference mode or
with gradients on; a training run's batch lengths all stay cached; a moved or cast module never
gets a table of its old device or dtype."""

import torch

from posenc.empirical.model.pe import table_cache
from posenc.empirical.model.pe.bias import AlibiBias
from posenc.empirical.model.pe.rotary import Rotary


def test_builds_each_key_once_and_evicts_the_least_recently_used(monkeypatch):
    monkeypatch.setattr(table_cache, "MAX_ENTRIES", 3)
    cache, built = table_cache.TableCache(), []

    def get(k):
        return cache.get((k,), lambda: built.append(k) or torch.tensor(k), source)

    source = torch.zeros(0)

    for k in (1, 2, 3, 1, 4):  # 1 used again before 4 arrives: 2 is the least recently used
        get(k)
    assert built == [1, 2, 3, 4] and len(cache) == 3
    get(1), get(3), get(4)
    assert built == [1, 2, 3, 4]
    get(2)
    assert built == [1, 2, 3, 4, 2]


def test_tables_are_plain_tensors_whatever_mode_asks_first():
    rot = Rotary(4, torch.ones(1, 2))
    with torch.inference_mode():
        w = rot.phasors(5, 0, torch.float32)
    assert not w.is_inference() and not w.requires_grad
    assert rot.phasors(5, 0, torch.float32) is w  # cached


def test_every_length_of_a_run_stays_cached():
    bias, built = AlibiBias(2), []
    real = bias._cache.get
    bias._cache.get = lambda key, make, source: real(key, lambda: built.append(key) or make(), source)
    for _ in range(3):  # three epochs over 40 batch lengths (the old cache kept 8)
        for T in range(20, 60):
            bias(T)
    assert len(built) == 40


def test_a_cast_module_gets_tables_of_its_new_dtype():
    bias = AlibiBias(2)
    before = bias(5, 0, torch.float64)
    bias.float()  # the float64 slopes become float32: the table is rebuilt from them
    after = bias(5, 0, torch.float64)
    assert after is not before and torch.equal(after, bias.slopes.double()[:, None, None]
                                               * -(torch.arange(5)[:, None] - torch.arange(5)).abs())
