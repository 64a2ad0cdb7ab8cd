"""The single catalogue of positional encodings (PEs): pure data.

Modules by purpose: :mod:`.base` (``PESpec``, validation, ``NoPE``), :mod:`.additive`
(absolute embeddings and attention biases), :mod:`.rotary` (RoPE, MLA, xPos),
:mod:`.composite` (hybrid, custom), :mod:`.registry` (``REGISTRY``, ``NAMED_SPECS``); parsing
is :mod:`posenc.encodings.spec_parsing`.  Every public name is importable from ``posenc.encodings``.

One frozen dataclass per PE family holds that family's parameters with their
documented defaults; every convention that silently differs between code bases
is an explicit parameter.  Nothing here imports sympy, numpy or torch: the
symbolic (``posenc.theory``), numeric (``posenc.numerics``) and empirical
(``posenc.empirical``) layers each implement these specs independently, so that
their agreement is evidence, not an echo.

Conventions shared by every layer (head dimension ``d``, ``H`` heads, query
position ``i``, key position ``j``, offset ``k = i - j``):

* **RoPE.**  Rotary dims ``r = 2 * floor(fraction * d / 2)`` (the first ``r``
  dims of a head; the rest carry no position).  Plane ``m = 0 .. r/2 - 1`` has
  frequency ``theta_m = base ** (-2 m / r)``; with ``keep < 1`` (p-RoPE,
  Barbero et al. 2024) only the ``round(keep * r / 2)`` highest frequencies
  rotate and the planes of the lowest ones get ``theta_m = 0``.  Pairing
  ``interleaved``: plane m = dims (2m, 2m+1); ``half``: dims (m, m + r/2).  A
  vector at position p is rotated in each plane by angle ``p * theta_m``:
  ``(a, b) -> (a cos - b sin, a sin + b cos)``, i.e. ``a + ib -> (a + ib) e^{i p theta}``.
  ``heads = k`` applies the rotation to heads ``0 .. k-1`` only (partial RoPE).
* **Sinusoidal** (Vaswani et al. 2017): ``PE[p, 2m] = sin(p / base^(2m/D))``,
  ``PE[p, 2m+1] = cos(p / base^(2m/D))`` for model width ``D``, added to the input
  (``layout=interleaved``); ``layout=half`` puts every sine first and every cosine
  after: ``PE[p, m] = sin(p / base^(2m/D))``, ``PE[p, D/2 + m] = cos(...)`` (the
  table the paper code's ``rope`` model adds to its input).
* **ALiBi** (Press et al. 2022): head ``h = 1 .. H`` has slope ``2^(-8h/H)``
  (``press``; for ``H`` not a power of two, the slopes of the nearest lower power
  of two ``P`` followed by every other slope of ``2P``, first ``H - P`` of them)
  or ``exp(-h/H)`` (``exp``), or ``exp(-h/H)`` for ``h = 0 .. H-1`` (``exp0``, the
  paper's code: head 0 has slope 1).  Bias ``B_ij = -slope * |i - j|``
  (``symmetric``) or ``-slope * (i - j)`` for ``j <= i`` and 0 above the diagonal
  (``causal``; use with a causal attention mask).
* **Relative bias.**  ``t5``: the T5 bucket of the relative position ``j - i``
  (Raffel et al. 2020; bidirectional, half the buckets per sign, exact below
  ``num_buckets/4``, log-spaced up to ``max_distance``); ``table``: one scalar
  per offset ``i - j`` clipped to ``[-max_distance, max_distance]`` (the paper's
  code).  Values are learned, one table per head.
* **MLA** (DeepSeek-V2, 2024): queries and keys are a content part computed
  from latents of widths ``q_latent``/``kv_latent`` and carrying no position,
  concatenated with a decoupled RoPE part of width ``rope_dim`` whose key is
  shared across heads when ``shared_rope_key``.  ``None`` widths are resolved
  by the model: latents ``4 * head_dim`` (capped at the model width),
  ``rope_dim = head_dim // 2`` rounded down to even.  ``rope=paper_code`` is the
  paper code's MLA instead: its "RoPE" is not a rotation (see
  :mod:`posenc.empirical.model.pe.rotary`), the query's rope part is shared across heads,
  ``rope_dim`` defaults to ``head_dim``; its logit is not Toeplitz, so the symbolic
  and numeric layers refuse it.
* **Custom.**  ``kernel``: an additive bias ``B_ij = g(i - j)``, the same for every
  head.  ``frequencies``: plane m rotates dims (2m, 2m+1) (interleaved) with
  frequency ``frequencies[m]``; dims past ``2 * len(frequencies)`` carry no position.
"""

from __future__ import annotations

from .additive import (ADDITIVE_NAMES, ALiBi, KerpleLog, LearnedAbsolute,  # noqa: F401
                       RelativeBias, Sinusoidal)
from .base import FAMILIES, NoPE, PESpec, _format_value  # noqa: F401
from .composite import Custom, Hybrid  # noqa: F401
from .registry import NAMED_SPECS, NAMED_SPECS_VERSION, REGISTRY  # noqa: F401
from .rotary import MLA, RoPE, XPos  # noqa: F401
from .spec_parsing import all_entries, as_spec, derivable_entries, parse_spec, spec_from_dict  # noqa: F401
