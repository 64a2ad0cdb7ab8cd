"""A content-addressed, crash-safe results store for training runs.

Layout of a store folder::

    STORE/
      posenc-store.json      {"format": 1}  (a newer format is refused, not misread)
      index.sqlite           runs(id, state, kind, label, config, created, finished, summary)
      runs/<id>/             one folder per run: config.json, metrics.jsonl, checkpoint,
                             ablation tables, figures ... and, written LAST, result.json

A run's id is a hash of its resolved config (canonical JSON), so the same
config always lands in the same folder and a sweep started again finds it.

Crash safety.  ``result.json`` is the commit record of a run: it is written
atomically (temp file + ``os.replace``) after everything else, so a run
folder either has it (finished, never redone) or not (unfinished: its folder
is wiped and the run redone).  The SQLite index is a cache of that truth,
updated in transactions; :meth:`RunStore.reconcile` rebuilds it from the
folders, so killing a sweep at any moment -- even with SIGKILL -- loses at
most the runs in flight and never corrupts a finished one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..errors import PosencError
from ..atomic import atomic_write_json, atomic_write_text  # noqa: F401 (re-exported)

FORMAT_VERSION = 1
STATES = ("pending", "running", "done", "failed")
RESULT_FILE = "result.json"
CONFIG_FILE = "config.json"


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def run_id(config: dict[str, Any]) -> str:
    """The content address of a resolved config: 16 hex digits of its SHA-256."""
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class RunRecord:
    id: str
    state: str
    kind: str
    label: str
    config: dict[str, Any]
    created: float
    finished: float | None
    summary: dict[str, Any] | None


class RunStore:
    """A results store rooted at a folder (created if missing)."""

    def __init__(self, root: str | os.PathLike[str], create: bool = True) -> None:
        self.root = Path(root)
        self._check_root(create)
        self.runs_dir = self.root / "runs"
        self.runs_dir.mkdir(exist_ok=True)
        self._db_path = self.root / "index.sqlite"
        with self._connect() as db:
            db.execute("""CREATE TABLE IF NOT EXISTS runs (
                id TEXT PRIMARY KEY, state TEXT NOT NULL, kind TEXT NOT NULL,
                label TEXT NOT NULL, config TEXT NOT NULL, created REAL NOT NULL,
                finished REAL, summary TEXT)""")

    # -- set-up ---------------------------------------------------------------------------
    def _check_root(self, create: bool) -> None:
        marker = self.root / "posenc-store.json"
        if self.root.exists() and not self.root.is_dir():
            raise PosencError(f"results store {self.root} is not a folder")
        if marker.exists():
            try:
                fmt = json.loads(marker.read_text())["format"]
            except (ValueError, KeyError, TypeError):
                raise PosencError(f"results store {self.root}: {marker.name} is corrupt") from None
            if not isinstance(fmt, int) or fmt > FORMAT_VERSION:
                raise PosencError(f"results store {self.root} was written by a newer posenc "
                                  f"(format {fmt}, this version reads up to {FORMAT_VERSION})")
            return
        if not create:
            raise PosencError(f"no results store at {self.root}")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write_json(marker, {"format": FORMAT_VERSION})
        except OSError as exc:
            raise PosencError(f"cannot write the results store at {self.root}: "
                              f"{exc.strerror or exc}") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._db_path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

    # -- runs -------------------------------------------------------------------------------
    def run_dir(self, rid: str) -> Path:
        return self.runs_dir / rid

    def add(self, config: dict[str, Any], kind: str, label: str) -> str:
        """Register a run (idempotent); returns its id."""
        rid = run_id(config)
        with self._connect() as db:
            db.execute("INSERT OR IGNORE INTO runs (id, state, kind, label, config, created) "
                       "VALUES (?, 'pending', ?, ?, ?, ?)",
                       (rid, kind, label, canonical_json(config), time.time()))
        return rid

    def is_done(self, rid: str) -> bool:
        return (self.run_dir(rid) / RESULT_FILE).is_file()

    def begin(self, rid: str) -> Path:
        """Start (or restart) a run: wipe any unfinished folder, write its config."""
        if self.is_done(rid):
            raise AssertionError(f"run {rid} is already finished")
        rec = self.get(rid)
        folder = self.run_dir(rid)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        atomic_write_json(folder / CONFIG_FILE, rec.config)
        self._set_state(rid, "running")
        return folder

    def finish(self, rid: str, result: dict[str, Any]) -> None:
        """Commit a run: write result.json atomically, then mark the index."""
        atomic_write_json(self.run_dir(rid) / RESULT_FILE, result)
        with self._connect() as db:
            db.execute("UPDATE runs SET state='done', finished=?, summary=? WHERE id=?",
                       (time.time(), canonical_json(result.get("summary", {})), rid))

    def fail(self, rid: str, message: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET state='failed', summary=? WHERE id=?",
                       (canonical_json({"error": message}), rid))

    def result(self, rid: str) -> dict[str, Any]:
        path = self.run_dir(rid) / RESULT_FILE
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            raise PosencError(f"run {rid} has not finished") from None
        except ValueError:
            raise PosencError(f"run {rid}: {path} is corrupt") from None

    def _set_state(self, rid: str, state: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET state=? WHERE id=?", (state, rid))

    def get(self, rid: str) -> RunRecord:
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE id=?", (rid,)).fetchone()
        if row is None:
            raise PosencError(f"no run {rid!r} in {self.root}")
        return _record(row)

    def records(self) -> Iterator[RunRecord]:
        with self._connect() as db:
            rows = db.execute("SELECT * FROM runs ORDER BY created, id").fetchall()
        for row in rows:
            yield _record(row)

    def reconcile(self) -> dict[str, int]:
        """Make the index agree with the folders (after a crash or kill).

        A run with ``result.json`` is done; any other run marked running/done is
        pending again.  Returns how many rows were changed per new state.
        """
        changed = {"done": 0, "pending": 0}
        for rec in list(self.records()):
            done = self.is_done(rec.id)
            if done and rec.state != "done":
                res = self.result(rec.id)
                with self._connect() as db:
                    db.execute("UPDATE runs SET state='done', finished=?, summary=? WHERE id=?",
                               (time.time(), canonical_json(res.get("summary", {})), rec.id))
                changed["done"] += 1
            elif not done and rec.state in ("running", "done"):
                self._set_state(rec.id, "pending")
                changed["pending"] += 1
        return changed


def _record(row: tuple) -> RunRecord:
    rid, state, kind, label, config, created, finished, summary = row
    return RunRecord(rid, state, kind, label, json.loads(config), created, finished,
                     json.loads(summary) if summary else None)
