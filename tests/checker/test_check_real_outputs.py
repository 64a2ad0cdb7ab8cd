"""``posenc check`` takes only real numbers from the user's function: complex
outputs -- whose imaginary part a float conversion drops, so that a rotary function that forgot
``.real`` was reported as conforming -- and boolean, string or object outputs are refused in one
line, for every kind and from every array library (numpy, torch, anything with ``__array__``)."""

import numpy as np
import pytest
import torch

from posenc.checker import check_callable, check_target
from posenc.checker.loading import to_numpy
from posenc.errors import PosencError


def angles(positions, d, base=10000.0):
    inv = base ** (-np.arange(0, d, 2) / d)
    ang = np.asarray(positions, dtype=np.float64)[:, None] * inv[None]
    return np.concatenate([ang, ang], -1)                                   # (seq, d): half split


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def rope_forgot_real(x, positions):
    """RoPE through e^{i p θ}, ``.real`` forgotten: the real part is a correct RoPE."""
    e = np.exp(1j * angles(positions, x.shape[-1]))
    return x * e + rotate_half(x) * e.imag


def rope_real(x, positions):
    return rope_forgot_real(x, positions).real


def rope_qk_forgot_real(q, k, positions):
    return rope_forgot_real(q, positions), rope_forgot_real(k, positions)


def t5_complex(n):
    rel = np.arange(n)[None, :] - np.arange(n)[:, None]
    return np.where(rel > 0, 16, 0) + np.minimum(np.abs(rel), 15) + 0j


def alibi_complex(n_heads, n):
    slopes = 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)
    dist = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    return -slopes[:, None, None] * dist[None] * (1 + 0.5j)


class ArrayLike:
    """A JAX-like result: numpy reads it through ``__array__``."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


def one_line(exc):
    text = str(exc.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("fn, kind, dim", [
    (rope_forgot_real, "rope", 16), (rope_qk_forgot_real, "rope-qk", 16),
    (rope_qk_forgot_real, "xpos", 16), (t5_complex, "t5", 64), (alibi_complex, "bias", 64),
    (lambda x, p: torch.polar(torch.ones_like(x), x), "rope", 16),
    (lambda x, p: ArrayLike(rope_forgot_real(x, p)), "rope", 16),
    (lambda n: [torch.zeros(n, dtype=torch.complex64)] * n, "t5", 64),
    (lambda x, p: rope_forgot_real(x, p), None, 16),
])
def test_complex_outputs_are_refused_for_every_kind(fn, kind, dim):
    with pytest.raises(PosencError) as exc:
        check_callable(fn, kind, dim=dim)
    assert "returned complex numbers" in one_line(exc)


def test_the_real_part_alone_conforms():
    """The refusal is the dtype, not the values: the same function with .real passes."""
    assert check_callable(rope_real, "rope", dim=16).ok


@pytest.mark.parametrize("value, words", [
    (np.ones((2, 4, 4), dtype=bool), "booleans"), (torch.ones(2, 4, 4, dtype=torch.bool), "booleans"),
    (np.full((2, 4, 4), "1.5"), "strings"), ("1.5", "strings"),
    (np.array([1.0, None]), "Python objects"), ({"a": 1}, "Python objects"),
    (ArrayLike(np.ones(3, dtype=complex)), "complex numbers"),
])
def test_non_real_outputs_are_one_line(value, words):
    with pytest.raises(PosencError) as exc:
        to_numpy(value, "f")
    assert words in one_line(exc)


@pytest.mark.parametrize("value", [
    np.arange(3), np.arange(3, dtype=np.uint8), np.ones(3, dtype=np.float16),
    torch.ones(3, dtype=torch.bfloat16), torch.arange(3), ArrayLike(np.ones(3, np.float32)),
    (torch.ones(3), np.ones(3)), [1, 2.5, 3], 4.0,
])
def test_real_outputs_of_any_library_are_float64(value):
    out = to_numpy(value, "f")
    assert out.dtype == np.float64 and np.all(out == np.asarray(out))


def test_the_child_process_refuses_too(tmp_path):
    path = tmp_path / "user.py"
    path.write_text("import numpy as np\n\ndef t5(n):\n    return np.zeros((n, n)) + 0j\n")
    with pytest.raises(PosencError, match="returned complex numbers"):
        check_target(f"{path}:t5", "t5")
