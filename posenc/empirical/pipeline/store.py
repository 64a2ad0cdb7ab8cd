"""A content-addressed, crash-safe results store for training runs.

Layout of a store folder::

    STORE/
      posenc-store.json      {"format": 1}  (a newer format is refused, not misread)
      store.lock             the writers' lock (:mod:`~posenc.empirical.pipeline.store_lock`)
      index.sqlite           runs(id, state, kind, label, config, created, finished, summary)
      runs/<id>/             one folder per run: config.json, run.json (kind, label, created),
                             metrics.jsonl, checkpoint, ablation tables, figures ... and,
                             written LAST, result.json (``posenc reproduce`` drops the
                             checkpoint before the commit: :mod:`.kept_files`)

A run's id is a hash of its resolved config (canonical JSON), so the same
config always lands in the same folder and a sweep started again finds it.

Crash safety.  ``result.json`` is the commit record of a run: a sweep writes it
atomically (temp file + ``os.replace``) into the run's staging folder after
everything else, then moves the folder into ``runs/`` whole (:meth:`RunStore.commit`),
so a run folder of a sweep always has it.  An experiment run folder that lacks it
(or another file a finished run keeps) was damaged after its commit: a sweep and
the report refuse it in one line, and only a sweep asked to
(``--retrain-incomplete``) trains it again (:mod:`.kept_files`).

The SQLite index is derived state: a cache of the folders plus the runs that
have no folder yet (pending, failed).  Readers never write it: :meth:`RunStore.records`
merges it with the folders, so a missing, emptied, garbage, foreign-schema or stale
index changes nothing they show.  A writer (:meth:`RunStore.heal`, called before its
first write) repairs it in place when it is readable and otherwise rebuilds it from
the folders into a temporary file moved into place -- so killing a sweep at any
moment, even with SIGKILL, loses at most the runs in flight and never corrupts a
finished one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Optional

from ...coerce import is_int, is_number
from ...errors import PosencError
from ...atomic import atomic_write_json, atomic_write_text  # noqa: F401 (re-exported)
from .store_lock import LOCK_FILE, StoreLock

FORMAT_VERSION = 1
STATES = ("pending", "running", "done", "failed")
RESULT_FILE = "result.json"
CONFIG_FILE = "config.json"
META_FILE = "run.json"  # kind, label, created: what the index needs beyond the config
INDEX_FILE = "index.sqlite"
INDEX_COLUMNS = ("id", "state", "kind", "label", "config", "created", "finished", "summary")
_SCHEMA = """CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, state TEXT NOT NULL, kind TEXT NOT NULL,
    label TEXT NOT NULL, config TEXT NOT NULL, created REAL NOT NULL,
    finished REAL, summary TEXT)"""


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
    """A results store rooted at a folder (created if missing, unless ``create=False``)."""

    def __init__(self, root: str | os.PathLike[str], create: bool = True) -> None:
        self.root = Path(root)
        self._check_root(create)
        self.runs_dir = self.root / "runs"
        try:
            self.runs_dir.mkdir(exist_ok=True)
        except OSError as exc:
            if not self.runs_dir.is_dir():
                raise PosencError(f"cannot write the results store at {self.root}: "
                                  f"{exc.strerror or exc}") from None
        self._db_path = self.root / INDEX_FILE
        self.lock = StoreLock(self.root / LOCK_FILE)
        self._healed = False

    # -- set-up ---------------------------------------------------------------------------
    def _check_root(self, create: bool) -> None:
        marker = self.root / "posenc-store.json"
        if self.root.exists() and not self.root.is_dir():
            raise PosencError(f"results store {self.root} is not a folder")
        if marker.exists():
            try:
                fmt = json.loads(marker.read_text(encoding="utf-8"))["format"]
            except (OSError, ValueError, KeyError, TypeError):
                raise PosencError(f"results store {self.root}: {marker.name} is corrupt") from None
            if not is_int(fmt) or fmt < 1:
                raise PosencError(f"results store {self.root}: {marker.name} is corrupt "
                                  f"(format {fmt!r} is not a positive integer)")
            if fmt > FORMAT_VERSION:
                raise PosencError(f"results store {self.root} was written by a newer posenc "
                                  f"(format {fmt}, this version reads up to {FORMAT_VERSION})")
            return
        if not create:
            raise PosencError(f"no results store at {self.root}")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write_json(marker, {"format": FORMAT_VERSION})
        except OSError as exc:  # a WriteError from the marker, or mkdir's own
            why = str(exc).rpartition(": ")[2] if isinstance(exc, PosencError) else exc.strerror
            raise PosencError(f"cannot write the results store at {self.root}: {why}") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._db_path, timeout=60, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A connection for writing the index, healed first; sqlite errors become one line."""
        if not self._healed:
            self.heal()
        try:
            db = self._connect()
            try:
                yield db
            finally:
                db.close()
        except sqlite3.Error as exc:
            raise PosencError(f"cannot update the index of results store {self.root}: {exc}") from None

    # -- runs -------------------------------------------------------------------------------
    def run_dir(self, rid: str) -> Path:
        return self.runs_dir / rid

    def add(self, config: dict[str, Any], kind: str, label: str) -> str:
        """Register a run (idempotent); returns its id."""
        rid = run_id(config)
        with self._write() as db:
            db.execute("INSERT OR IGNORE INTO runs (id, state, kind, label, config, created) "
                       "VALUES (?, 'pending', ?, ?, ?, ?)",
                       (rid, kind, label, canonical_json(config), time.time()))
        return rid

    def is_done(self, rid: str) -> bool:
        return (self.run_dir(rid) / RESULT_FILE).is_file()

    def stage(self, rid: str, folder: Path) -> None:
        """Write a run's config.json and run.json into ``folder`` (its run or staging folder)."""
        rec = self.get(rid)
        atomic_write_json(folder / CONFIG_FILE, rec.config)
        atomic_write_json(folder / META_FILE, {"kind": rec.kind, "label": rec.label,
                                               "created": rec.created})

    def begin(self, rid: str) -> Path:
        """Start (or restart) a run: wipe any unfinished folder, write its config."""
        if self.is_done(rid):
            raise AssertionError(f"run {rid} is already finished")
        folder = self.run_dir(rid)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        self.stage(rid, folder)
        self._set_state(rid, "running")
        return folder

    def finish(self, rid: str, result: dict[str, Any]) -> None:
        """Commit a run begun in its own folder (:meth:`begin`): write result.json atomically,
        then mark the index."""
        atomic_write_json(self.run_dir(rid) / RESULT_FILE, result)
        self._mark_done(rid, result)

    def commit(self, rid: str, staging: Path, result: dict[str, Any]) -> None:
        """Commit a run made in ``staging``: result.json is written there, then the folder is
        moved into place whole (replacing an earlier folder of the run), then the index is
        marked -- so a run folder never lacks its result.json, even when a kill comes between
        two of these steps."""
        atomic_write_json(staging / RESULT_FILE, result)
        folder = self.run_dir(rid)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(staging, folder)
        self._mark_done(rid, result)

    def _mark_done(self, rid: str, result: dict[str, Any]) -> None:
        with self._write() as db:
            db.execute("UPDATE runs SET state='done', finished=?, summary=? WHERE id=?",
                       (time.time(), canonical_json(result.get("summary", {})), rid))

    def fail(self, rid: str, message: str) -> None:
        with self._write() as db:
            db.execute("UPDATE runs SET state='failed', summary=? WHERE id=?",
                       (canonical_json({"error": message}), rid))

    def result(self, rid: str) -> dict[str, Any]:
        """A finished run's result.json; a damaged one is a PosencError (a sweep redoes it)."""
        path = self.run_dir(rid) / RESULT_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PosencError(f"run {rid} has not finished") from None
        except (OSError, ValueError):
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
            raise PosencError(f"run {rid}: {path} is corrupt; run the sweep again to redo the run")
        return data

    def _set_state(self, rid: str, state: str) -> None:
        with self._write() as db:
            db.execute("UPDATE runs SET state=? WHERE id=?", (state, rid))

    def get(self, rid: str) -> RunRecord:
        if self._healed:  # a writer: the index on disk is the truth
            with self._write() as db:
                row = db.execute("SELECT * FROM runs WHERE id=?", (rid,)).fetchone()
            if row is not None:
                return _record(row)
        for rec in self.records():
            if rec.id == rid:
                return rec
        raise PosencError(f"no run {rid!r} in {self.root}")

    def records(self) -> Iterator[RunRecord]:
        """Every run, the index merged with the folders (which win); reads, never writes.

        A run is done iff its folder has result.json; "running" only while a writer holds the
        store's lock; a summary only beside a finished or failed run (no stale accuracies)."""
        rows = self._read_index() or {}
        folders = self._folder_runs()
        writing = self.lock.busy()
        out = []
        for rid, rec in rows.items():
            out.append(self._truth(rec, writing))
        for rid, (config, meta) in folders.items():
            if rid not in rows:
                out.append(self._truth(_folder_record(rid, config, meta), writing))
        out.sort(key=lambda r: (r.created, r.id))
        yield from out

    def _truth(self, rec: RunRecord, writing: bool) -> RunRecord:
        if self.is_done(rec.id):
            summary = rec.summary if rec.state == "done" and rec.summary is not None \
                else self._summary(rec.id)
            return replace(rec, state="done", summary=summary)
        state = rec.state
        if state == "done" or (state == "running" and not writing):
            state = "pending"
        return replace(rec, state=state, summary=rec.summary if state == "failed" else None)

    def _summary(self, rid: str) -> Optional[dict[str, Any]]:
        try:
            return self.result(rid)["summary"]
        except PosencError:
            return None

    # -- the index: derived state ----------------------------------------------------------
    def _read_index(self) -> Optional[dict[str, RunRecord]]:
        """The index's rows, or None when it is missing, unreadable or of another schema."""
        if not self._db_path.is_file():
            return None
        try:
            db = sqlite3.connect(f"{self._db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
            try:
                cols = tuple(r[1] for r in db.execute("PRAGMA table_info(runs)"))
                if cols != INDEX_COLUMNS:
                    return None
                if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                    return None
                rows = db.execute("SELECT * FROM runs ORDER BY created, id").fetchall()
            finally:
                db.close()
            return {row[0]: _record(row) for row in rows}
        except (sqlite3.Error, ValueError, TypeError, OSError):
            return None

    def _folder_runs(self) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        """Run folders whose config.json hashes to their name: id -> (config, run.json)."""
        out: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        try:
            folders = sorted(p for p in self.runs_dir.iterdir() if p.is_dir())
        except OSError:
            return out
        for folder in folders:
            try:
                config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
                if not isinstance(config, dict) or run_id(config) != folder.name:
                    continue
            except (OSError, ValueError):
                continue
            try:
                meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                meta = {}
            out[folder.name] = (config, meta if isinstance(meta, dict) else {})
        return out

    def heal(self) -> dict[str, int]:
        """Make the index on disk agree with the folders (a writer calls this first).

        A readable index of the right schema is repaired in place: a run with result.json is
        done, any other run marked running/done is pending again, a folder missing from the
        index is added.  Otherwise (missing, emptied, garbage, another schema) the index is
        rebuilt from the folders in a temporary file moved into place.  Returns how many rows
        became done / pending (``rebuilt``: 1 when it was rebuilt)."""
        rows = self._read_index()
        self._healed = True
        try:
            if rows is None:
                return self._rebuild()
            return self._repair(rows)
        except sqlite3.Error as exc:
            self._healed = False
            raise PosencError(f"cannot update the index of results store {self.root}: {exc}") from None

    reconcile = heal  # the name sweeps and tests have used

    def _repair(self, rows: dict[str, RunRecord]) -> dict[str, int]:
        changed = {"done": 0, "pending": 0}
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            for rec in rows.values():
                done = self.is_done(rec.id)
                if done and rec.state != "done":
                    db.execute("UPDATE runs SET state='done', finished=?, summary=? WHERE id=?",
                               (time.time(), canonical_json(self._summary(rec.id) or {}), rec.id))
                    changed["done"] += 1
                elif not done and rec.state in ("running", "done"):
                    db.execute("UPDATE runs SET state='pending', summary=NULL WHERE id=?", (rec.id,))
                    changed["pending"] += 1
            for rid, (config, meta) in self._folder_runs().items():
                if rid not in rows:
                    rec = self._truth(_folder_record(rid, config, meta), writing=False)
                    _insert(db, rec)
                    changed["done" if rec.state == "done" else "pending"] += 1
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()
        return changed

    def _rebuild(self) -> dict[str, int]:
        recs = [self._truth(_folder_record(rid, config, meta), writing=False)
                for rid, (config, meta) in self._folder_runs().items()]
        tmp = self.root / f".{INDEX_FILE}.{os.getpid()}.tmp"
        try:
            tmp.unlink(missing_ok=True)
            db = sqlite3.connect(tmp, isolation_level=None)
            try:
                db.execute(_SCHEMA)
                db.execute("BEGIN")
                for rec in recs:
                    _insert(db, rec)
                db.execute("COMMIT")
            finally:
                db.close()
            for suffix in ("-wal", "-shm", "-journal"):  # a stale log must not replay onto it
                Path(f"{self._db_path}{suffix}").unlink(missing_ok=True)
            os.replace(tmp, self._db_path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise PosencError(f"cannot rebuild the index of results store {self.root}: "
                              f"{exc.strerror or exc}") from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return {"done": sum(r.state == "done" for r in recs),
                "pending": sum(r.state != "done" for r in recs), "rebuilt": 1}


def _folder_record(rid: str, config: dict[str, Any], meta: dict[str, Any]) -> RunRecord:
    """A record for a run known only from its folder (kind/label from run.json when present)."""
    kind = meta.get("kind") if isinstance(meta.get("kind"), str) else (
        "experiment" if {"train", "ablation_modes"} <= set(config) else "run")
    label = meta.get("label") if isinstance(meta.get("label"), str) else rid
    created = meta.get("created")
    if not is_number(created):
        created = 0.0
    return RunRecord(rid, "pending", kind, label, config, float(created), None, None)


def _insert(db: sqlite3.Connection, rec: RunRecord) -> None:
    db.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (rec.id, rec.state, rec.kind, rec.label, canonical_json(rec.config), rec.created,
                time.time() if rec.state == "done" else None,
                None if rec.summary is None else canonical_json(rec.summary)))


def _record(row: tuple) -> RunRecord:
    rid, state, kind, label, config, created, finished, summary = row
    return RunRecord(rid, state, kind, label, json.loads(config), created, finished,
                     json.loads(summary) if summary else None)
