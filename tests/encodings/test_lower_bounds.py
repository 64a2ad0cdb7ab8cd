"""Lower bounds beside the upper ones (posenc.limits.MIN_SCALE, MIN_BASE): every scaling number of
a RoPE (factor, attention_factor, YaRN's betas, Llama 3's frequency factors, LongRoPE's per-plane
factors) is at least 1/MAX_SCALE, every base (rope, mla, xpos, sinusoidal; ``--from-hf``'s
rope_theta) above 1 -- in the catalogue, in ``--from-hf`` and on the command line, one line each.
A linear factor of 1e-300 printed a spectrum of cos(p * 1e300); rope_theta 1e-300 trained."""

from __future__ import annotations

import json

import pytest

from posenc.cli import main
from posenc.encodings import parse_spec
from posenc.encodings.hf_config import spec_from_hf_config
from posenc.errors import PosencError
from posenc.limits import MAX_SCALE, MIN_BASE, MIN_SCALE

LLAMA = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
         "max_position_embeddings": 8192}


@pytest.mark.parametrize("text, words", [
    ("rope:scaling=linear,factor=1e-300", "factor must be a positive number at least 1e-06"),
    ("rope:scaling=ntk,factor=1e-7", "factor must be a positive number at least 1e-06"),
    ("rope:scaling=yarn,factor=4,attention_factor=1e-300", "attention_factor must be a positive"),
    ("rope:scaling=yarn,factor=4,beta_fast=32,beta_slow=1e-300", "beta_slow must be a positive"),
    ("rope:scaling=llama3,factor=8,low_freq_factor=1e-300", "low_freq_factor must be a positive"),
    ("rope:scaling=longrope,factor=2,short_factor=1;1e-300,long_factor=1;1",
     "short_factor must be positive numbers F0;F1;... each at least 1e-06"),
    ("rope:base=1e-300", "rope: base must be a number > 1"),
    ("rope:base=1", "rope: base must be a number > 1"),
    ("mla:base=0.5", "mla: base must be a number > 1"),
    ("xpos:base=1e-300", "xpos: base must be a number > 1"),
    ("sinusoidal:base=1e-300", "sinusoidal: base must be a number > 1"),
])
def test_the_catalogue_refuses_numbers_below_their_bound(text, words):
    with pytest.raises(PosencError) as err:
        parse_spec(text)
    assert words in str(err.value) and "\n" not in str(err.value), err.value


@pytest.mark.parametrize("text", [
    f"rope:scaling=linear,factor={MIN_SCALE!r}", f"rope:scaling=linear,factor={MAX_SCALE:g}",
    "rope:base=1.000001", "rope:scaling=yarn,factor=0.5,beta_fast=2e-6,beta_slow=1e-6",
    "xpos:base=1.5", "sinusoidal:base=2"])
def test_numbers_at_or_inside_the_bounds_are_taken(text):
    parse_spec(text)


@pytest.mark.parametrize("config, words", [
    ({**LLAMA, "rope_theta": 1e-300}, "rope_theta: must be a number above 1 and at most 1e+15"),
    ({**LLAMA, "rope_theta": 1}, "rope_theta: must be a number above 1"),
    ({**LLAMA, "rope_theta": 0.5, "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
     "rope_theta: must be a number above 1"),
    ({**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 1e-300}},
     "factor: must be a positive number at least 1e-06 and at most 1e+06; got 1e-300"),
    ({**LLAMA, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1e-300,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 2048}},
     "low_freq_factor: must be a positive number at least 1e-06"),
    ({**LLAMA, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "attention_factor": 1e-300}},
     "attention_factor: must be a positive number at least 1e-06"),
    ({**LLAMA, "partial_rotary_factor": 0}, "partial_rotary_factor: must be a positive number"),
])
def test_from_hf_refuses_numbers_below_their_bound(config, words):
    with pytest.raises(PosencError) as err:
        spec_from_hf_config(config)
    assert words in str(err.value) and "\n" not in str(err.value), err.value


def test_from_hf_takes_a_base_just_above_1():
    assert spec_from_hf_config({**LLAMA, "rope_theta": MIN_BASE * 1.001})[0].startswith(
        "rope:base=1.001,")


def _one_line(capsys, argv, words):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and words in err, err


def test_bound_refuses_a_linear_factor_of_1e_300(capsys):
    _one_line(capsys, ["bound", "rope:scaling=linear,factor=1e-300", "--n", "8"],
              "factor must be a positive number at least 1e-06")


def test_train_from_hf_refuses_rope_theta_1e_300(capsys, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**LLAMA, "rope_theta": 1e-300}))
    _one_line(capsys, ["train", "--preset", "smoke", "--from-hf", str(config), "--out",
                       str(tmp_path / "run")], "rope_theta: must be a number above 1")
    assert not (tmp_path / "run").exists()
