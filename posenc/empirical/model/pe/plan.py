"""Which torch components a catalogue spec asks for, and factories to build them.

``plan_for(spec)`` reads the catalogue's split of a spec into parts
(:mod:`posenc.encodings.parts`): an absolute embedding added to the input, an additive
attention bias, a rotation of queries and keys, or MLA attention, and maps each
part kind to a torch module (``BIAS_FORMULAS``, ``ROTARY_FORMULAS``); a kind with
no module is an error.  The mapping:

=====================  =====================================================
spec                   components
=====================  =====================================================
nope                   none
sinusoidal             absolute sinusoidal(base)
learned_absolute       absolute learned(max_len)
relative_bias          bias: T5 buckets or per-offset table (one per layer)
alibi                  bias: fixed slopes
rope                   rotary; ``add_absolute`` adds sinusoidal(10000) input
mla                    MLA attention; ``absolute`` adds learned (model max_len)
                       or sinusoidal(10000) input
hybrid                 the additive part (absolute or bias) + rotary
custom kernel          bias g(i - j), shared by heads
custom frequencies     rotary with the given plane frequencies
xpos                   rotary with per-plane decay (XPosRotary)
kerple_log             bias -r1 log(1 + r2|i-j|), r1, r2 learned per head
=====================  =====================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from torch import nn

from ....encodings import MLA, PESpec
from ....errors import PosencError
from ....encodings.parts import Part, structure, unknown_part
from . import absolute, bias, rotary


@dataclass(frozen=True)
class PEPlan:
    spec: PESpec
    absolute: Optional[str] = None  # "sinusoidal" or "learned" embedding added to the input
    absolute_base: float = 10000.0  # sinusoidal base
    absolute_layout: str = "interleaved"  # sinusoidal layout: interleaved or half
    absolute_max_len: Optional[int] = None  # learned table length; None = the model's length
    bias: Optional[Part] = None  # the bias part (kind in BIAS_FORMULAS)
    rotary: Optional[Part] = None  # the rotary part (kind in ROTARY_FORMULAS)
    mla: Optional[MLA] = None

    @property
    def bias_learned(self) -> bool:
        """Whether the bias has parameters (one per layer) or is fixed (shareable)."""
        return self.bias is not None and self.bias.learned

    def make_absolute(self, d_model: int, max_len: int) -> Optional[nn.Module]:
        if self.absolute is None:
            return None
        if self.absolute == "sinusoidal":
            return absolute.SinusoidalAbsolute(d_model, self.absolute_base, self.absolute_layout)
        length = self.absolute_max_len if self.absolute_max_len is not None else max_len
        if length < max_len:
            raise PosencError(f"learned_absolute: max_len {length} is shorter than the "
                              f"sequence length {max_len}")
        return absolute.LearnedAbsolute(d_model, length)

    def make_bias(self, n_heads: int) -> Optional[nn.Module]:
        return None if self.bias is None else BIAS_FORMULAS[self.bias.kind](self.bias.spec, n_heads)

    def make_rotary(self, head_dim: int, n_heads: int) -> Optional[nn.Module]:
        if self.rotary is None:
            return None
        return ROTARY_FORMULAS[self.rotary.kind](self.rotary.spec, head_dim, n_heads)


#: bias part kind -> (part spec, n_heads) -> module; rotary part kind -> (part spec, head_dim,
#: n_heads) -> module.  Each table lives beside its modules (bias.py, rotary.py).
BIAS_FORMULAS: dict[str, Callable[..., nn.Module]] = bias.BIAS_FORMULAS
ROTARY_FORMULAS: dict[str, Callable[..., nn.Module]] = rotary.ROTARY_FORMULAS
#: mla part kind -> the rotation of MLA's decoupled path (mla.MLAAttention builds it from the
#: spec; mla_paper_code is the paper code's PaperCodeMix, not a rotation).
MLA_FORMULAS: dict[str, Callable[..., nn.Module]] = rotary.MLA_FORMULAS


def plan_for(spec: PESpec) -> PEPlan:
    """Decompose a catalogue spec into absolute / bias / rotary / MLA parts."""
    fields: dict = {}
    for part in structure(spec).parts:
        if part.role == "absolute" and part.kind == "sinusoidal":
            fields.update(absolute="sinusoidal", absolute_base=part.spec.base,
                          absolute_layout=part.spec.layout)
        elif part.role == "absolute" and part.kind == "learned":
            fields.update(absolute="learned",
                          absolute_max_len=None if part.spec is None else part.spec.max_len)
        elif part.role == "bias" and part.kind in BIAS_FORMULAS:
            fields["bias"] = part
        elif part.role == "rotary" and part.kind in ROTARY_FORMULAS:
            fields["rotary"] = part
        elif part.role == "mla" and part.kind in MLA_FORMULAS:
            fields["mla"] = part.spec
        else:
            raise unknown_part("empirical", part, spec)
    return PEPlan(spec, **fields)
