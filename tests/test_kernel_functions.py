"""Every layer's table of kernel-expression functions has exactly the names of
posenc.encodings.expression.FUNCTIONS, and the functions agree on sample arguments (each layer writes its
own table: a missing or extra name would make a custom kernel parse and then fail, or differ,
in one layer only)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

from posenc.empirical.model.pe.bias import TORCH_FUNCTIONS
from posenc.encodings.expression import FUNCTIONS
from posenc.numerics.kernels import NUMPY_FUNCTIONS
from posenc.theory.builders import SYMPY_FUNCTIONS

TABLES = {"theory": SYMPY_FUNCTIONS, "numerics": NUMPY_FUNCTIONS, "empirical": TORCH_FUNCTIONS}


@pytest.mark.parametrize("layer", sorted(TABLES))
def test_table_names_equal_expression_functions(layer):
    assert set(TABLES[layer]) == set(FUNCTIONS)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("args", [(0.7, 2.5), (3.0, -1.25), (-2.0, 0.5)])
def test_tables_agree_on_sample_arguments(name, args):
    a = [abs(x) if name in ("log", "sqrt") else x for x in args[:FUNCTIONS[name]]]
    theory = float(sp.N(SYMPY_FUNCTIONS[name](*[sp.Float(x) for x in a]), 30))
    numerics = float(NUMPY_FUNCTIONS[name](*a))
    empirical = float(TORCH_FUNCTIONS[name](*[torch.tensor(x, dtype=torch.float64) for x in a]))
    assert math.isclose(numerics, theory, rel_tol=1e-13, abs_tol=1e-15)
    assert math.isclose(empirical, theory, rel_tol=1e-13, abs_tol=1e-15)
    assert np.isfinite(theory)
