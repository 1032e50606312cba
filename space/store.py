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

A submission is unique on ``(variant, sha256)`` of its canonical predictions (``Submission.
canonical()``; the store keeps that form, not the upload): storing the same predictions again
returns the first record instead of a new one. The stored predictions have a size budget
(``StoreFull``). A withdrawn submission leaves the leaderboard but stays in the store with who
withdrew it, when and why (the audit trail), and its predictions cannot be submitted again.

Review decisions (``ReviewDecision``: a reviewer accepts or rejects one dialogue of one variant)
are kept the same way, every one of them (the audit trail); ``space.review`` reads the latest of
each reviewer.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from space.text import encodable
from speech.files import write_bytes_atomic

SCHEMA_VERSION = 2  # 2: withdrawals
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
    setting: str = ""  # one of ``metrics.analysis.SETTINGS``, or "" (not tagged)

    def __post_init__(self) -> None:  # a name stored before the form refused surrogates must still draw
        for name, value in asdict(self).items():
            object.__setattr__(self, name, encodable(value))


@dataclass(frozen=True)
class Withdrawal:
    """Who withdrew a submission, when and why."""

    submitter: str
    at: float
    reason: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", encodable(self.reason))


@dataclass(frozen=True)
class ReviewDecision:
    """One reviewer's verdict (``accept`` or ``reject``, with a reason) on one dialogue of one variant."""

    variant: str
    dialogue_id: str
    reviewer: str
    decision: str
    reason: str
    at: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", encodable(self.reason))


class StoreFull(RuntimeError):
    """Storing a submission would take the stored predictions past the store's size budget."""

    def __init__(self, used: int, size: int, budget: int):
        self.used, self.size, self.budget = used, size, budget
        super().__init__(
            f"the results store holds {used:,} bytes of predictions; {size:,} more would pass its budget of {budget:,}"
        )


class RateLimited(RuntimeError):
    """``add``'s ``rate_limit``: the submitter already made ``limit`` submissions in the window."""


