"""Without transformers, ``check --from-hf`` names the extra that brings it: ``hf``."""

import sys

import pytest

from posenc.checker import hf_code
from posenc.errors import PosencError


def test_missing_transformers_names_the_hf_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers -> ImportError
    with pytest.raises(PosencError) as info:
        hf_code._transformers()
    message = str(info.value)
    assert "pip install 'posenc[hf]'" in message and "thirdparty" not in message, message
