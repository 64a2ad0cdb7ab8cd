"""posenc: the mathematics of positional encodings in Transformers.

Built around Gu et al., "Deconstructing Positional Information: From Attention
Logits to Training Biases" (arXiv 2505.13027, ICLR 2026).  Layers: ``theory``
(sympy), ``numerics`` (numpy/scipy), ``empirical`` (torch) and ``proofs``,
which holds them against each other; ``encodings`` is the shared catalogue.
"""

from .encodings import PESpec, all_entries, parse_spec, spec_from_dict  # noqa: F401
from .errors import PosencError  # noqa: F401

__version__ = "0.1.0"
