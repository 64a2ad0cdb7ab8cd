"""Numeric layer (numpy/scipy only): Toeplitz and Hadamard spectra, bounds, contraction.

Implements the catalogue (:mod:`posenc.encodings`) independently of
``posenc.theory`` and ``posenc.empirical``, so that ``posenc.proofs`` can hold
the layers against each other.  Built around Gu et al., "Deconstructing
Positional Information" (arXiv 2505.13027): additive PEs add a Toeplitz bias
(expansion, Weyl), multiplicative PEs take a Schur product with a PSD Toeplitz
kernel of unit diagonal (contraction, Schur).

Public API (signatures in each module's docstring):

* :mod:`.operators` -- ``ToeplitzOperator(column, row=None)``, ``HadamardOperator(X, Y, T)``,
  ``LowRankOperator(X, Y=None)``, ``DenseOperator(M)``, ``SumOperator(*ops)``; all
  ``scipy.sparse.linalg.LinearOperator`` with ``.dense()`` and ``.hermitian``.
* :mod:`.kernels` -- ``kernel(spec, n, *, head, n_heads, head_dim, d_model, values, seed)``
  -> ``Kernel`` (``.dense()``, ``.column``, ``.row``, ``.symbol()``, ``.plane(m)``,
  ``.factor()``, ``.toeplitz``, ``.source``, ``.kind``, ``.coupling``, ``.metadata()``).
* :mod:`.conventions` -- ``alibi_slopes``, ``t5_bucket``, ``rope_frequencies``,
  ``sinusoidal_table``, ``mla_rope_dim``.
* :mod:`.logits` -- ``logits(spec, x, wq, wk, ...)`` (full (n, n) logits of one head),
  ``rotate``, ``plane_decomposition``.
* :mod:`.spectra` -- ``spectrum(op, method="auto", ...)`` -> ``Spectrum``.
* :mod:`.bounds` -- ``szego``, ``gershgorin``, ``schur_interval``, ``schur_norm``,
  ``weyl_interval``, ``weyl_norm``, ``rotary_nonzero``, ``cosine_plane_eigenvalues``.
* :mod:`.contraction` -- ``seeded_content``, ``load_content``, ``couple`` -> ``Coupled``,
  ``scale_content``, ``scaled_ratios`` (the ratios at content scales c A).
* :mod:`.per_plane` -- ``per_plane_ratios(kern, seeds)`` -> ``PerPlane``: RoPE's own logit with
  its own content in every rotary plane against NoPE's (the Schur bound is about the
  plane-averaged kernel on one shared content), ``plane_logit_norms``, ``plane_factors``.
* :mod:`.content` -- ``SeededContent``, ``MatrixContent``, ``parse_content``, ``as_content``:
  the content matrix A of ``posenc bound``, parsed once.
* :mod:`.summary` -- ``bound_table(spec, ns, ...)`` -> ``BoundReport`` (typed rows, :mod:`.bound_rows`);
  ``bound_report`` is its ``to_dict()``.
"""

from .bounds import (gershgorin, rotary_nonzero, schur_interval, schur_norm, szego,  # noqa: F401
                     weyl_interval, weyl_norm)
from .contraction import Coupled, couple, load_content, seeded_content  # noqa: F401
from .kernels import Kernel, kernel  # noqa: F401
from .logits import logits, plane_decomposition, rotate  # noqa: F401
from .operators import (DENSE_LIMIT, DenseOperator, HadamardOperator, LowRankOperator,  # noqa: F401
                        SumOperator, ToeplitzOperator)
from .spectra import Spectrum, spectrum  # noqa: F401
from .bound_table import bound_report  # noqa: F401
