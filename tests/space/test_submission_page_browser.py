"""The Submission tab in a real browser (Playwright driving Debian's headless Chromium): a link
``?submission=<id>`` (in any case) opens the page with its breakdown, analyses and chart, and
downloads the canonical predictions, an empty one opens the leaderboard;
a submission chosen from the list and withdrawn leaves the leaderboard without a reload.
Screenshots go to /tmp/space_submission*.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from speakersleuth.metrics.submission import load_gold
from tests.space.test_browser import XSS, open_tab, wait_for_row
from tests.support.space_support import CHROMIUM, build_dataset, new_page, predictions, running_app, served_config

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed")
FORM = {"organisation": "browser lab", "model_type": "LALM", "access": "open", "link": "", "model_date": ""}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("space-submission-browser")
    dataset = build_dataset(root)
    with running_app(served_config(dataset, root / "data"), n_bootstrap=100) as (app, url):
        yield app, url, load_gold(dataset, "main")


@pytest.fixture
def page(browser):
    page = new_page(browser, accept_downloads=True)
    yield page
    page.close()


def test_a_link_opens_the_page_with_its_breakdown_and_predictions(page, served):
    app, url, gold = served
    record = app.submitter.submit(predictions(gold, 0b0110), "main", {**FORM, "model_name": XSS}).record
    page.goto(f"{url}?submission={record.id}")
    details = page.locator("#ss-submission-details")
    details.get_by_text(record.sha256).wait_for()
    assert page.get_by_role("tab", name="Submission", exact=True).get_attribute("aria-selected") == "true"
    assert XSS in details.inner_text() and page.locator("img[src='x']").count() == 0
    breakdown = page.locator("#ss-submission-breakdown")
    breakdown.get_by_text("Det Bal Acc").wait_for()
    assert " to " in breakdown.inner_text()  # the 95% CIs are shown
    page.locator("#ss-submission-analyses").get_by_text("By duration quartile").wait_for()
    page.locator("#ss-submission-chart svg.marks").wait_for()  # the chart by duration quartile is drawn
    page.screenshot(path="/tmp/space_submission_analyses.png", full_page=True)
    assert "Accuracy by duration" in page.locator("#ss-submission-chart").inner_text()
    page.screenshot(path="/tmp/space_submission.png", full_page=True)
    with page.expect_download() as info:
        page.locator("#ss-submission-download").click()
    download = info.value
    assert download.suggested_filename == f"{record.id}.jsonl"
    assert Path(download.path()).read_bytes() == app.store.predictions(record.id)
    assert page.dialogs == []


def test_a_link_takes_an_upper_case_id_and_an_empty_one_opens_the_leaderboard(page, served):
    app, url, gold = served
    record = app.submitter.submit(predictions(gold, 0b0101), "main", {**FORM, "model_name": "upper-case link"}).record
    page.goto(f"{url}?submission={record.id.upper()}")
    page.locator("#ss-submission-details").get_by_text(record.sha256).wait_for()
    assert page.get_by_role("tab", name="Submission", exact=True).get_attribute("aria-selected") == "true"
    page.goto(f"{url}?submission=")
    wait_for_row(page, "upper-case link")
    page.wait_for_timeout(1000)  # the page-load event has run (the table is filled by it)
    assert page.get_by_role("tab", name="Leaderboard", exact=True).get_attribute("aria-selected") == "true"
    assert page.get_by_text("Enter a submission id").count() == 0


def test_a_withdrawn_submission_leaves_the_leaderboard(page, served):
    app, url, gold = served
    record = app.submitter.submit(predictions(gold, 0b1001), "main", {**FORM, "model_name": "to-withdraw"}).record
    page.goto(url)
    wait_for_row(page, "to-withdraw")
    open_tab(page, "Submission")
    page.locator("#ss-submission-id input").click()
    page.get_by_role("option", name=f"to-withdraw \u00b7 main \u00b7 {record.id}").click()
    page.locator("#ss-submission-details").get_by_text(record.sha256).wait_for()
    page.get_by_text("Withdraw this submission").click()
    page.get_by_label("Reason (optional, shown on the page)").fill("scored the wrong file")
    page.get_by_label("I want to withdraw this submission; this cannot be undone").check()
    page.locator("#ss-withdraw").click()
    page.locator("#ss-withdraw-status").get_by_text("Withdrawn:").wait_for()
    page.locator("#ss-submission-details").get_by_text("Reason: \u201cscored the wrong file\u201d").wait_for()
    page.screenshot(path="/tmp/space_submission_withdrawn.png", full_page=True)
    open_tab(page, "Leaderboard")
    page.wait_for_function(  # the app refreshed the leaderboard itself: no Refresh click, no reload
        "() => !(document.querySelector('#ss-leaderboard-main')?.innerText || 'to-withdraw').includes('to-withdraw')"
    )
    assert record.id not in {r.id for r in app.store.results("main")}
