"""``--from-hf`` against hostile configs: only regular files are read, with a
size cap and a nesting bound; every number is range-checked; whatever the JSON holds, the
reader returns a spec or raises one PosencError line -- never a traceback, never a hang."""

from __future__ import annotations

import json
import os
import signal

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from posenc.encodings.hf_config import (DEFAULTS, MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, ROPE_COMMON,
                                        ROPE_KEYS, TRANSFORMERS_READS, spec_from_hf_config)
from posenc.errors import PosencError

from test_hf_config import CASES


@pytest.fixture
def alarm():
    """Fail (instead of hanging the suite) if a read blocks for 10 s."""
    def stop(*_):
        raise TimeoutError("the read blocked")
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def refused(source, words):
    with pytest.raises(PosencError) as exc:
        spec_from_hf_config(source)
    text = str(exc.value)
    assert words in text and "\n" not in text and len(text) < 400, text


def test_a_fifo_is_refused_without_blocking(tmp_path, alarm):
    os.mkfifo(tmp_path / "config.json")                  # no writer: open() would block
    refused(tmp_path / "config.json", "not a regular file")
    refused(tmp_path, "not a regular file")              # the folder holding it


@pytest.mark.skipif(not os.path.exists("/dev/urandom"), reason="no /dev/urandom")
def test_a_device_is_refused_without_reading(alarm):
    refused("/dev/urandom", "not a regular file")


def test_a_file_over_the_cap_is_refused_unread(tmp_path):
    path = tmp_path / "config.json"
    with open(path, "wb") as fh:                         # sparse: nothing is written
        fh.truncate(MAX_CONFIG_BYTES + 1)
    refused(path, "16 MiB")


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a":' * 5000 + "1" + "}" * 5000,
                                  '{"model_type": "llama", "x": ' + "[" * 33 + "]" * 33 + "}"],
                         ids=["lists", "objects", "33 levels"])
def test_deep_nesting_is_refused_before_parsing(tmp_path, text):
    path = tmp_path / "config.json"
    path.write_text(text)
    refused(path, f"the limit is {MAX_CONFIG_DEPTH}")


def test_brackets_inside_strings_do_not_count(tmp_path):
    path = tmp_path / "config.json"
    config = {**CASES["llama"][0], "architectures": ["[" * 1000, "{\\\"" * 50]}
    path.write_text(json.dumps(config))
    assert spec_from_hf_config(path)[0] == CASES["llama"][1]


@pytest.mark.parametrize("levels, ok", [(MAX_CONFIG_DEPTH, True), (MAX_CONFIG_DEPTH + 1, False)])
def test_a_dict_and_its_json_text_meet_the_same_depth_limit(tmp_path, levels, ok):
    """The config itself is level 1 in both counts: a dict and the file holding its JSON are
    both taken, or both refused."""
    config: dict = {}
    for _ in range(levels - 2):
        config = {"x": config}
    config = {**CASES["llama"][0], "x": config}  # levels in all
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert json.dumps(config).count("{") == levels
    for source in (config, path):
        if ok:
            assert spec_from_hf_config(source)[0] == CASES["llama"][1]
        else:
            refused(source, f"{MAX_CONFIG_DEPTH}")


def test_a_deep_dict_from_the_api_is_refused():
    deep: dict = {"model_type": "llama"}
    for _ in range(2000):
        deep = {"x": deep}
    refused({"model_type": "llama", "quantization_config": deep}, "nests more than")


LLAMA = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4}


@pytest.mark.parametrize("config, words", [
    ({**LLAMA, "head_dim": 10**400}, "head_dim: must be an integer in [1, 65536]; got an integer of"),
    ({**LLAMA, "hidden_size": 10**5000}, "hidden_size"),
    ({**LLAMA, "rope_theta": 10**400}, "rope_theta: must be a number above 1 and at most 1e+15"),
    ({**LLAMA, "rope_scaling": {"rope_type": ["yarn"], "factor": 2.0}}, "rope_type: must be a string"),
    ({**LLAMA, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "attention_factor": 1e200}},
     "attention_factor: must be a positive number at least 1e-06 and at most 1e+06"),
    ({**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": float("nan")}}, "factor"),
    ({**LLAMA, "max_position_embeddings": 2.5, "rope_scaling": {"type": "dynamic", "factor": 2}},
     "max_position_embeddings"),
    ({**LLAMA, "rope_theta": 10**400, "rope_parameters": {"rope_theta": 10**400 + 1}},
     "two values of the RoPE base"),
])
def test_out_of_range_numbers_and_wrong_types_are_one_line(config, words):
    refused(config, words)


def test_a_huge_attention_factor_is_refused_by_the_catalogue_too():
    from posenc.encodings import parse_spec
    with pytest.raises(PosencError, match="at most 1e"):
        parse_spec("rope:scaling=yarn,factor=4,original=2048,attention_factor=1e200")


# --- hostile JSON: a spec or one PosencError line, whatever the values ---------------------------

KNOWN = sorted({k for keys in TRANSFORMERS_READS.values() for k in keys}
               | {k for d in DEFAULTS.values() for k in d}
               | {"head_dim", "alibi", "attn_config", "is_decoder", "offset_alibi", "rotary"})
ROPE = sorted(set(ROPE_COMMON) | {k for keys in ROPE_KEYS.values() for k in keys})

scalars = st.one_of(st.none(), st.booleans(), st.text(max_size=8),
                    st.integers(min_value=-10**500, max_value=10**500),
                    st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, 1, 2, 8, 64, 2048, 0.5, 1e200, -1, "yarn", "llama3",
                                     "dynamic", "longrope", "linear", "default"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(ROPE + KNOWN), inner, max_size=4)),
    max_leaves=12)
rope_dicts = st.dictionaries(st.sampled_from(ROPE), values, max_size=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(CASES)), st.dictionaries(st.sampled_from(KNOWN), values, max_size=4),
       st.one_of(st.none(), rope_dicts), st.sampled_from(["rope_parameters", "rope_scaling"]))
def test_hostile_configs_give_a_spec_or_one_line(case, overrides, rope, rope_key):
    config = {**CASES[case][0], **overrides}
    if rope is not None:
        config[rope_key] = rope
    try:
        spec, info = spec_from_hf_config(config)
    except PosencError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 1000
        return
    assert isinstance(spec, str) and isinstance(info["notes"], list)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
                 st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=40)
                 .map(lambda v: json.dumps({"model_type": "llama", "rope_scaling": v}))))
def test_hostile_files_give_a_spec_or_one_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        spec_from_hf_config(path)
    except PosencError as exc:
        assert "\n" not in str(exc)
