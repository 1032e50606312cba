"""The SQLite results store (``SqliteStore``): a database in WAL mode in the data folder, every
write one ``BEGIN IMMEDIATE`` transaction (``space.store`` describes the store as a whole)."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from speakersleuth.space.records import (
    Limits,
    Metadata,
    ResultsStore,
    ReviewDecision,
    StoredResult,
    Withdrawal,
    check_withdrawal,
)

SCHEMA_VERSION = 2  # 2: withdrawals

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

    def store_record(self, record, predictions, limits=None, on_admitted: Callable[[], None] | None = None):
        """``ResultsStore.store_record``; ``on_admitted`` runs inside the write transaction once
        the record is admitted (the Hub store writes its files there: if it raises, nothing is stored)."""
        limits = limits or Limits()
        with self._connect() as con, self._write(con):
            existing = self._find(con, record.variant, record.sha256)
            if existing is not None:
                return existing, False
            limits.check(
                record,
                predictions,
                stored_bytes=self._stored_bytes(con),
                every_result=lambda: [
                    _row_to_result(r) for r in con.execute(f"{_SELECT} ORDER BY s.created_at, s.id")
                ],
                attempts_since=lambda since: self._attempts(con, record.submitter, since),
            )
            if limits.rate_limit is not None:
                con.execute(
                    "INSERT INTO attempts (submitter, at) VALUES (?, ?)", (record.submitter, record.created_at)
                )
            con.execute(
                "INSERT INTO submissions (id, variant, sha256, metadata, submitter, created_at, num_lines, scores)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.variant,
                    record.sha256,
                    json.dumps(asdict(record.metadata)),
                    record.submitter,
                    record.created_at,
                    record.num_lines,
                    json.dumps(record.scores),
                ),
            )
            con.execute("INSERT INTO predictions (id, data) VALUES (?, ?)", (record.id, bytes(predictions)))
            if on_admitted is not None:
                on_admitted()
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
            check_withdrawal(record, submitter)
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
