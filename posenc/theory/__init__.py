"""The symbolic layer (sympy): attention-logit forms of every catalogue PE, with proofs.

Gu et al., "Deconstructing Positional Information: From Attention Logits to
Training Biases" (arXiv 2505.13027) split a PE's attention logit into content
and position terms: additive PEs add position terms (input PEs: content-position
cross terms; bias PEs: a Toeplitz bias), multiplicative PEs (RoPE) multiply the
content Gram term of each rotary plane by a relative kernel e^{i theta (i-j)}.

Public API::

    derive(spec, *, head_dim=None, model_dim=None, n_heads=4, prove=True) -> LogitForm
    LogitForm.terms / .family / .declared_family / .analysis / .inputs()
    LogitForm.text() / .latex() / .to_dict() / .to_json()
    LogitForm.to_numpy_function(terms=None, input_pe=True, method="staged") -> LogitFunction
    LogitFunction(values, n=None, *, scale=1.0) -> ndarray (H, n, n)
    prove_toeplitz(expr, table) -> ToeplitzVerdict
    classify_expr(logit, content_i, content_j, table=None) -> HeadClass
    plane_identity_difference(pairing, head_dim) -> sympy expression (0 = proved)

This package imports sympy only (numpy is imported lazily by the numeric
evaluator); it never imports the numeric or empirical layers.
"""

from .classify import HeadClass, classify_expr, combine  # noqa: F401
from .derive import default_head_dim, derive  # noqa: F401
from .form import Analysis, Definition, LogitForm, SpecialCase, Term  # noqa: F401
from .rotary import plane_identity_difference  # noqa: F401
from .toeplitz import ToeplitzVerdict, prove_toeplitz, reduce_trig  # noqa: F401
