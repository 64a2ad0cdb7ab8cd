"""Empirical-layer tests run torch with one thread (tiny models; the CI machine is shared)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class TrainingStopped(Exception):
    """Raised by the :func:`api_train_configs` fixture's stand-in for the training loop."""


@pytest.fixture
def api_train_configs(monkeypatch):
    """The configs ``posenc.train`` hands to the training loop (a list), which is replaced by a
    stand-in that records the config and raises the list's ``stopped`` exception
    (:class:`TrainingStopped`): nothing trains."""
    import posenc.empirical.training.train as train_module

    class Configs(list):
        stopped = TrainingStopped

    made = Configs()

    def no_training(cfg, *args, **kwargs):
        made.append(cfg)
        raise TrainingStopped

    monkeypatch.setattr(train_module, "train", no_training)
    return made
