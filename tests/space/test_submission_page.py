"""The Submission tab: a submission's page (metadata shown safely, hash, breakdown, canonical
predictions to download), odd ids refused with one message and nothing written, the deep link,
and withdrawal by the submitting identity only (handlers, then through the served app)."""

from __future__ import annotations

import doctest
import hashlib
from dataclasses import replace
from pathlib import Path

import gradio as gr
import httpx
import pytest
from gradio_client import Client

from speakersleuth.space import submission_page
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.store import BASELINE_SUBMITTER, Metadata
from speakersleuth.space.submission_page import SubmissionPage, parse_id
from speakersleuth.space.submitter import breakdown_frame
from tests.support.space_support import free_port, predictions, running_app

XSS = "<img src=x onerror=alert(1)>"
FORM = {
    "model_name": XSS,
    "organisation": "lab & co",
    "model_type": "embedding",
    "access": "proprietary",
    "link": "https://example.org/a?b=1&c=2",
    "model_date": "2025-06",
}
ODD_IDS = [
    "",
    "   ",
    None,
    "x" * 100_000,
    "main-\x00123456789abcdef",
    "../x",
    "..\\x",
    "/etc/passwd",
    "main-0123456789abcdeg",
    "other-0123456789abcdef",
    "main-\ud800",
    "main-0123456789abcdef/../../x",
    "main-0123456789abcdef\n<b>",
]


@pytest.fixture
def page(tmp_path, make):
    return SubmissionPage(make(), tmp_path / "public" / "predictions")


def request(address: str = "127.0.0.1", **query) -> gr.Request:
    return gr.Request(client={"host": address, "port": 1}, query_params=query)


def test_doctests():
    assert doctest.testmod(submission_page).failed == 0


def test_the_page_shows_metadata_hash_breakdown_and_the_canonical_predictions(page, gold):
    record = page.submitter.submit(predictions(gold, 0b1011), "main", FORM).record
    details, breakdown, download, *_ = page.show(f"  {record.id} ")
    stored = page.submitter.store.predictions(record.id)
    assert f"<code>{hashlib.sha256(stored).hexdigest()}</code>" in details and record.sha256 in details
    assert "&lt;img src=x onerror=alert(1)&gt;" in details and "<img" not in details
    assert "lab &amp; co" in details and "proprietary" in details and "2025-06" in details
    assert (
        '<a href="https://example.org/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer nofollow ugc">'
        in details
    )
    assert f"<dt>Lines</dt><dd>{record.num_lines:,}</dd>" in details and "UTC" in details
    assert f'href="?submission={record.id}"' in details
    assert "Withdrawn" not in details and "verified" not in details
    assert breakdown.equals(breakdown_frame(record.scores))
    assert (breakdown["95% CI"] != "").sum() >= 3  # the headline metrics carry their CIs
    assert download.visible and download.value["orig_name"] == f"{record.id}.jsonl"
    assert Path(download.value["path"]).read_bytes() == stored
    assert [p.name for p in page.download_dir.iterdir()] == [f"{record.id}.jsonl"]  # no temporary left
    assert (page.download_dir / f"{record.id}.jsonl").read_bytes() == stored


def test_an_unsafe_stored_link_is_text_and_a_baseline_is_marked_verified(page, gold):
    store = page.submitter.store
    record, _ = store.add(
        variant="main",
        sha256="ab" * 32,
        predictions=b"{}\n",
        scores={},
        num_lines=1,
        submitter=BASELINE_SUBMITTER,
        metadata=Metadata(model_name="baseline", link='javascript:alert("x")'),
    )
    details, _, _, analyses, chart = page.show(record.id)
    assert analyses.startswith("<p>No analyses for this submission: submission refused") and chart is None
    assert '<a href="javascript' not in details and "javascript:alert(&quot;x&quot;) (not linked" in details
    assert (
        '<span class="ss-verified" title="Verified: a built-in baseline scored by the Space itself">verified</span>'
        in details
    )


@pytest.mark.parametrize("text", ODD_IDS, ids=range(len(ODD_IDS)))
def test_an_odd_or_unknown_id_gives_one_message_and_writes_nothing(page, gold, text):
    page.submitter.submit(predictions(gold, 1), "main", FORM)
    details, breakdown, download, *_ = page.show(text)
    assert details.count("<p>") == 1 and "submission id" in details
    assert breakdown.empty and not download.visible and download.value is None
    assert not page.download_dir.exists()
    details, *_ = page.show("main-0123456789abcdef")
    assert "There is no submission with the id main-0123456789abcdef." in details
    assert not page.download_dir.exists()


def test_parse_id_names_what_is_wrong():
    with pytest.raises(ValueError, match="longer than 64 characters"):
        parse_id("main-" + "0" * 100)
    with pytest.raises(ValueError, match="Enter a submission id"):
        parse_id(" ")
    assert parse_id("10turn-0123456789abcdef") == "10turn-0123456789abcdef"
    assert parse_id("Main-0123456789ABCDEF") == "main-0123456789abcdef"  # ids are lower case; any case is accepted
    with pytest.raises(ValueError, match="not an id"):
        parse_id("ma\u0131n-0123456789abcdef")  # a dotless i matches "i" in Unicode's case folding