class Refused(ValueError):
    """``add``'s ``admit`` check found reasons (``errors``) not to store a submission."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


#: A check run on every stored record (withdrawn too) under the store's write lock, so what it
#: decides cannot race another submission; returns the reasons to refuse (none: store it).
Admit = Callable[[list["StoredResult"]], list[str]]


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
    withdrawal: Withdrawal | None = None

    @property
    def verified(self) -> bool:
        """A built-in baseline, stored by the Space's own seeding, not by a submitter."""
        return self.submitter == BASELINE_SUBMITTER

    def to_json(self) -> dict[str, Any]:
        """The record as the Hub store writes it (a withdrawal is a file of its own)."""
        data = asdict(self)
        del data["withdrawal"]
        return data

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
        budget_bytes: int | None = None,
        admit: Admit | None = None,
        rate_limit: tuple[int, float] | None = None,
    ) -> tuple[StoredResult, bool]:
        """Store a scored submission atomically; returns ``(record, created)``. When the same
        ``(variant, sha256)`` is already stored (withdrawn or not), nothing is written and the
        first record comes back with ``created=False``. Nothing is written either when the stored
        predictions would pass ``budget_bytes`` (``StoreFull``) or ``admit`` refuses (``Refused``).
        With ``rate_limit=(limit, window_s)`` the submission is also one attempt of ``submitter``
        at ``now`` in the rate-limit log (``acquire``, ``retry_at``), logged with it in the same
        transaction; nothing is written (``RateLimited``) when ``submitter`` already has ``limit``
        attempts in the last ``window_s`` seconds. Only a stored submission uses quota."""

    @abstractmethod
    def find(self, variant: str, sha256: str) -> StoredResult | None:
        """The record of the same predictions submitted earlier (perhaps withdrawn), if any."""

    @abstractmethod
    def results(
        self, variant: str | None = None, *, include_withdrawn: bool = False, submitter: str | None = None
    ) -> list[StoredResult]:
        """Every accepted submission (of one variant; of one submitter) not withdrawn (unless
        asked), oldest first."""

    @abstractmethod
    def get(self, result_id: str) -> StoredResult:
        """One stored submission by its id, withdrawn or not; ``KeyError`` if unknown."""

    @abstractmethod
    def predictions(self, result_id: str) -> bytes:
        """The canonical predictions of a stored submission; ``KeyError`` if unknown."""

    @abstractmethod
    def withdraw(self, result_id: str, submitter: str, reason: str = "", now: float | None = None) -> StoredResult:
        """Take a submission off the leaderboard, recording ``Withdrawal(submitter, now, reason)``;
        returns the withdrawn record. ``KeyError`` if unknown; ``PermissionError`` if
        ``submitter`` did not submit it; ``ValueError`` if it is already withdrawn."""

    @abstractmethod
    def stored_bytes(self) -> int:
        """The size of all stored predictions (what ``budget_bytes`` limits)."""

    @abstractmethod
    def acquire(self, submitter: str, limit: int, window_s: float, now: float | None = None) -> bool:
        """Atomically check the rate limit and log one submission attempt: ``True`` (and logged)
        when ``submitter`` made fewer than ``limit`` attempts in the last ``window_s`` seconds."""

    @abstractmethod
    def retry_at(self, submitter: str, limit: int, window_s: float, now: float) -> float:
        """When ``submitter`` may next be granted ``acquire`` (``now`` if already)."""

    @abstractmethod
    def add_review(self, decision: ReviewDecision) -> None:
        """Append one review decision (earlier ones stay: the audit trail)."""

    @abstractmethod
    def reviews(self) -> list[ReviewDecision]:
        """Every review decision ever stored, oldest first."""

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
CREATE TABLE IF NOT EXISTS withdrawals (
    id TEXT PRIMARY KEY REFERENCES submissions (id),
    submitter TEXT NOT NULL,
    at REAL NOT NULL,
    reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS review_decisions (
    variant TEXT NOT NULL,
    dialogue_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT NOT NULL,
    at REAL NOT NULL
);
"""

_COLUMNS = "s.id, s.variant, s.sha256, s.metadata, s.submitter, s.created_at, s.num_lines, s.scores, w.submitter, w.at, w.reason"
_SELECT = f"SELECT {_COLUMNS} FROM submissions s LEFT JOIN withdrawals w ON w.id = s.id"


@functools.lru_cache(maxsize=8192)
def _decoded(text: str) -> Any:
    """A stored JSON column decoded, once per distinct text: every leaderboard refresh and every
    submission's name check reads all rows, and decoding their scores again each time was most of
    it. The same object is returned for the same text, so readers must not change it."""
    return json.loads(text)


def _row_to_result(row: tuple) -> StoredResult:
    rid, variant, sha, metadata, submitter, created_at, num_lines, scores, w_submitter, w_at, w_reason = row
    return StoredResult(
        id=rid,
        variant=variant,
        sha256=sha,
        metadata=Metadata(**_decoded(metadata)),
        submitter=submitter,
        created_at=created_at,
        num_lines=num_lines,
        scores=_decoded(scores),
        withdrawal=None if w_at is None else Withdrawal(w_submitter, w_at, w_reason),
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
                raise RuntimeError(
                    f"{self.path}: results store schema {version} is newer than this code ({SCHEMA_VERSION})"
                )
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

    def add(
        self,
        *,
        variant,
        sha256,
        predictions,
        scores,
        metadata,
        submitter,
        num_lines,
        now=None,
        budget_bytes=None,
        admit=None,
        rate_limit=None,
    ):
        record = StoredResult(
            id=result_id(variant, sha256),
            variant=variant,
            sha256=sha256,
            metadata=metadata,
            submitter=submitter,
            created_at=time.time() if now is None else now,
            num_lines=num_lines,
            scores=scores,
        )
        with self._connect() as con, self._write(con):
            existing = self._find(con, variant, sha256)
            if existing is not None:
                return existing, False
            used = self._stored_bytes(con)
            if budget_bytes is not None and used + len(predictions) > budget_bytes:
                raise StoreFull(used, len(predictions), budget_bytes)
            if admit is not None and (errors := admit([_row_to_result(r) for r in con.execute(_SELECT)])):
                raise Refused(errors)
            if rate_limit is not None:
                limit, window_s = rate_limit
                if self._attempts(con, submitter, record.created_at - window_s) >= limit:
                    raise RateLimited(f"{submitter} made {limit} submissions in the last {window_s} s")
                con.execute("INSERT INTO attempts (submitter, at) VALUES (?, ?)", (submitter, record.created_at))
            con.execute(
                "INSERT INTO submissions (id, variant, sha256, metadata, submitter, created_at, num_lines, scores)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    variant,
                    sha256,
                    json.dumps(asdict(metadata)),
                    submitter,
                    record.created_at,
                    num_lines,
                    json.dumps(scores),
                ),
            )
            con.execute("INSERT INTO predictions (id, data) VALUES (?, ?)", (record.id, bytes(predictions)))
        return record, True

    @staticmethod
    def _find(con: sqlite3.Connection, variant: str, sha256: str) -> StoredResult | None:
        row = con.execute(f"{_SELECT} WHERE s.variant = ? AND s.sha256 = ?", (variant, sha256)).fetchone()
        return _row_to_result(row) if row else None

    def find(self, variant, sha256):
        with self._connect() as con:
            return self._find(con, variant, sha256)

    def results(self, variant=None, *, include_withdrawn=False, submitter=None):
        conditions = {"s.variant = ?": variant, "s.submitter = ?": submitter}
        where = ([] if include_withdrawn else ["w.id IS NULL"]) + [c for c, v in conditions.items() if v is not None]
        sql = _SELECT + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY s.created_at, s.id"
        with self._connect() as con:
            values = tuple(v for v in conditions.values() if v is not None)
            return [_row_to_result(r) for r in con.execute(sql, values).fetchall()]

    def get(self, result_id):
        with self._connect() as con:
            return self._get(con, result_id)

    @staticmethod
    def _get(con: sqlite3.Connection, result_id: str) -> StoredResult:
        row = con.execute(f"{_SELECT} WHERE s.id = ?", (result_id,)).fetchone()
        if row is None:
            raise KeyError(result_id)
        return _row_to_result(row)

    def withdraw(self, result_id, submitter, reason="", now=None):
        withdrawal = Withdrawal(submitter, time.time() if now is None else now, reason)
        with self._connect() as con, self._write(con):
            record = self._get(con, result_id)
            _check_withdrawal(record, submitter)
            con.execute(
                "INSERT INTO withdrawals (id, submitter, at, reason) VALUES (?, ?, ?, ?)",
                (result_id, withdrawal.submitter, withdrawal.at, withdrawal.reason),
            )
        return replace(record, withdrawal=withdrawal)

    def stored_bytes(self):
        with self._connect() as con:
            return self._stored_bytes(con)

    @staticmethod
    def _stored_bytes(con: sqlite3.Connection) -> int:
        return con.execute("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM predictions").fetchone()[0]

    def predictions(self, result_id):
        with self._connect() as con:
            row = con.execute("SELECT data FROM predictions WHERE id = ?", (result_id,)).fetchone()
        if row is None:
            raise KeyError(result_id)
        return bytes(row[0])

    def acquire(self, submitter, limit, window_s, now=None):
        now = time.time() if now is None else now
        with self._connect() as con, self._write(con):
            if self._attempts(con, submitter, now - window_s) >= limit:
                return False
            con.execute("INSERT INTO attempts (submitter, at) VALUES (?, ?)", (submitter, now))
        return True

    def attempts(self, submitter: str, since: float) -> int:
        """How many attempts ``submitter`` made after ``since``."""
        with self._connect() as con:
            return self._attempts(con, submitter, since)

    @staticmethod
    def _attempts(con: sqlite3.Connection, submitter: str, since: float) -> int:
        return con.execute(
            "SELECT COUNT(*) FROM attempts WHERE submitter = ? AND at > ?", (submitter, since)
        ).fetchone()[0]

    def retry_at(self, submitter, limit, window_s, now):
        with self._connect() as con:
            times = [
                at
                for (at,) in con.execute(
                    "SELECT at FROM attempts WHERE submitter = ? AND at > ? ORDER BY at DESC LIMIT ?",
                    (submitter, now - window_s, limit),
                )
            ]
        return (
            now if len(times) < limit else times[-1] + window_s
        )  # when the oldest of the last ``limit`` leaves the window

    def add_review(self, decision):
        with self._connect() as con, self._write(con):
            con.execute(
                "INSERT INTO review_decisions (variant, dialogue_id, reviewer, decision, reason, at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    decision.variant,
                    decision.dialogue_id,
                    decision.reviewer,
                    decision.decision,
                    decision.reason,
                    decision.at,
                ),
            )

    def reviews(self):
        with self._connect() as con:
            rows = con.execute(
                "SELECT variant, dialogue_id, reviewer, decision, reason, at FROM review_decisions ORDER BY at, rowid"
            ).fetchall()
        return [ReviewDecision(*row) for row in rows]

    def log_attempts(self, attempts: list[tuple[str, float]]) -> None:
        """Bulk-load past attempts (used to rebuild an index)."""
        with self._connect() as con, self._write(con):
            con.executemany("INSERT INTO attempts (submitter, at) VALUES (?, ?)", attempts)

    def integrity_check(self) -> str:
        """SQLite's own consistency check; ``"ok"`` when the file is sound."""
        with self._connect() as con:
            return con.execute("PRAGMA integrity_check").fetchone()[0]


def _check_withdrawal(record: StoredResult, submitter: str) -> None:
    if record.submitter != submitter:
        raise PermissionError(f"{record.id} was submitted by another user; only its submitter can withdraw it")
    if record.withdrawal is not None:
        raise ValueError(f"{record.id} is already withdrawn")


# --------------------------------------------------------------------------------------- Hub


class HubStore(ResultsStore):
    """Results as files in ``folder``, pushed to the Hub dataset repo ``repo_id`` by a
    ``CommitScheduler`` every ``every_minutes``; indexed in a ``SqliteStore`` under ``index_dir``.

    Layout of the repo: ``submissions/<variant>/<id>.json`` (metadata and scores),
    ``predictions/<variant>/<id>.jsonl`` (the canonical predictions), ``withdrawals/<variant>/<id>.json``
    (who withdrew a submission, when, why), ``reviews/<variant>/<uuid>.json`` (one review decision
    each) and ``attempts.jsonl`` (the rate-limit log).
    ``download`` and ``scheduler_factory`` default to huggingface_hub's ``snapshot_download`` and
    ``CommitScheduler``; tests pass local stand-ins because both need the network.
    """

    ALLOW_PATTERNS = [
        "submissions/*/*.json",
        "predictions/*/*.jsonl",
        "withdrawals/*/*.json",
        "reviews/*/*.json",
        "attempts.jsonl",
    ]

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
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=self.folder,
            every=every_minutes,
            token=token,
            allow_patterns=self.ALLOW_PATTERNS,
            private=True,
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
                variant=record.variant,
                sha256=record.sha256,
                predictions=data.read_bytes(),
                scores=record.scores,
                metadata=record.metadata,
                submitter=record.submitter,
                num_lines=record.num_lines,
                now=record.created_at,
            )
        for path in sorted(self.folder.glob("withdrawals/*/*.json")):
            withdrawal = Withdrawal(**json.loads(path.read_text(encoding="utf-8")))
            with contextlib.suppress(KeyError, ValueError):  # a withdrawal of a record that did not complete
                index.withdraw(path.stem, withdrawal.submitter, withdrawal.reason, withdrawal.at)
        reviews = [
            ReviewDecision(**json.loads(p.read_text(encoding="utf-8"))) for p in self.folder.glob("reviews/*/*.json")
        ]
        for decision in sorted(reviews, key=lambda d: d.at):
            index.add_review(decision)
        log = self.folder / "attempts.jsonl"
        if log.is_file():
            entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
            index.log_attempts([(e["submitter"], e["at"]) for e in entries])
        return index

    def _predictions_path(self, variant: str, rid: str) -> Path:
        return self.folder / "predictions" / variant / f"{rid}.jsonl"

    def add(
        self,
        *,
        variant,
        sha256,
        predictions,
        scores,
        metadata,
        submitter,
        num_lines,
        now=None,
        budget_bytes=None,
        admit=None,
        rate_limit=None,
    ):
        now = time.time() if now is None else now
        with self._lock:
            existing = self.index.find(variant, sha256)
            if existing is not None:
                return existing, False
            used = self.index.stored_bytes()
            if budget_bytes is not None and used + len(predictions) > budget_bytes:
                raise StoreFull(used, len(predictions), budget_bytes)
            if admit is not None and (errors := admit(self.index.results(include_withdrawn=True))):
                raise Refused(errors)
            if rate_limit is not None and self.index.attempts(submitter, now - rate_limit[1]) >= rate_limit[0]:
                raise RateLimited(f"{submitter} made {rate_limit[0]} submissions in the last {rate_limit[1]} s")
            record = StoredResult(
                id=result_id(variant, sha256),
                variant=variant,
                sha256=sha256,
                metadata=metadata,
                submitter=submitter,
                created_at=now,
                num_lines=num_lines,
                scores=scores,
            )
            with self.scheduler.lock:
                write_bytes_atomic(self._predictions_path(variant, record.id), bytes(predictions), durable=True)
                write_bytes_atomic(
                    self.folder / "submissions" / variant / f"{record.id}.json",
                    json.dumps(record.to_json(), indent=1).encode("utf-8"),
                    durable=True,
                )
                if rate_limit is not None:  # the attempt goes with the submission, as in the index below
                    with open(self.folder / "attempts.jsonl", "a", encoding="utf-8") as log:
                        log.write(json.dumps({"submitter": submitter, "at": now}) + "\n")
            return self.index.add(
                variant=variant,
                sha256=sha256,
                predictions=predictions,
                scores=scores,
                metadata=metadata,
                submitter=submitter,
                num_lines=num_lines,
                now=now,
                rate_limit=rate_limit,
            )

    def find(self, variant, sha256):
        return self.index.find(variant, sha256)

    def results(self, variant=None, *, include_withdrawn=False, submitter=None):
        return self.index.results(variant, include_withdrawn=include_withdrawn, submitter=submitter)

    def get(self, result_id):
        return self.index.get(result_id)

    def predictions(self, result_id):
        return self.index.predictions(result_id)

    def withdraw(self, result_id, submitter, reason="", now=None):
        with self._lock:
            record = self.index.get(result_id)
            _check_withdrawal(record, submitter)
            withdrawal = Withdrawal(submitter, time.time() if now is None else now, reason)
            with self.scheduler.lock:
                write_bytes_atomic(
                    self.folder / "withdrawals" / record.variant / f"{result_id}.json",
                    json.dumps(asdict(withdrawal), indent=1).encode("utf-8"),
                    durable=True,
                )
            return self.index.withdraw(result_id, submitter, withdrawal.reason, withdrawal.at)

    def stored_bytes(self):
        return self.index.stored_bytes()

    def add_review(self, decision):
        with self._lock:
            with self.scheduler.lock:
                write_bytes_atomic(
                    self.folder / "reviews" / decision.variant / f"{uuid.uuid4().hex}.json",
                    json.dumps(asdict(decision), indent=1).encode("utf-8"),
                    durable=True,
                )
            self.index.add_review(decision)

    def reviews(self):
        return self.index.reviews()

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
            config.data_dir / "hub-results",
            config.results_repo,
            config.hf_token,
            index_dir=config.data_dir / "hub-index",
        )
    return SqliteStore(config.data_dir)
