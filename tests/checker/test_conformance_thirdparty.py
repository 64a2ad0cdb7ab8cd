"""``posenc check`` on real third-party PE code, through the adapters of
docs/examples/thirdparty.py (shown in docs/usage.md): each correct library passes, a broken use
of each is flagged.  Skipped when the library is not installed; install with the ``thirdparty``
extra: ``python3 -m pip install torch==2.13.0 -e ".[train,test,thirdparty]"`` (torch pinned so that
pip keeps it)."""

from pathlib import Path

import pytest
import torch

from posenc.checker import check_callable, check_impl, check_target

ADAPTERS = Path(__file__).resolve().parents[2] / "docs" / "examples" / "thirdparty.py"


def props(report):
    return {p.name: p for p in report.properties}


# --- rotary-embedding-torch (lucidrains) --------------------------------------------------------

def test_rotary_embedding_torch_conforms_and_a_positionless_call_is_caught():
    ret = pytest.importorskip("rotary_embedding_torch")
    report = check_target(f"{ADAPTERS}:rope_rotary_embedding_torch", dim=32,
                          expect="base=10000,pairing=interleaved")       # in a child process
    assert report.ok, report.text()
    assert report.summary["pairing"] == "interleaved" and report.summary["base"] == 10000.0

    def rope_ignoring_positions(x, positions):       # rotate_queries_or_keys uses 0..seq-1
        return ret.RotaryEmbedding(dim=x.shape[-1]).rotate_queries_or_keys(x)

    bad = check_callable(rope_ignoring_positions, "rope", dim=32)
    assert not bad.ok
    assert "the positions are ignored" in props(bad)["uses positions"].detail, bad.text()


def test_rotary_embedding_torch_partial_rotation_matches_its_fraction():
    ret = pytest.importorskip("rotary_embedding_torch")

    def rope(x, positions):
        emb = ret.RotaryEmbedding(dim=x.shape[-1] // 2)                   # rotate half the dims
        return ret.apply_rotary_emb(emb(positions), x)

    assert check_callable(rope, "rope", dim=32, expect="fraction=0.5").ok
    report = check_callable(rope, "rope", dim=32, expect="fraction=1")
    assert props(report)["expected"].status == "fail", report.text()


# --- x-transformers -----------------------------------------------------------------------------

def test_x_transformers_rope_conforms_and_broken_uses_are_caught():
    xt = pytest.importorskip("x_transformers.x_transformers")
    report = check_impl(f"{ADAPTERS}:rope_x_transformers", dim=32)
    assert report.ok, report.text()
    assert props(report)["shape"].detail.endswith("(x given with 3 axes)")  # 2 axes broadcast

    # meant base 500000 (Llama 3), left the library's default
    bad = check_impl(f"{ADAPTERS}:rope_x_transformers", dim=32, expect="base=500000")
    assert "base is 10000, expected 500000" in props(bad)["expected"].detail, bad.text()

    def rope_mixed(x, positions):                    # its interleaved table, a half-split rotate
        freqs, _ = xt.RotaryEmbedding(x.shape[-1])(positions)
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return x * freqs.cos() + torch.cat((-x2, x1), dim=-1) * freqs.sin()

    mixed = check_callable(rope_mixed, "rope", dim=32)
    assert props(mixed)["norm preservation"].status == "fail", mixed.text()


def test_x_transformers_alibi_conforms_and_slopes_for_one_head_too_many_are_caught():
    xt = pytest.importorskip("x_transformers.x_transformers")
    report = check_impl(f"{ADAPTERS}:alibi_x_transformers",
                        expect="slopes=press,direction=symmetric")
    assert report.ok, report.text()
    assert report.kind == "bias" and report.summary["schedule"] == "press"

    def alibi_off_by_one(n_heads, n):                # slopes built for n_heads + 1 heads
        return xt.AlibiPositionalBias(heads=n_heads + 1)(n, n)[:n_heads]

    bad = check_callable(alibi_off_by_one, "bias")
    p = props(bad)["slope schedule"]
    assert p.status == "fail" and "of H+1 heads" in p.detail, bad.text()
