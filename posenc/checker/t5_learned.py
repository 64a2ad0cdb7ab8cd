"""T5's bucket rule inside a learned relative bias ``g(n_heads, n) -> (heads, n, n)``: the bias
is ``table[h, bucket(j − i)]`` (transformers' ``T5Attention.compute_bias``), so its values are
learned but *which* relative positions share a value is T5's bucketing.

The bias of head 0 at n = :data:`.t5.N` is read as a function of j − i (it is Toeplitz: checked
before) and its partition of j − i into equal values is compared with the partition of T5's
buckets (:func:`.t5.reference`, the same reference and candidates as ``--kind t5``), up to the
labels (:func:`.t5.same_partition`): a table with two equal learned entries merges two buckets,
which random or trained weights do not do.  The slips a partition shows are named: the buckets
of j − i ± 1 (an off-by-one).  Two do not show: i and j swapped (T5's bidirectional partition is
the same for j − i and i − j: a swap relabels the table, which only matters for weights trained
with the other sign) and the decoder/encoder choice without ``--kind t5 --expect
bidirectional=..``.  A bias that is bucketed but not T5's is reported, not failed (other
bucketings exist), and so is one with more distinct values than T5 has buckets.
"""

from __future__ import annotations

import numpy as np

from .report import FAIL, INFO, PASS, Property, fmt
from .t5 import MAX_DISTANCE, N, NUM_BUCKETS, _name, match, reference, same_partition


def _counterexample(row: np.ndarray, rel: np.ndarray, best) -> str:
    """The smallest |j − i| whose value is grouped differently from T5's bucket of it."""
    ref = reference(rel, *best)
    order = np.lexsort((rel, np.abs(rel)))
    label_to_ref, first = {}, {}
    for k in order:
        label_to_ref.setdefault(row[k], ref[k])
        first.setdefault(row[k], k)
        if label_to_ref[row[k]] != ref[k]:
            k0 = first[row[k]]
            return (f"j − i = {int(rel[k])} has the bias of j − i = {int(rel[k0])} "
                    f"({fmt(float(row[k]))}), but T5 with {_name(*best)} puts them in buckets "
                    f"{int(ref[k])} and {int(ref[k0])}")
    return ""


def check_t5_learned(B: np.ndarray) -> Property:
    """The ``T5 buckets`` property of a Toeplitz bias that is not ALiBi (see the docstring), from
    ``B`` (N, N): the bias of head 0 at n = :data:`.t5.N` (the caller reads it from the user's
    function)."""
    rel = np.arange(-(N - 1), N)                                            # j − i
    row = np.concatenate([B[:0:-1, 0], B[0]])                               # bias at rel
    if not np.all(np.isfinite(row)):
        return Property("T5 buckets", INFO, "the bias has masked entries: not a learned "
                        "two-sided bucket bias")
    values = len(np.unique(row))
    if values > 2 * max(NUM_BUCKETS):
        return Property("T5 buckets", INFO, f"{values} distinct values over j − i in "
                        f"{-(N - 1)}..{N - 1}: not a bucketed bias")
    found = match(row, rel, alike=same_partition)
    if found is not None:
        return Property("T5 buckets", PASS, f"a learned bias over T5's relative_position_bucket "
                        f"of j − i with {_name(*found)} (n = {N}; i and j swapped would look the "
                        f"same)")
    for shift in (1, -1):
        hit = match(row, rel + shift, alike=same_partition)
        if hit is not None:
            return Property("T5 buckets", FAIL, f"T5 buckets off by one: the bias groups j − i "
                            f"as T5's buckets of j − i {'+' if shift > 0 else '−'} 1 "
                            f"({_name(*hit)})", _counterexample(row, rel, hit))
    return Property("T5 buckets", INFO, f"{values} distinct values over j − i: bucketed, but not "
                    f"T5's buckets for any num_buckets in {list(NUM_BUCKETS)}, max_distance in "
                    f"{list(MAX_DISTANCE)}")
