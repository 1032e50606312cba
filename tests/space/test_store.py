"""The Space's results store: SQLite (default) and the Hub folder store, offline."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.store import (
    BASELINE_SUBMITTER,
    HubStore,
    Metadata,
    RateLimited,
    Refused,
    SqliteStore,
    StoreFull,
    Withdrawal,
    open_store,
    result_id,
)
from tests.support.store_doubles import FakeScheduler, hub_store, store_entry

ROOT = Path(__file__).resolve().parents[2]


def test_sqlite_roundtrip_duplicates_and_restart(tmp_path):
    store = SqliteStore(tmp_path)
    first, created = store.add(**store_entry(1), now=100.0)
    assert created and first.id == result_id("main", first.sha256)
    again, created = store.add(**{**store_entry(1), "metadata": Metadata("renamed")}, now=200.0)
    assert not created and again == first  # identical file recognised; nothing new written
    other_variant, created = store.add(**store_entry(1, "4vc"), now=300.0)
    assert created and other_variant.id != first.id
    store.add(**store_entry(2), now=400.0)
    assert [r.metadata.model_name for r in store.results("main")] == ["model 1", "model 2"]
    assert len(store.results()) == 3
    assert store.find("main", first.sha256) == first and store.find("10turn", first.sha256) is None
    with pytest.raises(KeyError):
        store.predictions("main-unknown")
    assert store.get(first.id) == first and not first.verified
    with pytest.raises(KeyError):
        store.get("main-unknown")
    baseline, _ = store.add(**{**store_entry(3), "submitter": BASELINE_SUBMITTER}, now=500.0)
    assert baseline.verified

    reopened = SqliteStore(tmp_path)  # a restart: a new process would see the same
    assert reopened.results() == store.results()
    assert reopened.get(baseline.id).verified
    assert reopened.predictions(first.id) == store_entry(1)["predictions"]
    assert reopened.results("main")[0].scores == {"detection": {"balanced_accuracy": 51.0}}
    with sqlite3.connect(tmp_path / SqliteStore.FILENAME) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_rate_limit_window_is_atomic_and_persistent(tmp_path):
    store = SqliteStore(tmp_path)
    assert store.acquire("alice", 2, 10, now=0) and store.acquire("alice", 2, 10, now=1)
    assert not store.acquire("alice", 2, 10, now=2)
    assert store.acquire("bob", 2, 10, now=2)
    assert not SqliteStore(tmp_path).acquire("alice", 2, 10, now=9)  # survives a restart
    assert store.retry_at("alice", 2, 10, now=9) == 10  # when the attempt at 0 leaves the window
    assert store.acquire("alice", 2, 10, now=10.5)  # the first attempt left the window
    assert store.retry_at("alice", 2, 10, now=10.5) == 11 and store.retry_at("dave", 2, 10, now=10.5) == 10.5
    # 20 threads race for 5 slots: exactly 5 win
    wins = []
    threads = [threading.Thread(target=lambda: wins.append(store.acquire("carol", 5, 60, now=50))) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(wins) == 5


def test_the_rate_limit_window_excludes_an_attempt_exactly_one_window_old(tmp_path):
    """The window is half-open: an attempt at ``at`` counts while ``now - window_s < at``, so at
    ``now = at + window_s`` it has left (the time ``retry_at`` names is one ``acquire`` grants).
    With a limit of 1 in 10 s and the attempt at 0: refused at 9.999, granted at 10 exactly."""
    store = SqliteStore(tmp_path)
    assert store.acquire("alice", 1, 10, now=0.0)
    assert not store.acquire("alice", 1, 10, now=9.999)
    assert store.retry_at("alice", 1, 10, now=9.999) == 10.0
    assert store.acquire("alice", 1, 10, now=10.0)
    assert store.attempts("alice", since=0.0) == 1 and store.attempts("alice", since=-0.001) == 2
    with pytest.raises(RateLimited):  # a submission counts its window alike: the attempt at 10 is 0 s old
        store.add(**{**store_entry(1), "submitter": "alice"}, now=19.999, rate_limit=(1, 10))
    assert store.add(**{**store_entry(1), "submitter": "alice"}, now=20.0, rate_limit=(1, 10))[1]


def test_a_writer_holds_the_write_lock_from_the_start_of_its_transaction(tmp_path):
    """Admission reads the store and then writes: the lock is taken before the reads, so while one
    writer's ``admit`` runs no other connection can begin a write (two writers cannot both pass
    admission on the same view of the store)."""
    store = SqliteStore(tmp_path)
    seen = []

    def admit(results):
        other = sqlite3.connect(tmp_path / SqliteStore.FILENAME, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            seen.append("another writer began")
            other.execute("ROLLBACK")
        except sqlite3.OperationalError as error:
            seen.append(str(error))
        finally:
            other.close()
        return []

    assert store.add(**store_entry(1), admit=admit)[1]
    assert seen == ["database is locked"]


def test_failure_inside_the_transaction_leaves_nothing(tmp_path):
    store = SqliteStore(tmp_path)
    bad = store_entry(1)
    bad["predictions"] = object()  # fails after the submission row was inserted
    with pytest.raises(TypeError):
        store.add(**bad)
    assert store.results() == [] and store.find("main", bad["sha256"]) is None
    assert store.add(**store_entry(1))[1]  # and the store still works


def test_crash_mid_write_leaves_no_partial_row(tmp_path):
    """A process killed inside the write transaction (no rollback, no cleanup): after reopening,
    the committed rows are there, the half-written one is not, and the file is sound."""
    code = textwrap.dedent(f"""
        import os, hashlib, sys
        sys.path.insert(0, {str(ROOT)!r})
        from speakersleuth.space.store import SqliteStore, Metadata
        store = SqliteStore({str(tmp_path)!r})
        def add(i, predictions):
            store.add(variant="main", sha256=hashlib.sha256(str(i).encode()).hexdigest(), predictions=predictions,
                      scores={{"i": i}}, metadata=Metadata(f"m{{i}}"), submitter="s", num_lines=1)
        add(0, b"committed" * 100000)
        class Crash:
            def __bytes__(self):
                os._exit(9)  # dies between the two INSERTs of one transaction
        add(1, Crash())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 9, proc.stderr
    assert (tmp_path / (SqliteStore.FILENAME + "-wal")).exists()  # the crash left the journal behind
    store = SqliteStore(tmp_path)
    assert store.integrity_check() == "ok"
    assert [r.metadata.model_name for r in store.results()] == ["m0"]
    assert store.predictions(store.results()[0].id) == b"committed" * 100000
    with sqlite3.connect(tmp_path / SqliteStore.FILENAME) as con:
        assert con.execute("SELECT COUNT(*) FROM predictions").fetchone()[0] == 1


