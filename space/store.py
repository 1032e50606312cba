"""The results store: accepted submissions (raw predictions, scores, metadata) and the per-user
submission log the rate limit reads.

One small interface, ``ResultsStore``, two implementations:

- ``SqliteStore``: a SQLite database in WAL mode in the data folder (the default). Every write is
  one ``BEGIN IMMEDIATE`` transaction, so concurrent submissions serialise on the database lock
  and a crash mid-write leaves the previous state (SQLite's journal rolls the half-written
  transaction back on the next open).
- ``HubStore``: plain JSON/JSONL files in a folder that ``huggingface_hub.CommitScheduler`` pushes
  to a Hub dataset repo in the background; the folder is restored with ``snapshot_download`` at
  start and indexed in a local ``SqliteStore``. Each file is written under a temporary name and
  renamed into place, the record last, so a crash leaves nothing that is read back.

A submission is unique on ``(variant, sha256)`` of its raw bytes: storing an identical file again
returns the first record instead of a new one.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from space.text import encodable

SCHEMA_VERSION = 1
#: The identity ``space.seed`` stores the built-in baselines under; its rows are the verified ones.
BASELINE_SUBMITTER = "seed"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Metadata:
    """What a submitter says about the model (already validated by the submit handler)."""

    model_name: str
    organisation: str = ""
    model_type: str = "other"
    access: str = "open"
    link: str = ""
    model_date: str = ""

    def __post_init__(self) -> None:  # a name stored before the form refused surrogates must still draw
        for name, value in asdict(self).items():
            object.__setattr__(self, name, encodable(value))


@dataclass(frozen=True)
class StoredResult:
    """One accepted submission as the leaderboard reads it (without the raw predictions)."""

    id: str
    variant: str
    sha256: str
    metadata: Metadata
    submitter: str
    created_at: float
    num_lines: int
    scores: dict[str, Any]

    @property
    def verified(self) -> bool:
        """A built-in baseline, stored by the Space's own seeding, not by a submitter."""
        return self.submitter == BASELINE_SUBMITTER

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "metadata": asdict(self.metadata)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StoredResult:
        return cls(**{**data, "metadata": Metadata(**data["metadata"])})


def result_id(variant: str, sha256: str) -> str:
    """The public id of a submission: its variant and the start of its file hash."""
    return f"{variant}-{sha256[:16]}"


