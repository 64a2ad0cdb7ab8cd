"""The looks of a ``posenc reproduce --until-decided`` sweep, recorded in its store.

Each round of :mod:`posenc.reproduction.rounds` is a look at the verdicts: a 95% test each, with
seeds added until an interval excludes its threshold, so a decided verdict's error under its null
grows with the number of looks (optional stopping).  The sweep writes the looks into the store
(:data:`RECORD`, after each look) so that a report rebuilt later from the store alone carries the
same warning (:func:`optional_stopping_text`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from ..atomic import atomic_write_json
from ..coerce import is_int
from ..errors import PosencError


#: the file in a results store that records the looks of its ``--until-decided`` sweep
RECORD = "until-decided.json"


def write_record(root: str | Path, looks: list[dict[str, Any]], batch: int,
                 max_seeds: int) -> None:
    """Record the looks of an ``--until-decided`` sweep in its store (atomically; a resumed
    sweep replays the same looks and writes the same record)."""
    atomic_write_json(Path(root) / RECORD, {"format": 1, "seed_batch": batch,
                                            "max_seeds": max_seeds, "looks": looks})


def read_record(root: str | Path) -> Optional[dict[str, Any]]:
    """The store's record of its ``--until-decided`` looks (None: the store's seeds were fixed
    in advance); a record that is not one is a PosencError."""
    path = Path(root) / RECORD
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise PosencError(f"{path} is not a readable record of --until-decided: {exc}") from None
    looks = data.get("looks") if isinstance(data, dict) else None
    if not (isinstance(looks, list) and looks and data.get("format") == 1
            and is_int(data.get("seed_batch")) and is_int(data.get("max_seeds"))
            and all(isinstance(k, dict) and is_int(k.get("look")) and is_int(k.get("seeds"))
                    and all(isinstance(k.get(f), list) for f in ("undecided", "seeds_added_for"))
                    for k in looks)):
        raise PosencError(f"{path} is not a record of --until-decided looks (format 1)")
    return data


def optional_stopping_text(record: dict[str, Any]) -> str:
    """The warning, in one paragraph: optional stopping, its number of looks, what it does to
    the verdicts' error and the claims it concerns."""
    looks = record["looks"]
    k = len(looks)
    if k == 1:
        return ("**Optional stopping: 1 look.** These seeds were run by `--until-decided`, which "
                "adds seeds where a claim is inconclusive; no claim had room to grow at the first "
                "look, so the seeds are those fixed in advance and each verdict keeps its 95%.")
    grown = list(dict.fromkeys(c for look in looks for c in look["seeds_added_for"]))
    claims = (f" Claims given more seeds because they were inconclusive at a look: "
              f"{', '.join(grown)}." if grown else " No claim was given more seeds.")
    return (f"**Optional stopping: {k} looks.** These seeds were chosen "
            f"by `--until-decided` (up to {record['max_seeds']} per configuration, "
            f"{record['seed_batch']} at a time): after each round the verdicts were judged and "
            "seeds were added where a claim was inconclusive, until its interval excluded the "
            "threshold. The looks are not corrected for (no group-sequential bound): each is a "
            f"95% test, so a decided verdict's error under its null is not 2.5% but up to "
            f"{k} x 2.5% = {2.5 * k:.1f}% per side after {k} looks (the "
            "union bound)." + claims + " Read the decided verdicts of those claims as "
            "provisional; a replication on fresh seeds (`--replicate`) is the check.")