@pytest.mark.parametrize("kind", ["sqlite", "hub"])
def test_admit_sees_every_stored_result_oldest_first(tmp_path, kind):
    """``admit`` (the name-conflict check, which keeps the first owner of a name) gets the stored
    results oldest first, as ``results`` gives them, whatever order they were stored in."""
    store = SqliteStore(tmp_path) if kind == "sqlite" else hub_store(tmp_path / "folder", tmp_path / "index")
    for i, at in enumerate([5.0, 1.0, 3.0]):
        store.add(**store_entry(i), now=at)
    seen = []
    store.add(**store_entry(3), now=9.0, admit=lambda results: seen.extend(r.created_at for r in results) or [])
    assert seen == [1.0, 3.0, 5.0]


@pytest.mark.parametrize("kind", ["sqlite", "hub"])
def test_results_of_one_submitter(tmp_path, kind):
    """The submit handler reads only the submitter's own history: the filter must select by
    submitter, keep the variant and withdrawal filters, and keep the order."""
    store = SqliteStore(tmp_path) if kind == "sqlite" else hub_store(tmp_path / "folder", tmp_path / "index")
    owners = ["alice", "bob", "alice", "alice", "bob"]
    times = [5.0, 1.0, 4.0, 2.0, 3.0]  # not the order of adding: results come oldest first
    added = [
        store.add(**{**store_entry(i, "4vc" if i == 3 else "main"), "submitter": who}, now=at)[0]
        for i, (who, at) in enumerate(zip(owners, times))
    ]
    store.withdraw(added[2].id, "alice", "mistake", now=10.0)
    oldest_first = sorted(zip(added, owners, times), key=lambda e: e[2])
    expected = {
        (who, variant, withdrawn): [
            r.id
            for r, o, _ in oldest_first
            if o == who and (variant is None or r.variant == variant) and (withdrawn or r.id != added[2].id)
        ]
        for who in ("alice", "bob", "carol")
        for variant in (None, "main")
        for withdrawn in (False, True)
    }
    for (who, variant, withdrawn), ids in expected.items():
        assert [r.id for r in store.results(variant, include_withdrawn=withdrawn, submitter=who)] == ids
    assert [r.id for r in store.results(include_withdrawn=True)] == [
        r.id for r, _, _ in oldest_first
    ]  # no filter: everyone


