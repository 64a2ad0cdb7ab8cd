"""``posenc check`` on the real rotary code of transformer-lens and torchtune (the ``thirdparty``
extra), through the adapters of docs/examples/thirdparty.py: the configurations the libraries
ship pass with their conventions stated, and realistic broken uses of the same code are flagged
with a message that names the bug.  Skipped when a library is not installed.

* transformer-lens 3.x: HookedTransformer's ``Attention`` -- ``calculate_sin_cos_rotary``
  (a table of ``n_ctx`` rows, grown on demand from 2048), ``rotate_every_two`` and
  ``apply_rotary`` on the first ``rotary_dim`` dims.  transformer-lens 4.0 removed
  HookedTransformer (``transformer_lens.components`` is gone): the tests skip there.
* torchtune 0.6: ``torchtune.modules.RotaryPositionalEmbeddings`` and
  ``torchtune.models.llama3_1.Llama3ScaledRoPE`` (torchtune needs torchao at import; the extra
  pins one that imports next to torch 2.13).

The hand-written stand-ins of tests/checker/realistic.py (the bug set's) are compared with the
real code here too."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

import realistic as R
from posenc.checker import check_callable, check_target

ADAPTERS = Path(__file__).resolve().parents[2] / "docs" / "examples" / "thirdparty.py"
_spec = importlib.util.spec_from_file_location("_thirdparty_adapters", ADAPTERS)
TP = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TP)             # imports no library: each adapter imports its own

D = 32
LLAMA3 = "base=500000,scaling=llama3,factor=8,original=8192"


def props(report):
    return {p.name: p for p in report.properties}


@pytest.fixture(scope="module")
def tl():
    pytest.importorskip("transformer_lens.components",
                        reason="transformer-lens 3.x (HookedTransformer's attention) not installed")
    from transformer_lens import HookedTransformerConfig
    from transformer_lens.components import Attention

    def attention(d=D, **kw):
        kw.setdefault("n_ctx", 2048)
        kw.setdefault("rotary_dim", d)
        cfg = HookedTransformerConfig(n_layers=1, d_model=d, d_head=d, n_heads=1, act_fn="gelu",
                                      attn_only=True, positional_embedding_type="rotary", **kw)
        return Attention(cfg).eval()
    return attention


@pytest.fixture(scope="module")
def tt():
    pytest.importorskip("torchtune.models.llama3_1", reason="torchtune (and torchao) not installed")
    from torchtune.models.llama3_1 import Llama3ScaledRoPE
    from torchtune.modules import RotaryPositionalEmbeddings
    return RotaryPositionalEmbeddings, Llama3ScaledRoPE


# --- transformer-lens: the shipped configurations pass ------------------------------------------

@pytest.mark.parametrize("name, expect, pairing, rotary", [
    ("rope_transformer_lens", "base=10000,pairing=half,fraction=1", "half", D),
    ("rope_transformer_lens_neox", "base=10000,pairing=half,fraction=0.25", "half", D // 4),
    ("rope_transformer_lens_gptj", "base=10000,pairing=interleaved,fraction=0.25", "interleaved",
     D // 4),
])
def test_transformer_lens_rotary_conforms_with_its_n_ctx_table(tl, name, expect, pairing, rotary):
    report = check_callable(getattr(TP, name), "rope", dim=D, expect=expect)
    assert report.ok, report.text()
    p = props(report)
    assert report.summary["pairing"] == pairing and report.summary["base"] == 10000.0
    assert f"r = {rotary} rotary dims" in p["pairing"].detail, report.text()
    assert report.summary["table_size"] == 2048
    assert "a table of 2048 positions" in p["large positions"].detail
    assert p["expected"].status == "pass" and p["float32 drift"].status == "pass"


def test_transformer_lens_default_pairing_is_half_not_interleaved(tl):
    # HookedTransformerConfig.rotary_adjacent_pairs is False: NeoX's pairing, not GPT-J's
    report = check_callable(TP.rope_transformer_lens, "rope", dim=D, expect="pairing=interleaved")
    assert "pairing is half, expected interleaved" in props(report)["expected"].detail, report.text()


def test_transformer_lens_table_grown_to_n_ctx_is_found(tl):
    # n_ctx 4096: the table starts at 2048 rows and _extend_rotary_embeddings grows it to n_ctx
    report = check_callable(TP.transformer_lens_rope(n_ctx=4096), "rope", dim=D,
                            expect="base=10000,pairing=half")
    assert report.ok and report.summary["table_size"] == 4096, report.text()


def test_transformer_lens_through_the_command_line(tl, main):
    r = main("check", f"{ADAPTERS}:rope_transformer_lens_gptj", "--dim", str(D),
             "--expect", "base=10000,pairing=interleaved,fraction=0.25")
    assert r.returncode == 0, r.stdout + r.stderr
    r = main("check", f"{ADAPTERS}:rope_transformer_lens_gptj", "--dim", str(D),
             "--expect", "base=10000,pairing=interleaved,fraction=1")
    assert r.returncode == 1 and "8 of 32 dims rotate (fraction 0.25), expected fraction 1" in r.stdout


# --- transformer-lens: broken uses are flagged --------------------------------------------------

def _tl_bugs(tl):
    a = tl()

    def no_offset(x, p):                    # decoding one token at a time, offset left at 0
        x, shape = torch.as_tensor(x), np.shape(x)
        x4 = x.reshape(-1, shape[-2], 1, shape[-1])
        return torch.cat([a.apply_rotary(x4[:, i:i + 1]) for i in range(shape[-2])], 1).reshape(shape)

    def whole_sequence(x, p):               # apply_rotary on the whole call: positions 0..seq-1
        x = torch.as_tensor(x)
        return a.apply_rotary(x.reshape(-1, x.shape[-2], 1, x.shape[-1])).reshape(x.shape)

    def off_by_one(x, p):                   # past_kv_pos_offset = cache length + 1
        return TP.transformer_lens_apply(a, x, torch.as_tensor(p) + 1)

    def config(**kw):
        b = tl(**kw)
        return lambda x, p: TP.transformer_lens_apply(b, x, p)

    bf16 = tl(dtype=torch.bfloat16)         # tables made in the model's dtype

    def bfloat16_tables(x, p):
        return TP.transformer_lens_apply(bf16, torch.as_tensor(x, dtype=torch.float32), p)

    half = "base=10000,pairing=half"
    return {
        "decode without offset": (no_offset, None, None, "uses positions",
                                  "the positions are ignored: f(x, p) = x for every p"),
        "whole sequence": (whole_sequence, None, None, "uses positions",
                           "rotate by 0..seq−1 (an arange) instead of the positions"),
        "offset by one": (off_by_one, None, None, "uses positions",
                          "positions start at 1: f(x, p) = RoPE(x, p + 1)"),
        "rotary_base 500000": (config(rotary_base=500000), half, None, "expected",
                               "base is 500000, expected 10000"),
        "GPT-J pairing for NeoX weights": (config(rotary_adjacent_pairs=True), half, None,
                                           "expected", "pairing is interleaved, expected half"),
        "rotary_dim d/4 for a full rotary": (config(rotary_dim=D // 4), half + ",fraction=1", None,
                                             "expected", "8 of 32 dims rotate (fraction 0.25)"),
        "n_ctx 2048 for 4096 positions": (config(), half, 4096, "float32 drift",
                                          "raised below --max-positions"),
        "bfloat16 tables": (bfloat16_tables, half, None, "half precision",
                            "the cos/sin tables are bfloat16"),
    }


TL_BUGS = ["decode without offset", "whole sequence", "offset by one", "rotary_base 500000",
           "GPT-J pairing for NeoX weights", "rotary_dim d/4 for a full rotary",
           "n_ctx 2048 for 4096 positions", "bfloat16 tables"]


@pytest.mark.parametrize("bug", TL_BUGS)
def test_transformer_lens_broken_use_is_named(tl, bug):
    fn, expect, max_positions, prop, message = _tl_bugs(tl)[bug]
    report = check_callable(fn, "rope", dim=D, expect=expect, max_positions=max_positions)
    assert not report.ok, report.text()
    p = props(report)[prop]
    assert p.status == "fail" and message in p.detail, report.text()


# --- torchtune: the shipped configurations pass -------------------------------------------------

def test_torchtune_rotary_conforms_with_its_max_seq_len_cache(tt):
    report = check_callable(TP.rope_torchtune, "rope", dim=D, expect="base=10000,pairing=interleaved")
    assert report.ok, report.text()
    assert report.summary["pairing"] == "interleaved" and report.summary["base"] == 10000.0
    assert report.summary["table_size"] == 4096
    assert props(report)["float32 drift"].status == "pass"


def test_torchtune_llama3_scaled_rope_conforms_with_its_scaling_stated(tt):
    report = check_callable(TP.rope_torchtune_llama3_1, "rope", dim=D, expect=LLAMA3)
    assert report.ok, report.text()
    p = props(report)
    assert f"the scaled frequencies of rope:{LLAMA3}" in p["frequencies"].detail, report.text()
    assert p["expected"].status == "pass" and p["float32 drift"].status == "pass"
    assert report.summary["table_size"] == 131072


def test_torchtune_llama3_scaling_unstated_is_read_as_a_per_band_factor(tt):
    report = check_callable(TP.rope_torchtune_llama3_1, "rope", dim=D)
    p = props(report)["frequencies"]
    assert p.status == "fail" and "a per-band factor from 1 to 8" in p.detail, report.text()


def test_torchtune_through_the_command_line_in_a_child_process(tt):
    report = check_target(f"{ADAPTERS}:rope_torchtune_llama3_1", dim=D, expect=LLAMA3)
    assert report.ok, report.text()
    report = check_target(f"{ADAPTERS}:rope_torchtune_llama3_1", dim=D,
                          expect=LLAMA3.replace("factor=8", "factor=32"))
    assert not report.ok and "a factor rising to 8" in props(report)["expected"].detail, report.text()


# --- torchtune: broken uses are flagged ---------------------------------------------------------

def _tt_bugs(tt):
    RoPE, Llama3 = tt
    rope = RoPE(D)

    def no_input_pos(x, p):                 # a decoding step called like a training step
        x = torch.as_tensor(x)
        return rope(x.reshape(-1, x.shape[-2], 1, x.shape[-1])).reshape(x.shape)

    def off_by_one(x, p):
        return TP.torchtune_apply(rope, x, torch.as_tensor(p) + 1)

    altered = RoPE(D)                       # theta edited, the cache rebuilt from it
    with torch.no_grad():
        altered.theta.mul_(1.01)
    altered.build_rope_cache(4096)

    def module(m):
        return lambda x, p: TP.torchtune_apply(m, x, p)

    return {
        "no input_pos": (no_input_pos, None, "uses positions",
                         "rotate by 0..seq−1 (an arange) instead of the positions"),
        "input_pos + 1": (off_by_one, None, "uses positions",
                          "positions start at 1: f(x, p) = RoPE(x, p + 1)"),
        "theta x 1.01": (module(altered), None, "frequencies",
                         "linear scaling ×0.9901 (position interpolation)?"),
        "Llama3ScaledRoPE without base=500000": (module(Llama3(D, max_seq_len=8192)), LLAMA3,
                                                 "expected", "with base 10000"),
        "scale_factor 32 (Llama 3.2) for 8": (module(Llama3(D, max_seq_len=8192, base=500000,
                                                            scale_factor=32)),
                                               LLAMA3, "expected", "a factor rising to 32"),
        "unscaled RoPE for Llama 3.1": (module(RoPE(D, max_seq_len=8192, base=500000)), LLAMA3,
                                        "expected", f"not the expected rope:{LLAMA3}"),
    }


TT_BUGS = ["no input_pos", "input_pos + 1", "theta x 1.01", "Llama3ScaledRoPE without base=500000",
           "scale_factor 32 (Llama 3.2) for 8", "unscaled RoPE for Llama 3.1"]


@pytest.mark.parametrize("bug", TT_BUGS)
def test_torchtune_broken_use_is_named(tt, bug):
    fn, expect, prop, message = _tt_bugs(tt)[bug]
    report = check_callable(fn, "rope", dim=D, expect=expect)
    assert not report.ok, report.text()
    p = props(report)[prop]
    assert p.status == "fail" and message in p.detail, report.text()


# --- the bug set's hand-written stand-ins against the real code ---------------------------------

def _compare(ours, theirs, positions):
    x = torch.randn(3, len(positions), D, generator=torch.Generator().manual_seed(0))
    p = torch.tensor(positions)
    np.testing.assert_allclose(ours(x, p).numpy(), theirs(x, p).numpy(), rtol=0, atol=2e-6)


@pytest.mark.parametrize("fraction", [1.0, 0.25])
def test_realistic_transformer_lens_is_its_gptj_configuration(tl, fraction):
    def ours(x, p):
        return R.transformer_lens(x, p, rotary_dim=int(D * fraction))
    _compare(ours, TP.transformer_lens_rope(rotary_fraction=fraction, adjacent_pairs=True),
             [0, 1, 5, 17, 1000, 2047])


def test_realistic_torchtune_is_torchtunes_module(tt):
    _compare(R.torchtune, TP.rope_torchtune, [0, 1, 5, 17, 1000, 4095])
