import os
import sys

import pytest

pytest.importorskip("transformers")
sys.path.insert(0, os.path.dirname(__file__))