def test_hub_store_files_restart_and_partial_writes(tmp_path):
    store = hub_store(tmp_path / "a", tmp_path / "index-a")
    assert store.scheduler.kwargs["repo_type"] == "dataset" and store.scheduler.kwargs["private"] is True
    first, created = store.add(**store_entry(1), now=10.0)
    assert created and not store.add(**store_entry(1))[1]
    assert store.acquire("alice", 1, 100, now=5) and not store.acquire("alice", 1, 100, now=6)
    record = json.loads((tmp_path / "a" / "submissions" / "main" / f"{first.id}.json").read_text())
    assert record["metadata"]["model_name"] == "model 1"
    assert (tmp_path / "a" / "predictions" / "main" / f"{first.id}.jsonl").read_bytes() == store_entry(1)[
        "predictions"
    ]
    # leftovers of a crash: predictions without a record, and a temporary file
    (tmp_path / "a" / "predictions" / "main" / "main-deadbeef.jsonl").write_bytes(b"{}")
    (tmp_path / "a" / "submissions" / "main" / ".x.json.1.2.tmp").write_text("{")
    store.close()
    assert store.scheduler.pushes == 1 and store.scheduler.stopped

    # a restart on a fresh machine: the folder comes back from the "Hub"
    again = hub_store(tmp_path / "b", tmp_path / "index-b", remote=tmp_path / "a")
    assert [r.id for r in again.results()] == [first.id]
    assert again.predictions(first.id) == store_entry(1)["predictions"]
    assert again.get(first.id) == first
    assert not again.acquire("alice", 1, 100, now=7)  # the rate-limit log came back too
    assert again.retry_at("alice", 1, 100, now=7) == 105


def test_a_hub_file_that_cannot_be_written_leaves_the_index_as_it_was(tmp_path):
    """The Hub files are written inside the index's transaction: when they fail, the submission is
    neither listed nor counted against the rate limit, and the same file can be submitted again."""
    store = hub_store(tmp_path / "a", tmp_path / "index-a")
    (tmp_path / "a" / "submissions").mkdir(parents=True)
    (tmp_path / "a" / "submissions" / "main").write_text("a file where the variant's folder goes")
    with pytest.raises(OSError):
        store.add(**store_entry(1), now=10.0, rate_limit=(1, 100))
    assert store.results(include_withdrawn=True) == [] and store.stored_bytes() == 0
    assert store.acquire("local:test", 1, 100, now=11.0)  # no attempt was logged
    (tmp_path / "a" / "submissions" / "main").unlink()
    assert store.add(**store_entry(1), now=12.0)[1]


def test_the_index_rebuild_skips_a_record_whose_predictions_never_landed(tmp_path):
    """A record file on the Hub without its predictions (the push carried one and not the other) is
    no result after a restart: the other record is listed, the incomplete one neither listed nor
    found, and its file can be submitted again."""
    store = hub_store(tmp_path / "a", tmp_path / "index-a")
    kept, _ = store.add(**store_entry(1), now=1.0)
    lost, _ = store.add(**store_entry(2), now=2.0)
    (tmp_path / "a" / "predictions" / "main" / f"{lost.id}.jsonl").unlink()
    again = hub_store(tmp_path / "b", tmp_path / "index-b", remote=tmp_path / "a")
    assert [r.id for r in again.results(include_withdrawn=True)] == [kept.id]
    assert again.find("main", lost.sha256) is None
    assert again.add(**store_entry(2), now=3.0)[1]


