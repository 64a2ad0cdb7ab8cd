"""The content matrix A of ``posenc bound``, as a typed spec parsed once.

``SeededContent(rank=8, seed=0)``
    A = X X^T with X (N, rank) seeded (:func:`.contraction.seeded_content`); written
    ``rank=R,seed=S`` on the command line.
``MatrixContent(matrix, source=None)``
    A given square, real, finite matrix (its leading n x n sections are used); ``source``
    is the ``.npy`` file it was read from, if any; written as that path.

``parse_content(text)``: the command line's ``--content`` (``rank=R,seed=S`` or ``FILE.npy``).
``as_content(value)``: what ``posenc.bound(content=...)`` accepts -- None (rank 8, seed 0), a
spec above, ``("seeded", rank, seed)``, the command-line text, or a square array.
Every refusal is one :class:`~posenc.errors.PosencError` line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

import numpy as np

from ..errors import PosencError
from ..limits import MAX_WIDTH, check_int, parse_int
from .contraction import check_content, load_npy, seeded_content

#: The largest content seed (numpy's SeedSequence takes any non-negative int; this keeps it int64).
MAX_SEED = 2**63 - 1
_FORMS = "rank=R,seed=S or a FILE.npy"


@dataclass(frozen=True)
class SeededContent:
    """A seeded rank-``rank`` Gram matrix; row p of its factor does not depend on N."""

    rank: int = 8
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "rank", check_int("content rank", self.rank, MAX_WIDTH))
        object.__setattr__(self, "seed", check_int("content seed", self.seed, MAX_SEED, minimum=0))

    def label(self) -> str:
        return f"seeded Gram, rank {self.rank}, seed {self.seed}"

    def to_string(self) -> str:
        return f"rank={self.rank},seed={self.seed}"

    def sections(self, n_max: int) -> Callable[[int], Any]:
        """n -> A_n, the leading n x n section (a low-rank operator), for n <= n_max."""
        full = seeded_content(n_max, self.rank, self.seed)
        return lambda n: type(full)(full.x[:n])


@dataclass(frozen=True, eq=False)
class MatrixContent:
    """A given content matrix (read-only float64 copy); compared by identity."""

    matrix: np.ndarray
    source: Optional[str] = None

    def __post_init__(self) -> None:
        what = f"content matrix in {self.source}" if self.source else "the content matrix"
        a = check_content(self.matrix, what)
        a.flags.writeable = False
        object.__setattr__(self, "matrix", a)

    @property
    def size(self) -> int:
        return int(self.matrix.shape[0])

    def label(self) -> str:
        return f"given {self.size} x {self.size} matrix (leading sections)"

    def to_string(self) -> str:
        if self.source is None:
            raise PosencError("a content matrix given as an array has no command-line form; "
                              "save it with numpy.save and pass the .npy file")
        return self.source

    def sections(self, n_max: int) -> Callable[[int], Any]:
        if n_max > self.size:
            raise PosencError(f"the content matrix is {self.size} x {self.size}; "
                              f"n={n_max} needs a larger one")
        return lambda n: self.matrix[:n, :n]


ContentSpec = Union[SeededContent, MatrixContent]


def parse_content(text: str) -> ContentSpec:
    """``rank=R,seed=S`` (either may be left out: rank 8, seed 0) or a path to a ``.npy`` file."""
    if not isinstance(text, str):
        raise PosencError(f"content must be {_FORMS}; got {text!r}"[:200])
    if text.endswith(".npy") or os.path.sep in text:
        return MatrixContent(load_npy(text, "content matrix"), source=text)
    opts = {"rank": 8, "seed": 0}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in opts:
            raise PosencError(f"--content must be {_FORMS}; got {text!r}")
        opts[key] = parse_int(value, f"--content {key}")
    return SeededContent(opts["rank"], opts["seed"])


def as_content(value: Any) -> ContentSpec:
    """What ``posenc.bound(content=...)`` was given, as a content spec (see the module doc)."""
    if value is None:
        return SeededContent()
    if isinstance(value, (SeededContent, MatrixContent)):
        return value
    if isinstance(value, str):
        return parse_content(value)
    if isinstance(value, tuple):
        if len(value) != 3 or value[0] != "seeded":
            raise PosencError(f"content must be None, ('seeded', rank, seed) or a square array; "
                              f"got {value!r}"[:200])
        return SeededContent(value[1], value[2])
    if isinstance(value, bytes) or np.ndim(value) == 0:
        raise PosencError(f"content must be None, ('seeded', rank, seed) or a square array; "
                          f"got {value!r}"[:200])
    return MatrixContent(value)
