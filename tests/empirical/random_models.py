"""Small random models and task data for the ablation tests (head and latent ablation)."""

import torch

from posenc.empirical.config import ModelConfig
from posenc.empirical.model.transformer import build_model
from posenc.empirical.tasks import TaskData


def sharp_model(pe="rope", **kw):
    """A 3-layer, 4-head random model on 9 positions, its weights scaled 3x: a sharper random
    function, so that removing a head or latent dimensions changes predictions."""
    torch.manual_seed(0)
    cfg = ModelConfig(pe=pe, **{"d_model": 24, "n_heads": 4, "n_layers": 3, "d_ff": 32, **kw})
    m = build_model(cfg, vocab_size=10, n_classes=3, max_len=9)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)
    return m.eval()


def random_data(n=60, seed=0):
    """``n`` random sequences of 9 tokens, every third padded from position 6, random labels."""
    g = torch.Generator().manual_seed(seed)
    tok = torch.randint(1, 10, (n, 9), generator=g)
    tok[::3, 6:] = 0
    labels = torch.randint(0, 3, (n,), generator=g)
    return TaskData(tok, labels, (tok != 0).sum(1), 3)