def test_a_link_with_an_id_opens_the_tab_on_it_and_a_plain_load_changes_nothing(page, gold):
    record = page.submitter.submit(predictions(gold, 2), "main", FORM).record
    tabs, chooser, details, _, download, *_ = page.open_link(request(submission=record.id))
    assert tabs.selected == "submission" and chooser.value == record.id
    assert record.sha256 in details and download.visible
    tabs, chooser, details, *_ = page.open_link(request(submission="../x"))
    assert tabs.selected == "submission" and chooser.value is None and "not an id" in details
    assert page.open_link(request()) == [gr.skip()] * 7


def test_a_link_takes_an_id_in_any_case_and_an_empty_one_is_no_link(page, gold):
    record = page.submitter.submit(predictions(gold, 5), "main", FORM).record
    tabs, chooser, details, _, download, *_ = page.open_link(request(submission=record.id.upper()))
    assert tabs.selected == "submission" and chooser.value == record.id
    assert record.sha256 in details and download.visible
    for empty in ("", "  "):
        assert page.open_link(request(submission=empty)) == [gr.skip()] * 7


def test_the_chooser_lists_the_leaderboard_newest_first(page, gold):
    first = page.submitter.submit(predictions(gold, 3), "main", FORM).record
    second = page.submitter.submit(predictions(gold, 4), "main", FORM).record
    page.submitter.withdraw(first.id, "", address="127.0.0.1")
    assert [value for _, value in page.choices().choices] == [second.id]


def test_only_the_submitting_address_withdraws_and_the_page_says_so(page, gold):
    record = page.submitter.submit(predictions(gold, 5), "main", FORM, address="10.0.0.1").record
    status, *_ = page.withdraw(record.id, "typo", False, request("10.0.0.1"))
    assert "Tick the box" in status and page.submitter.store.results() == [record]
    status, details, *_ = page.withdraw(record.id, "not mine", True, request("10.0.0.2"))
    assert "only its submitter can withdraw it" in status and "ss-bad" in status and "Withdrawn" not in details
    assert page.submitter.store.results() == [record]
    status, *_ = page.withdraw("../x", "", True, request("10.0.0.1"))
    assert "not an id" in status
    status, details, breakdown, *_ = page.withdraw(f" {record.id}", "wrong <variant>", True, request("10.0.0.1"))
    assert "Withdrawn:" in status and "ss-ok" in status and page.submitter.store.results() == []
    assert (
        "<b>Withdrawn</b> by its submitter on " in details and "Reason: \u201cwrong &lt;variant&gt;\u201d" in details
    )
    assert breakdown.equals(breakdown_frame(record.scores))  # the page and its scores stay
    status, *_ = page.withdraw(record.id, "", True, request("10.0.0.1"))
    assert "already withdrawn" in status


def test_over_http_the_page_downloads_and_only_the_submitter_withdraws(dataset, gold, tmp_path):
    """Through the served app with gradio_client; the address is what uvicorn reports (X-Forwarded-For
    from a proxy on 127.0.0.1, uvicorn's default trusted proxy)."""
    config = replace(SpaceConfig.from_env({}, dataset=str(dataset), data_dir=tmp_path / "data"), port=free_port())
    with running_app(config, n_bootstrap=20) as (app, url):
        record = app.submitter.submit(predictions(gold, 6), "main", FORM, address="10.3.0.1").record

        def client(address: str) -> Client:
            return Client(
                url, verbose=False, download_files=False, analytics_enabled=False, headers={"X-Forwarded-For": address}
            )

        details, breakdown, download, analyses, chart = client("10.3.0.9").predict(record.id, api_name="/submission")
        assert record.sha256 in details and "Det Bal Acc" in str(breakdown["data"])
        assert "By duration quartile" in analyses and chart["type"] == "altair"
        assert download["visible"] and download["value"]["orig_name"] == f"{record.id}.jsonl"
        assert httpx.get(download["value"]["url"]).content == app.store.predictions(record.id)
        details, breakdown, download, *_ = client("10.3.0.9").predict("../../etc/passwd", api_name="/submission")
        assert "not an id" in details and not download["visible"] and download["value"] is None

        status, *_ = client("10.3.0.2").predict(record.id, "", True, api_name="/withdraw")
        assert "only its submitter can withdraw it" in status and app.store.results() == [record]
        status, details, *_ = client("10.3.0.1").predict(record.id, "retracted", True, api_name="/withdraw")
        assert "Withdrawn:" in status and "Reason: \u201cretracted\u201d" in details
        assert app.store.results() == [] and app.store.get(record.id).withdrawal.submitter == "ip:10.3.0.1"
