"""``bound --hf DIR`` on a learned absolute PE (GPT-2's ``wpe``, BERT's
``position_embeddings``): the model's own table in place of the seeded stand-in, and its
position Gram G = P P^T of the first n positions -- its spectrum (dense LAPACK) and its
distance from Toeplitz (:mod:`posenc.numerics.toeplitz_distance`).

A rotary or bias model's bound needs no weights (the catalogue's, as with ``--from-hf``).
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

from ..errors import PosencError

DISTANCE = ("d(G) = ||G - T(G)||_F / ||G||_F, T(G) = G with each diagonal replaced by its mean "
            "(the Frobenius-nearest Toeplitz matrix); 0 exactly when G is Toeplitz")
#: eigenvalues shown per n in the text (JSON: all of them)
SHOWN = 4


def section_rows(section: dict, fmt) -> tuple[tuple, list[tuple]]:
    """The header and rows of the section's text table (``fmt`` formats a number)."""
    head = ("n", "lam_max(G)", "lam_min(G)", "rank", "||G||_F", "d(G)",
            f"largest {SHOWN} eigenvalues")
    rows = [(str(g["n"]), fmt(g["lambda_max"]), fmt(g["lambda_min"]), str(g["rank"]),
             fmt(g["frobenius"]), fmt(g["toeplitz_distance"]),
             ", ".join(fmt(v) for v in g["eigenvalues"][:SHOWN])) for g in section["gram"]]
    return head, rows


def model_table(args: argparse.Namespace, spec: Any, info: Optional[dict], ns: list[int]
                ) -> Optional[Any]:
    """The model's :class:`~posenc.api.hf_weights.PositionTable` when ``--hf`` names a model whose
    PE is a learned absolute table; else None (a rotary model: no weights read)."""
    local = (info or {}).get("local_model")
    if local is None or spec.name != "learned_absolute":
        return None
    if args.values is not None:
        raise PosencError("bound --hf: --values not taken: the model's own position table is used")
    from ..api.hf_weights import position_table

    table = position_table(local, info["model_type"])
    rows, width = table.shape
    too_long = [n for n in ns if n > rows]
    if too_long:
        raise PosencError(f"bound --hf: the model's table {table.name} has {rows} positions; "
                          f"--n {max(too_long)} is longer")
    if args.d_model is not None and args.d_model != width:
        raise PosencError(f"bound --hf: --d-model {args.d_model} differs from the width of the "
                          f"model's table ({width})")
    return table


def gram_section(table: Any, ns: list[int]) -> dict:
    """The table's description and, per n, the Gram's spectrum and distance from Toeplitz."""
    from ..numerics.toeplitz_distance import position_gram

    grams = []
    for n in ns:
        g = position_gram(table.values, n)
        grams.append({**g, "eigenvalues": [float(v) for v in g["eigenvalues"][::-1]]})
    return {**table.as_dict(), "description": table.describe(), "toeplitz_distance": DISTANCE,
            "gram": grams}
