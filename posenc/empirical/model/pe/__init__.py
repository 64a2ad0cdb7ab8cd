"""Torch implementations of every catalogue PE, written from the conventions in
:mod:`posenc.encodings` (never from ``posenc.theory`` or ``posenc.numerics``).

* :mod:`.rotary` -- RoPE (Su et al. 2021), partial / p-RoPE / custom frequencies;
* :mod:`.bias` -- additive attention biases: ALiBi (Press et al. 2022), T5
  buckets (Raffel et al. 2020), per-offset tables, custom kernels g(i - j);
* :mod:`.absolute` -- sinusoidal (Vaswani et al. 2017) and learned absolute;
* :mod:`.plan` -- which of the above a catalogue spec asks for.
"""

from .absolute import LearnedAbsolute, SinusoidalAbsolute, sinusoidal_table  # noqa: F401
from .bias import (AlibiBias, KernelBias, T5Bias, TableBias, alibi_slopes,  # noqa: F401
                   t5_buckets)
from .plan import PEPlan, plan_for  # noqa: F401
from .rotary import Rotary  # noqa: F401
