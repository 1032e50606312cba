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

The records, errors and interface are in ``space.records``, the two stores in
``space.sqlite_store`` and ``space.hub_store``; this module opens the one a configuration asks
for (``open_store``) and is where the rest of the Space imports them from.
"""

from __future__ import annotations

from speakersleuth.space.hub_store import HubStore
from speakersleuth.space.records import (
    BASELINE_SUBMITTER,
    Metadata,
    RateLimited,
    Refused,
    ResultsStore,
    ReviewDecision,
    StoredResult,
    StoreFull,
    Withdrawal,
    result_id,
)
from speakersleuth.space.sqlite_store import SqliteStore

__all__ = [
    "BASELINE_SUBMITTER",
    "HubStore",
    "Metadata",
    "RateLimited",
    "Refused",
    "ResultsStore",
    "ReviewDecision",
    "SqliteStore",
    "StoreFull",
    "StoredResult",
    "Withdrawal",
    "open_store",
    "result_id",
]


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
