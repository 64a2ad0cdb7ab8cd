"""The RoPE per-plane identity <R_i q, R_j k> = Re sum_m q~_m conj(k~_m) e^{i theta_m (i-j)}.

Proved symbolically (symbolic angles, coordinates and integer positions) for
both pairings; negative controls show that the proof procedure rejects a
wrong kernel or a wrong pairing.
"""

import pytest
import sympy as sp

from posenc.theory.conventions import pair
from posenc.theory.rotary import complex_coordinate, dot, plane_identity_difference, rotate
from posenc.theory.symbols import I_POS, J_POS
from posenc.theory.toeplitz import reduce_trig


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
@pytest.mark.parametrize("head_dim", [2, 4, 6])
def test_plane_identity_is_proved(pairing, head_dim):
    assert plane_identity_difference(pairing, head_dim) == 0


def _difference(pairing_rot, pairing_form, head_dim, sign=1):
    q = sp.Matrix(sp.symbols(f"q_0:{head_dim}", real=True))
    k = sp.Matrix(sp.symbols(f"k_0:{head_dim}", real=True))
    thetas = sp.symbols(f"theta_0:{head_dim // 2}", real=True)
    rot = [(*pair(pairing_rot, m, head_dim), thetas[m]) for m in range(head_dim // 2)]
    form = [(*pair(pairing_form, m, head_dim), thetas[m]) for m in range(head_dim // 2)]
    lhs = dot(rotate(q, rot, I_POS), rotate(k, rot, J_POS))
    rhs = sum(sp.re(complex_coordinate(q, a, b) * sp.conjugate(complex_coordinate(k, a, b))
                    * sp.exp(sign * sp.I * th * (I_POS - J_POS))) for a, b, th in form)
    return reduce_trig(sp.expand_complex(lhs - rhs))


def test_wrong_kernel_sign_is_rejected():
    assert _difference("interleaved", "interleaved", 2, sign=-1) != 0


def test_pairing_mismatch_is_rejected():
    assert _difference("half", "interleaved", 4) != 0
    assert _difference("half", "half", 4) == 0


def test_rotation_is_the_complex_multiplication():
    """(a + ib) e^{i p theta} = rotated (a, b): the catalogue's rotation convention."""
    a, b, th = sp.symbols("a b theta", real=True)
    rotated = rotate(sp.Matrix([a, b]), [(0, 1, th)], I_POS)
    z = sp.expand_complex((a + sp.I * b) * sp.exp(sp.I * I_POS * th))
    assert sp.expand(sp.re(z) - rotated[0]) == 0 and sp.expand(sp.im(z) - rotated[1]) == 0
