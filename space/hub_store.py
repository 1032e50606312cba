"""The Hub-backed results store (``HubStore``): JSON/JSONL files in a folder that a
``huggingface_hub.CommitScheduler`` pushes to a Hub dataset repo, indexed in a local
``SqliteStore`` (``space.store`` describes the store as a whole)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from speakersleuth.space.records import (
    ResultsStore,
    ReviewDecision,
    StoredResult,
    Withdrawal,
    check_withdrawal,
)
from speakersleuth.space.sqlite_store import SqliteStore
from speakersleuth.speech.files import write_bytes_atomic

logger = logging.getLogger(__name__)


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
            index.store_record(record, data.read_bytes())
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

    def store_record(self, record, predictions, limits=None):
        """``ResultsStore.store_record``: the index admits the record and, inside its write
        transaction, the files are written (so a failed write leaves the index as it was)."""
        log_attempt = limits is not None and limits.rate_limit is not None
        with self._lock:
            return self.index.store_record(
                record,
                predictions,
                limits,
                on_admitted=lambda: self._write_submission_files(record, predictions, log_attempt=log_attempt),
            )

    def _write_submission_files(self, record: StoredResult, predictions: bytes, *, log_attempt: bool) -> None:
        """The predictions, then the record, each renamed into place; with ``log_attempt`` the
        submission is also one line of the rate-limit log (as in the index, whose transaction this runs in)."""
        with self.scheduler.lock:
            write_bytes_atomic(self._predictions_path(record.variant, record.id), bytes(predictions), durable=True)
            write_bytes_atomic(
                self.folder / "submissions" / record.variant / f"{record.id}.json",
                json.dumps(record.to_json(), indent=1).encode("utf-8"),
                durable=True,
            )
            if log_attempt:
                with open(self.folder / "attempts.jsonl", "a", encoding="utf-8") as log:
                    log.write(json.dumps({"submitter": record.submitter, "at": record.created_at}) + "\n")

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
            check_withdrawal(record, submitter)
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
