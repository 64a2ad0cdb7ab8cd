"""Which torch components a catalogue spec asks for, and factories to build them.

``plan_for(spec)`` splits any catalogue entry into at most four parts:
an absolute embedding added to the input, an additive attention bias, a
rotation of queries and keys, or MLA attention.  The mapping:

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
=====================  =====================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from torch import nn

from ...encodings import (MLA, ALiBi, Custom, Hybrid, LearnedAbsolute, NoPE, PESpec,
                          RelativeBias, RoPE, Sinusoidal)
from ...errors import PosencError
from . import absolute, bias, rotary


@dataclass(frozen=True)
class PEPlan:
    spec: PESpec
    absolute: Optional[str] = None  # "sinusoidal" or "learned" embedding added to the input
    absolute_base: float = 10000.0  # sinusoidal base
    absolute_layout: str = "interleaved"  # sinusoidal layout: interleaved or half
    absolute_max_len: Optional[int] = None  # learned table length; None = the model's length
    bias: Optional[PESpec] = None  # RelativeBias, ALiBi or Custom(kernel)
    rotary: Optional[PESpec] = None  # RoPE or Custom(frequencies)
    mla: Optional[MLA] = None

    @property
    def bias_learned(self) -> bool:
        """Whether the bias has parameters (one per layer) or is fixed (shareable)."""
        return isinstance(self.bias, RelativeBias)

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
        b = self.bias
        if b is None:
            return None
        if isinstance(b, ALiBi):
            return bias.AlibiBias(n_heads, b.slopes, b.direction)
        if isinstance(b, RelativeBias):
            if b.mode == "t5":
                return bias.T5Bias(n_heads, b.num_buckets, b.max_distance)
            return bias.TableBias(n_heads, b.max_distance)
        assert isinstance(b, Custom) and b.kernel is not None
        return bias.KernelBias(b.kernel)

    def make_rotary(self, head_dim: int, n_heads: int) -> Optional[nn.Module]:
        r = self.rotary
        if r is None:
            return None
        if isinstance(r, RoPE):
            return rotary.rope_rotary(r, head_dim, n_heads)
        assert isinstance(r, Custom) and r.frequencies is not None
        return rotary.frequency_rotary(r.frequencies, head_dim, n_heads)


def _additive(spec: PESpec) -> dict:
    if isinstance(spec, Sinusoidal):
        return {"absolute": "sinusoidal", "absolute_base": spec.base,
                "absolute_layout": spec.layout}
    if isinstance(spec, LearnedAbsolute):
        return {"absolute": "learned", "absolute_max_len": spec.max_len}
    return {"bias": spec}


def plan_for(spec: PESpec) -> PEPlan:
    """Decompose a catalogue spec into absolute / bias / rotary / MLA parts."""
    if isinstance(spec, NoPE):
        return PEPlan(spec)
    if isinstance(spec, (Sinusoidal, LearnedAbsolute, RelativeBias, ALiBi)):
        return PEPlan(spec, **_additive(spec))
    if isinstance(spec, RoPE):
        return PEPlan(spec, absolute="sinusoidal" if spec.add_absolute else None, rotary=spec)
    if isinstance(spec, MLA):
        return PEPlan(spec, absolute=None if spec.absolute == "none" else spec.absolute, mla=spec)
    if isinstance(spec, Hybrid):
        return PEPlan(spec, rotary=spec.rope, **_additive(spec.additive))
    if isinstance(spec, Custom):
        return PEPlan(spec, bias=spec) if spec.kernel is not None else PEPlan(spec, rotary=spec)
    raise PosencError(f"the empirical layer cannot build PE {spec.name!r}")
