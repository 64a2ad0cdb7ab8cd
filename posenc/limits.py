"""Upper bounds for every user-given size, and a memory estimate checked before allocating.

Pure Python (no numpy, sympy or torch), so every layer can check its inputs
before it allocates anything: the catalogue (:mod:`posenc.encodings`), the
kernel-expression parser, the numeric layer (``posenc bound``) and the
symbolic one (``posenc derive``).  A size past its bound, or an estimate past
the memory the machine has free, is one :class:`~posenc.errors.PosencError`
naming the limit and the reason.

Bounds (the reason each is where it is):

* :data:`MAX_SEQ_LEN` -- sequence length n of ``posenc bound`` and of learned
  tables (``learned_absolute:max_len``, ``relative_bias:max_distance``): the
  numeric layer is O(n) in memory, and 10^7 already needs ~ GBs.
* :data:`MAX_BUCKETS` -- ``relative_bias:num_buckets``: one learned scalar per
  bucket and head; T5 uses 32.
* :data:`MAX_WIDTH` -- head dimension, model width, MLA latent and rope widths,
  content rank, rotary frequency count: numeric tables are n x width.
* :data:`MAX_HEADS` -- number of heads (and ``rope:heads``).
* :data:`MAX_SYMBOLIC_DIM` / :data:`MAX_SYMBOLIC_HEADS` -- ``posenc derive`` builds
  d x D symbolic matrices per head and proves identities on them; the default
  is d = 4, H = 4 and cost grows steeply (d = 8 takes ~25 s, d = 16 over 2 min).  Forms
  built without proofs (``prove=False``, to evaluate numerically) allow 8x the dims, 4x the heads.
* ``posenc check --head-dim`` is bounded by ``posenc.checker.MAX_DIM``.
* :data:`MAX_EXAMPLES` -- ``posenc verify --examples``: Hypothesis examples per claim (the
  ``thorough`` profile draws 400).
* :data:`MAX_SEEDS` -- seeds per configuration of ``posenc reproduce`` (``--seeds``,
  ``--count-seeds``, ``--max-seeds``): the default sweep has 15 configurations, so 1,000 seeds
  are 15,000 training runs -- days on a GPU; a billion was planned silently before.
* :data:`MAX_SEED` -- the largest seed a run may have (``--first-seed`` + seeds - 1).
* :data:`MAX_LENGTHS` -- distinct sequence lengths of one ``posenc bound`` call.
* :data:`MAX_SCALE` -- a RoPE scaling's numbers (``factor``, ``attention_factor``, YaRN's betas,
  Llama 3's frequency factors, LongRoPE's per-plane factors): real models use at most a few
  hundred; the attention factor s multiplies the logits by s², which overflowed float64 in
  ``posenc bound`` for s = 1e200.
* :data:`MIN_SCALE` -- the lower bound of the same numbers, 1/MAX_SCALE: a factor f and 1/f are
  as far from unscaled; below it a linear factor of 1e-300 made the frequencies theta_m / f of
  ~1e300 (``posenc bound`` printed a spectrum of cos(p * 1e300)).
* :data:`MIN_BASE` -- a RoPE base (``rope``, ``mla``, ``xpos``, ``sinusoidal``: ``base``;
  ``--from-hf``: ``rope_theta`` and its kin) is > MIN_BASE = 1, exclusive: only then do the
  frequencies base^(-2m/r) fall from plane to plane (at 1 every plane turns at 1 radian per
  position and YaRN's ln(base) is 0; below it they rise to ~1/base: ``rope_theta`` 1e-300 trained
  a model on angles of ~1e300 radians).  The upper bound is the largest float (the catalogue) and
  ``MAX_THETA`` = 1e15 (``--from-hf``, :mod:`posenc.encodings.hf_rope`).
* :data:`MAX_POSITIONS` -- a position count a model config states (``max_position_embeddings``
  and its kin): read by ``--from-hf``; the lengths actually computed with stay under
  :data:`MAX_SEQ_LEN`.
* :data:`DENSE_LIMIT` -- the largest n for which an n x n array is ever formed (``posenc bound
  --method dense``; the numeric layer's operators otherwise stay matrix-free).

The sequence lengths of ``posenc bound`` are checked once, by :func:`check_lengths`, which
returns them typed (:class:`Lengths`); the numeric layer takes that value without checking again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .errors import PosencError

MAX_SEQ_LEN = 10_000_000
MAX_BUCKETS = 1_000_000
MAX_WIDTH = 65_536
MAX_HEADS = 4_096
MAX_SYMBOLIC_DIM = 8
MAX_SYMBOLIC_HEADS = 16
MAX_EXAMPLES = 10_000
MAX_SEEDS = 1_000
MAX_SEED = 2**31 - 1
MAX_LENGTHS = 64
DENSE_LIMIT = 8192
MAX_SCALE = 1e6
MIN_SCALE = 1 / MAX_SCALE
MIN_BASE = 1.0
MAX_POSITIONS = 10**9

#: Refuse when an estimate exceeds this fraction of the memory the OS reports as available.
MEMORY_FRACTION = 0.8


def check_int(what: str, value: Any, limit: int, minimum: int = 1, why: str = "") -> int:
    """``value`` as an int in [minimum, limit], or one PosencError naming the bound."""
    kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    if not is_index(value) or int(value) < minimum:
        raise PosencError(f"{what} must be {kind}; got {value!r}")
    value = int(value)
    if value > limit:
        raise PosencError(f"{what}={value} exceeds the limit {limit}" + (f" ({why})" if why else ""))
    return value


def is_index(value: Any) -> bool:
    """An integer a size or an index may be: an int or a numpy integer (whose ``__index__``
    works; a float's, a string's or a one-element array's does not), never a bool."""
    if isinstance(value, bool):
        return False
    try:
        value.__index__()
    except (AttributeError, TypeError):
        return False
    return True


class Lengths(tuple):
    """Sequence lengths checked by :func:`check_lengths`: one to :data:`MAX_LENGTHS` distinct ints
    in 1..:data:`MAX_SEQ_LEN`, in the order given.  Functions of the numeric layer take them
    without checking again (``bound_table``, the kernels of each length)."""

    __slots__ = ()


def check_length(n: Any) -> int:
    """One sequence length of the numeric layer: an integer in 1..:data:`MAX_SEQ_LEN`."""
    return check_int("sequence length n", n, MAX_SEQ_LEN, why="the numeric layer is O(n) in memory")


def check_lengths(n: Any, method: str = "auto") -> Lengths:
    """The sequence lengths of one ``posenc bound`` call, every check once: ``n`` is an integer or a
    sequence of them, each >= 1; repeats are dropped (the order kept); at least one and at most
    :data:`MAX_LENGTHS` remain, each within :func:`check_length`, and with ``method="dense"``
    within :data:`DENSE_LIMIT`.  One :class:`PosencError` line for the first that fails."""
    if isinstance(n, (str, bytes)) or not isinstance(n, Sequence) and not is_index(n):
        raise PosencError(f"n must be a positive integer or a list of them; got {n!r}")
    ns = list(n) if isinstance(n, Sequence) else [n]
    for v in ns:
        if not is_index(v) or int(v) < 1:
            raise PosencError(f"n must be positive integers (n >= 1); got {v!r}")
    ns = list(dict.fromkeys(int(v) for v in ns))  # each length once, in the order given
    if len(ns) > MAX_LENGTHS:
        raise PosencError(f"n holds {len(ns)} distinct lengths; the limit is {MAX_LENGTHS} per "
                          f"call (each is a spectrum computation)")
    if not ns:
        raise PosencError("give at least one sequence length n")
    ns = [check_length(v) for v in ns]
    if method == "dense" and max(ns) > DENSE_LIMIT:
        raise PosencError(f"n={max(ns)} is too large for --method dense: an n x n float64 "
                          f"array needs {max(ns) ** 2 * 8 / 2 ** 30:.0f} GiB "
                          f"(limit n <= {DENSE_LIMIT})")
    return Lengths(ns)


def available_memory() -> int | None:
    """Bytes this process may still allocate: the smaller of what the OS reports as available
    (MemAvailable of /proc/meminfo, else sysconf) and the headroom under the process's
    address-space limit (``RLIMIT_AS``, ``ulimit -v`` -- common on batch schedulers -- minus
    the address space already mapped, ``VmSize``); None if neither is known."""
    limits = [v for v in (_os_available(), _address_space_headroom()) if v is not None]
    return min(limits) if limits else None


def _os_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _address_space_headroom() -> int | None:
    """``RLIMIT_AS`` (soft) minus this process's mapped address space; None when unlimited."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = 0
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - used)


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB" if nbytes >= 2**28 else f"{nbytes / 2**20:.0f} MiB"


def check_memory(nbytes: float, what: str) -> None:
    """Refuse ``what`` when its estimated peak ``nbytes`` exceeds the available memory."""
    avail = available_memory()
    if avail is None:
        return
    if nbytes > MEMORY_FRACTION * avail:
        raise PosencError(f"{what} needs about {_gib(nbytes)} of memory; only {_gib(avail)} is "
                          f"available (limit {MEMORY_FRACTION:.0%} of it); use a smaller size")


def parse_int(text: str, what: str) -> int:
    """An integer written as ``1024``, ``1_000`` or ``1e6`` (exactly integral), else PosencError."""
    text = str(text).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value == value and abs(value) < 1e18 and value.is_integer()):
        raise PosencError(f"{what} must be an integer; got {text!r}")
    return int(value)