class ResultsStore(ABC):
    """Where accepted submissions and the submission log live."""

    @abstractmethod
    def add(
        self,
        *,
        variant: str,
        sha256: str,
        predictions: bytes,
        scores: dict[str, Any],
        metadata: Metadata,
        submitter: str,
        num_lines: int,
        now: float | None = None,
    ) -> tuple[StoredResult, bool]:
        """Store a scored submission atomically; returns ``(record, created)``. When the same
        ``(variant, sha256)`` is already stored, nothing is written and the first record comes
        back with ``created=False``."""

    @abstractmethod
    def find(self, variant: str, sha256: str) -> StoredResult | None:
        """The record of an identical earlier submission, if any."""

    @abstractmethod
    def results(self, variant: str | None = None) -> list[StoredResult]:
        """Every accepted submission (of one variant), oldest first."""

    @abstractmethod
    def get(self, result_id: str) -> StoredResult:
        """One stored submission by its id; ``KeyError`` if unknown."""

    @abstractmethod
    def predictions(self, result_id: str) -> bytes:
        """The raw predictions file of a stored submission; ``KeyError`` if unknown."""

    @abstractmethod
    def acquire(self, submitter: str, limit: int, window_s: float, now: float | None = None) -> bool:
        """Atomically check the rate limit and log one submission attempt: ``True`` (and logged)
        when ``submitter`` made fewer than ``limit`` attempts in the last ``window_s`` seconds."""

    @abstractmethod
    def retry_at(self, submitter: str, limit: int, window_s: float, now: float) -> float:
        """When ``submitter`` may next be granted ``acquire`` (``now`` if already)."""

    def close(self) -> None:
        """Release resources (flush pending pushes)."""

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ------------------------------------------------------------------------------------- SQLite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    id TEXT PRIMARY KEY,
    variant TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    metadata TEXT NOT NULL,
    submitter TEXT NOT NULL,
    created_at REAL NOT NULL,
    num_lines INTEGER NOT NULL,
    scores TEXT NOT NULL,
    UNIQUE (variant, sha256)
);
CREATE TABLE IF NOT EXISTS predictions (
    id TEXT PRIMARY KEY REFERENCES submissions (id),
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    submitter TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_by_submitter ON attempts (submitter, at);
"""

_COLUMNS = "id, variant, sha256, metadata, submitter, created_at, num_lines, scores"


def _row_to_result(row: tuple) -> StoredResult:
    rid, variant, sha, metadata, submitter, created_at, num_lines, scores = row
    return StoredResult(
        id=rid, variant=variant, sha256=sha, metadata=Metadata(**json.loads(metadata)),
        submitter=submitter, created_at=created_at, num_lines=num_lines, scores=json.loads(scores),
    )


class SqliteStore(ResultsStore):
    """SQLite (WAL) store at ``<data_dir>/results.sqlite3``; safe to share between threads and
    processes (each operation opens its own connection; writers take the database lock)."""

    FILENAME = "results.sqlite3"

    def __init__(self, data_dir: str | os.PathLike, *, busy_timeout_s: float = 60.0) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / self.FILENAME
        self.busy_timeout_s = busy_timeout_s
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(f"{self.path}: results store schema {version} is newer than this code ({SCHEMA_VERSION})")
            with self._write(con):
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    con.execute(statement)
                con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
        try:
            con.execute("PRAGMA synchronous=FULL")
            con.execute("PRAGMA foreign_keys=ON")
            yield con
        finally:
            con.close()

    @staticmethod
    @contextmanager
    def _write(con: sqlite3.Connection) -> Iterator[None]:
        """One write transaction: all of it is committed, or none of it."""
        con.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def add(self, *, variant, sha256, predictions, scores, metadata, submitter, num_lines, now=None):
        record = StoredResult(
            id=result_id(variant, sha256), variant=variant, sha256=sha256, metadata=metadata,
            submitter=submitter, created_at=time.time() if now is None else now,
            num_lines=num_lines, scores=scores,
        )
        with self._connect() as con, self._write(con):
            existing = self._find(con, variant, sha256)
            if existing is not None:
                return existing, False
            con.execute(
                f"INSERT INTO submissions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.id, variant, sha256, json.dumps(asdict(metadata)), submitter,
                 record.created_at, num_lines, json.dumps(scores)),
            )
            con.execute("INSERT INTO predictions (id, data) VALUES (?, ?)", (record.id, bytes(predictions)))
        return record, True

    @staticmethod
    def _find(con: sqlite3.Connection, variant: str, sha256: str) -> StoredResult | None:
        row = con.execute(
            f"SELECT {_COLUMNS} FROM submissions WHERE variant = ? AND sha256 = ?", (variant, sha256)
        ).fetchone()
        return _row_to_result(row) if row else None

    def find(self, variant, sha256):
        with self._connect() as con:
            return self._find(con, variant, sha256)

    def results(self, variant=None):
        with self._connect() as con:
            if variant is None:
                rows = con.execute(f"SELECT {_COLUMNS} FROM submissions ORDER BY created_at, id")
            else:
                rows = con.execute(
                    f"SELECT {_COLUMNS} FROM submissions WHERE variant = ? ORDER BY created_at, id", (variant,)
                )
            return [_row_to_result(r) for r in rows.fetchall()]

    def get(self, result_id):
        with self._connect() as con:
            row = con.execute(f"SELECT {_COLUMNS} FROM submissions WHERE id = ?", (result_id,)).fetchone()
        if row is None:
            raise KeyError(result_id)
        return _row_to_result(row)

    def predictions(self, result_id):
        with self._connect() as con:
            row = con.execute("SELECT data FROM predictions WHERE id = ?", (result_id,)).fetchone()
        if row is None:
            raise KeyError(result_id)
        return bytes(row[0])

    def acquire(self, submitter, limit, window_s, now=None):
        now = time.time() if now is None else now
        with self._connect() as con, self._write(con):
            (count,) = con.execute(
                "SELECT COUNT(*) FROM attempts WHERE submitter = ? AND at > ?", (submitter, now - window_s)
            ).fetchone()
            if count >= limit:
                return False
            con.execute("INSERT INTO attempts (submitter, at) VALUES (?, ?)", (submitter, now))
        return True

    def retry_at(self, submitter, limit, window_s, now):
        with self._connect() as con:
            times = [at for (at,) in con.execute(
                "SELECT at FROM attempts WHERE submitter = ? AND at > ? ORDER BY at DESC LIMIT ?", (submitter, now - window_s, limit)
            )]
        return now if len(times) < limit else times[-1] + window_s  # when the oldest of the last ``limit`` leaves the window

    def log_attempts(self, attempts: list[tuple[str, float]]) -> None:
        """Bulk-load past attempts (used to rebuild an index)."""
        with self._connect() as con, self._write(con):
            con.executemany("INSERT INTO attempts (submitter, at) VALUES (?, ?)", attempts)

    def integrity_check(self) -> str:
        """SQLite's own consistency check; ``"ok"`` when the file is sound."""
        with self._connect() as con:
            return con.execute("PRAGMA integrity_check").fetchone()[0]


# --------------------------------------------------------------------------------------- Hub


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (all or nothing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class HubStore(ResultsStore):
    """Results as files in ``folder``, pushed to the Hub dataset repo ``repo_id`` by a
    ``CommitScheduler`` every ``every_minutes``; indexed in a ``SqliteStore`` under ``index_dir``.

    Layout of the repo: ``submissions/<variant>/<id>.json`` (metadata and scores),
    ``predictions/<variant>/<id>.jsonl`` (the raw file) and ``attempts.jsonl`` (the rate-limit log).
    ``download`` and ``scheduler_factory`` default to huggingface_hub's ``snapshot_download`` and
    ``CommitScheduler``; tests pass local stand-ins because both need the network.
    """

    ALLOW_PATTERNS = ["submissions/*/*.json", "predictions/*/*.jsonl", "attempts.jsonl"]

    def __init__(
        self,
        folder: str | os.PathLike,
        repo_id: str,
        token: str | None,
        *,
        index_dir: str | os.PathLike,
        every_minutes: float = 5,
        download: Callable[..., Any] | None = None,
        scheduler_factory: Callable[..., Any] | None = None,
    ) -> None:
        from huggingface_hub import CommitScheduler, snapshot_download
        from huggingface_hub.errors import RepositoryNotFoundError

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            (download or snapshot_download)(
                repo_id, repo_type="dataset", local_dir=self.folder, token=token, allow_patterns=self.ALLOW_PATTERNS
            )
        except RepositoryNotFoundError:
            pass  # a new results repo: the scheduler creates it on first push
        self.scheduler = (scheduler_factory or CommitScheduler)(
            repo_id=repo_id, repo_type="dataset", folder_path=self.folder, every=every_minutes,
            token=token, allow_patterns=self.ALLOW_PATTERNS, private=True,
        )
        self._lock = threading.Lock()
        self.index = self._rebuild_index(Path(index_dir))

    def _rebuild_index(self, index_dir: Path) -> SqliteStore:
        """A fresh index of the folder: every complete record (record file and its predictions)."""
        index_dir.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            (index_dir / (SqliteStore.FILENAME + suffix)).unlink(missing_ok=True)
        index = SqliteStore(index_dir)
        for path in sorted(self.folder.glob("submissions/*/*.json")):
            record = StoredResult.from_json(json.loads(path.read_text(encoding="utf-8")))
            data = self._predictions_path(record.variant, record.id)
            if not data.is_file():
                continue
            index.add(
                variant=record.variant, sha256=record.sha256, predictions=data.read_bytes(), scores=record.scores,
                metadata=record.metadata, submitter=record.submitter, num_lines=record.num_lines,
                now=record.created_at,
            )
        log = self.folder / "attempts.jsonl"
        if log.is_file():
            entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
            index.log_attempts([(e["submitter"], e["at"]) for e in entries])
        return index

    def _predictions_path(self, variant: str, rid: str) -> Path:
        return self.folder / "predictions" / variant / f"{rid}.jsonl"

    def add(self, *, variant, sha256, predictions, scores, metadata, submitter, num_lines, now=None):
        with self._lock:
            existing = self.index.find(variant, sha256)
            if existing is not None:
                return existing, False
            record = StoredResult(
                id=result_id(variant, sha256), variant=variant, sha256=sha256, metadata=metadata,
                submitter=submitter, created_at=time.time() if now is None else now,
                num_lines=num_lines, scores=scores,
            )
            with self.scheduler.lock:
                write_atomic(self._predictions_path(variant, record.id), bytes(predictions))
                write_atomic(
                    self.folder / "submissions" / variant / f"{record.id}.json",
                    json.dumps(record.to_json(), indent=1).encode("utf-8"),
                )
            return self.index.add(
                variant=variant, sha256=sha256, predictions=predictions, scores=scores, metadata=metadata,
                submitter=submitter, num_lines=num_lines, now=record.created_at,
            )

    def find(self, variant, sha256):
        return self.index.find(variant, sha256)

    def results(self, variant=None):
        return self.index.results(variant)

    def get(self, result_id):
        return self.index.get(result_id)

    def predictions(self, result_id):
        return self.index.predictions(result_id)

    def acquire(self, submitter, limit, window_s, now=None):
        now = time.time() if now is None else now
        with self._lock:
            if not self.index.acquire(submitter, limit, window_s, now):
                return False
            with self.scheduler.lock, open(self.folder / "attempts.jsonl", "a", encoding="utf-8") as log:
                log.write(json.dumps({"submitter": submitter, "at": now}) + "\n")
        return True

    def retry_at(self, submitter, limit, window_s, now):
        return self.index.retry_at(submitter, limit, window_s, now)

    def close(self):
        """Push what is pending, then stop the scheduler (a failed push is logged, not raised)."""
        try:
            self.scheduler.trigger().result()
        except Exception:
            logger.exception("final push of the results folder to the Hub failed")
        self.scheduler.stop()


def open_store(config) -> ResultsStore:
    """The store a ``SpaceConfig`` asks for: the Hub store with a token and repo, else SQLite."""
    if config.uses_hub_store:
        return HubStore(
            config.data_dir / "hub-results", config.results_repo, config.hf_token,
            index_dir=config.data_dir / "hub-index",
        )
    return SqliteStore(config.data_dir)
