"""JSON-lines files kept compressed (posenc.compressed): either form reads the
same, the same rows give the same bytes, and a damaged compressed file is one line."""

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.compressed import read_jsonl, stored_file, write_jsonl_gz
from posenc.errors import PosencError

ROWS = [{"kind": "header", "format": 1}, {"kind": "record", "step": 0, "seed": [[0.25, None]]},
        {"kind": "record", "step": 25, "seed": [[-1.5e-07, 3.0]]}]

values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8)
                      | st.floats(allow_nan=False, allow_infinity=False),
                      lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=12)


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(values, max_size=5))
def test_rows_read_back_from_either_form(tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("rows")
    (folder / "plain.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    written = write_jsonl_gz(folder / "packed.jsonl", rows)
    assert written == folder / "packed.jsonl.gz"
    assert read_jsonl(written) == read_jsonl(folder / "plain.jsonl") == rows


def test_the_compressed_file_replaces_the_plain_one_and_its_bytes_repeat(tmp_path):
    plain = tmp_path / "d.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in ROWS))  # a folder written before
    assert stored_file(tmp_path, "d.jsonl") == plain
    first = write_jsonl_gz(plain, ROWS).read_bytes()
    assert not plain.exists() and stored_file(tmp_path, "d.jsonl") == tmp_path / "d.jsonl.gz"
    assert write_jsonl_gz(plain, ROWS).read_bytes() == first
    assert first[4:8] == bytes(4)  # the header's time stamp: none
    assert gzip.decompress(first) == "".join(json.dumps(r) + "\n" for r in ROWS).encode()
    assert stored_file(tmp_path, "other.jsonl") is None


@pytest.mark.parametrize("damage", ["truncated", "flipped", "not gzip", "empty"])
def test_a_damaged_compressed_file_is_one_line(tmp_path, damage):
    path = write_jsonl_gz(tmp_path / "d.jsonl", ROWS * 20)
    data = path.read_bytes()
    if damage == "truncated":  # e.g. a copy cut short
        data = data[:len(data) // 2]
    elif damage == "flipped":  # a byte of the compressed stream changed
        middle = len(data) // 2
        data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]
    elif damage == "not gzip":
        data = b"".join(json.dumps(r).encode() + b"\n" for r in ROWS)
    else:
        data = b""
    path.write_bytes(data)
    with pytest.raises(PosencError) as err:
        read_jsonl(path)
    message = str(err.value)
    assert message.startswith(f"{path} is damaged") and "\n" not in message, message
    if damage in ("truncated", "empty"):
        assert "truncated" in message


def test_a_damaged_plain_file_is_one_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"kind": "header"}\n{"kind": "rec')
    with pytest.raises(PosencError, match="d.jsonl is damaged"):
        read_jsonl(path)