def test_open_store_picks_the_backend(tmp_path, monkeypatch):
    config = SpaceConfig.from_env({}, data_dir=tmp_path)
    assert isinstance(open_store(config), SqliteStore)
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "CommitScheduler", FakeScheduler)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: None)
    hub = open_store(
        SpaceConfig.from_env({"HF_TOKEN": "t", "SPEAKERSLEUTH_RESULTS_REPO": "org/results"}, data_dir=tmp_path)
    )
    assert isinstance(hub, HubStore) and hub.scheduler.kwargs["repo_id"] == "org/results"


@pytest.mark.parametrize("backend", ["sqlite", "hub"])
def test_budget_and_withdrawal_on_each_backend(tmp_path, backend):
    def open_backend(n: int):
        if backend == "sqlite":
            return SqliteStore(tmp_path / "db")
        return hub_store(tmp_path / f"hub-{n}", tmp_path / f"index-{n}", remote=tmp_path / f"hub-{n - 1}")

    store = open_backend(1)
    one = len(store_entry(1)["predictions"])
    first, _ = store.add(**store_entry(1), now=1.0, budget_bytes=2 * one)
    store.add(**store_entry(2), now=2.0, budget_bytes=2 * one)
    with pytest.raises(StoreFull, match="budget of"):
        store.add(**store_entry(3), now=3.0, budget_bytes=2 * one)
    assert store.stored_bytes() == 2 * one and len(store.results()) == 2  # nothing of the refused one
    assert store.add(**store_entry(1), budget_bytes=0)[1] is False  # a duplicate needs no room

    with pytest.raises(PermissionError):
        store.withdraw(first.id, "local:someone-else", "mine now", now=4.0)
    with pytest.raises(KeyError):
        store.withdraw("main-unknown", "local:test")
    withdrawn = store.withdraw(first.id, "local:test", "scored the wrong split", now=5.0)
    assert withdrawn.withdrawal == Withdrawal("local:test", 5.0, "scored the wrong split")
    with pytest.raises(ValueError, match="already withdrawn"):
        store.withdraw(first.id, "local:test", now=6.0)
    assert [r.metadata.model_name for r in store.results()] == ["model 2"]
    assert store.find("main", first.sha256) == withdrawn and store.add(**store_entry(1))[1] is False
    seen = []
    with pytest.raises(Refused, match="name taken"):  # admit sees every record, withdrawn too, and can refuse
        store.add(**store_entry(4), admit=lambda stored: seen.extend(stored) or ["name taken"])
    assert {r.id for r in seen} == {r.id for r in store.results(include_withdrawn=True)} and len(seen) == 2
    assert store.find("main", store_entry(4)["sha256"]) is None and len(store.results(include_withdrawn=True)) == 2

    store.close()
    reopened = open_backend(2)  # a restart (for the Hub store: the folder comes back from the "Hub")
    assert [r.id for r in reopened.results()] == [r.id for r in store.results()]
    assert reopened.get(first.id).withdrawal == withdrawn.withdrawal
    assert [r.id for r in reopened.results(include_withdrawn=True)] == [first.id, store.results()[0].id]


def test_a_schema_1_store_opens_and_gains_withdrawals(tmp_path):
    with sqlite3.connect(tmp_path / SqliteStore.FILENAME) as con:  # the tables as schema 1 made them
        con.executescript(
            "CREATE TABLE submissions (id TEXT PRIMARY KEY, variant TEXT NOT NULL, sha256 TEXT NOT NULL,"
            " metadata TEXT NOT NULL, submitter TEXT NOT NULL, created_at REAL NOT NULL, num_lines INTEGER NOT NULL,"
            " scores TEXT NOT NULL, UNIQUE (variant, sha256));"
            "CREATE TABLE predictions (id TEXT PRIMARY KEY REFERENCES submissions (id), data BLOB NOT NULL);"
            "CREATE TABLE attempts (submitter TEXT NOT NULL, at REAL NOT NULL);"
            "INSERT INTO submissions VALUES ('main-00', 'main', '00', '{\"model_name\": \"old\"}', 'local:local', 1, 1, '{}');"
            "INSERT INTO predictions VALUES ('main-00', x'7b7d');"
            "PRAGMA user_version=1;"
        )
    store = SqliteStore(tmp_path)
    assert [r.metadata.model_name for r in store.results()] == ["old"] and store.stored_bytes() == 2
    store.withdraw("main-00", "local:local", "moved", now=2.0)
    assert store.results() == [] and store.get("main-00").withdrawal.reason == "moved"
