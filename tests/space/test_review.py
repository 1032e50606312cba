"""The Review tab's handlers without a server: decisions in the store (both backends, every one
kept, a reviewer's latest counts), who may review, one message per bad input, what a reviewer
hears, and the export in the builder's review.csv format (read back by the builder's reader)."""

from __future__ import annotations

import csv
from dataclasses import replace
from fnmatch import fnmatch

import gradio as gr
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts.verification import read_review_decisions
from speakersleuth.space.config import SpaceConfig, parse_reviewers
from speakersleuth.space.review import ReviewDesk, export_review_sheet, review_sheet
from speakersleuth.space.store import HubStore, ReviewDecision, SqliteStore
from speakersleuth.space.submitter import Submitter
from tests.space.test_store import hub_store


def profile(username: str) -> gr.OAuthProfile:
    return gr.OAuthProfile({"name": username, "preferred_username": username, "profile": "", "picture": ""})


class Request:
    """What ``on_show`` reads of a ``gr.Request``: the client's address."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.client = type("Client", (), {"host": host})()


@pytest.fixture
def desk(tmp_path, dataset):
    """``desk(**overrides)``: a ReviewDesk over a fresh SQLite store, the reviewers ``alice`` and
    this machine, a clock that ticks one second per call."""
    ticks = iter(range(1, 10_000))

    def build(**overrides):
        config = replace(
            SpaceConfig.from_env(
                {"SPEAKERSLEUTH_REVIEWERS": "Alice, ip:127.0.0.1"}, dataset=str(dataset), data_dir=tmp_path
            ),
            **overrides,
        )
        store = SqliteStore(tmp_path)
        submitter = Submitter(config, store, dataset, variants=["main"])
        return ReviewDesk(config, store, dataset, submitter.identity, clock=lambda: float(next(ticks)))

    return build


@pytest.mark.parametrize("backend", ["sqlite", "hub"])
def test_the_store_keeps_every_decision_oldest_first(tmp_path, backend):
    store = SqliteStore(tmp_path) if backend == "sqlite" else hub_store(tmp_path / "a", tmp_path / "index-a")
    later = ReviewDecision("main", "c/1", "hf:alice", "accept", "fine after all", 20.0)
    earlier = ReviewDecision("main", "c/1", "hf:alice", "reject", "noise \ud800", 10.0)
    store.add_review(later)
    store.add_review(earlier)
    assert store.reviews() == [replace(earlier, reason="noise \\ud800"), later]
    if backend == "hub":  # pushed, and after a restart on a fresh machine back from the "Hub"
        files = [p.relative_to(tmp_path / "a").as_posix() for p in (tmp_path / "a" / "reviews").rglob("*.json")]
        assert len(files) == 2 and all(any(fnmatch(f, pattern) for pattern in HubStore.ALLOW_PATTERNS) for f in files)
        store.close()
        again = hub_store(tmp_path / "b", tmp_path / "index-b", remote=tmp_path / "a")
        assert again.reviews() == store.reviews()
        assert len(list((tmp_path / "b" / "reviews" / "main").glob("*.json"))) == 2


def test_reviewers_come_from_the_configuration():
    assert parse_reviewers(" Alice,, ip:10.0.0.1 ,hf:Bob") == ("hf:alice", "ip:10.0.0.1", "hf:bob")
    assert SpaceConfig.from_env({"SPEAKERSLEUTH_REVIEWERS": "alice"}).is_reviewer("hf:ALICE")
    assert not SpaceConfig.from_env({}).is_reviewer("hf:alice")
    with pytest.raises(ValueError, match="SPEAKERSLEUTH_REVIEWERS: 'x:y' is neither"):
        parse_reviewers("alice,x:y")


def test_only_a_reviewer_may_decide(desk):
    local = desk()
    key = next(iter(local.dialogues))
    assert local.decide(key, "accept", "", address="10.1.2.3").message == (
        "Only the reviewers named in SPEAKERSLEUTH_REVIEWERS may review; you are ip:10.1.2.3."
    )
    on_spaces = desk(space_id="org/space")
    assert on_spaces.decide(key, "accept", "").message == "Sign in with Hugging Face to review."
    assert "you are hf:mallory" in on_spaces.decide(key, "accept", "", profile("mallory")).message
    assert local.store.reviews() == []
    assert on_spaces.decide(key, "accept", "", profile("ALICE")).ok  # a username in any case
    assert local.decide(key, "reject", "buzz").ok  # off Spaces: this machine's address is named
    assert [(d.reviewer, d.decision) for d in local.store.reviews()] == [
        ("hf:alice", "accept"),
        ("ip:127.0.0.1", "reject"),
    ]


@pytest.mark.parametrize(
    ("key", "decision", "reason", "message"),
    [
        ("main/synthetic/9999", "accept", "", "Unknown dialogue 'main/synthetic/9999'; pick one from the list."),
        (None, "accept", "", "Unknown dialogue ''; pick one from the list."),
        ("main/synthetic/0000", "reject", " \n\t", "A rejection needs a reason"),
        ("main/synthetic/0000", "maybe", "x", "The decision must be accept or reject, got 'maybe'."),
        ("main/synthetic/0000", "reject", "x" * 301, "The reason has 301 characters; at most 300."),
    ],
)
def test_bad_input_gets_one_message_and_records_nothing(desk, key, decision, reason, message):
    review = desk()
    outcome = review.decide(key, decision, reason)
    assert not outcome.ok and outcome.message.startswith(message) and outcome.message.endswith("Nothing was recorded.")
    assert review.store.reviews() == []


def test_a_store_failure_is_one_message(desk, monkeypatch):
    review = desk()
    monkeypatch.setattr(review.store, "add_review", lambda decision: 1 / 0)
    outcome = review.decide("main/synthetic/0000", "accept", "")
    assert not outcome.ok and outcome.message.startswith("Internal error while recording the decision (reference ")


def test_a_reviewer_hears_the_reference_context_and_the_three_versions(desk):
    review = desk()
    key = "main/synthetic/0001"
    review.decide(key, "reject", "robotic S2\nturn")
    title, _, facts, reference, *players = review.on_show(key, Request())
    assert "Your decision so far: reject (robotic S2 turn)." in title and "S2" in facts
    heard = [p["label"] for p in players if p["visible"]]
    assert reference["visible"] and reference["value"][:4] == b"RIFF"
    assert sorted(label[-4:] for label in heard if label.startswith("Candidate")) == ["(S1)", "(S2)", "(S3)"]
    assert sum(label.startswith("Context: target turn") for label in heard) == 4
    dialogue = review.dialogues[key]  # not a reviewer: listens only
    assert review.on_show(key, Request("10.9.9.9"))[0] == (
        f"<p>{key}: converted target turn {dialogue.converted_turn} ({dialogue.vc_model}).</p>"
    )
    assert "Unknown dialogue" in review.on_show("main/none", Request())[0]


def test_the_export_is_the_builders_review_sheet(desk, tmp_path):
    review = desk(space_id="org/space", reviewers=("hf:alice", "hf:bob"))
    alice, bob = profile("alice"), profile("bob")
    assert review.decide("main/synthetic/0000", "reject", "clipped", alice).ok
    assert review.decide("main/synthetic/0000", "accept", "", alice).ok  # alice's latest wins
    assert review.decide("main/synthetic/0001", "accept", "clean", alice).ok
    assert review.decide("main/synthetic/0001", "reject", "wrong gender, S2", bob).ok  # one rejection drops it
    assert review.decide("main/synthetic/0002", "reject", "wrong gender, S2", alice).ok
    review.store.add_review(ReviewDecision("4vc", "gone/7", "hf:bob", "reject", "echo", 0.5))  # of an earlier build
    sheet = export_review_sheet(review.store, review.dataset, tmp_path / "review.csv")
    assert sheet.read_text(encoding="utf-8").startswith(",".join(ssd.REVIEW_FIELDS))
    rows = {(r["variant"], r["dialogue_id"]): r for r in csv.DictReader(sheet.open(encoding="utf-8"))}
    assert {k: (r["decision"], r["reason"]) for k, r in rows.items()} == {
        ("main", "synthetic/0000"): ("accept", ""),
        ("main", "synthetic/0001"): ("reject", "wrong gender, S2"),
        ("main", "synthetic/0002"): ("reject", "wrong gender, S2"),
        ("4vc", "gone/7"): ("reject", "echo"),
    }
    assert rows[("main", "synthetic/0001")]["converted_turn"] == str(
        review.dialogues["main/synthetic/0001"].converted_turn
    )
    assert read_review_decisions(sheet) == {
        ("main", "synthetic/0001"): "review: wrong gender, S2",
        ("main", "synthetic/0002"): "review: wrong gender, S2",
        ("4vc", "gone/7"): "review: echo",
    }
    assert review.export().read_bytes() == review_sheet(review.store.reviews(), review.dialogues).encode("utf-8")
    assert len(review.store.reviews()) == 6  # the audit trail keeps the overruled decisions
