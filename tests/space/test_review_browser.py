"""The Review tab in a real browser (Playwright driving Debian's headless Chromium) on a small built
dataset (the builder's speech-like corpus): a reviewer listens to a dialogue, is refused a
rejection without a reason, records three decisions, downloads review.csv, and a rebuild with that
sheet drops the rejected dialogues. Screenshot: /tmp/space_review.png."""

from __future__ import annotations

import csv
import shutil

import pytest

import speakersleuth.speakersleuth_dataset as ssd
from tests.builder_scripts.test_build import build, options, recorded
from tests.space.test_browser import open_tab
from tests.support.space_support import CHROMIUM, new_page, running_app, served_config

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed"),
    pytest.mark.filterwarnings("ignore"),
]
MAIN_ONLY = {"variants": ("main",), "dialogues": 3}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A build of three dialogues of the speech-like corpus (main only: the encoders of the card take
    most of its time) and the corpus it came from."""
    tmp = tmp_path_factory.mktemp("review-build")
    corpus = recorded(tmp / "corpus")
    build(options(tmp, **MAIN_ONLY), corpus)
    return tmp, corpus


@pytest.fixture(scope="module")
def served(built):
    tmp, _ = built
    config = served_config(tmp / "speakersleuth", tmp / "space", reviewers=("ip:127.0.0.1",))
    with running_app(config, n_bootstrap=20) as (app, url):
        yield app, url


def pick(page, key: str) -> None:
    """Choose the dialogue ``key`` and wait until its players are shown."""
    page.locator("#ss-review-dialogue input").click()
    page.get_by_role("option", name=key, exact=True).click()
    page.locator("#ss-review-title").get_by_text(key).wait_for()


def record(page, decision: str, reason: str, expected: str) -> None:
    """Record ``decision`` with ``reason`` on the dialogue shown and wait for the status to say ``expected``."""
    page.locator("#ss-review-decision").get_by_label(decision, exact=True).check()
    page.locator("#ss-review-reason textarea, #ss-review-reason input").first.fill(reason)
    page.locator("#ss-review-record").click()
    page.locator("#ss-review-status .ss-status").get_by_text(expected).wait_for()


def test_three_decisions_export_a_sheet_that_a_rebuild_obeys(served, built, browser, tmp_path):
    app, url = served
    keys = list(app.review.dialogues)
    first, second, third = keys
    page = new_page(browser, accept_downloads=True)
    page.goto(url)
    open_tab(page, "Review")
    page.locator("#ss-review-who").get_by_text("You review as ip:127.0.0.1.").wait_for()
    pick(page, first)
    players = page.wait_for_function(
        """() => {
            const players = Array.from(document.querySelectorAll('*')).filter(e => e.shadowRoot)
                .flatMap(e => Array.from(e.shadowRoot.querySelectorAll('audio')));
            const ready = players.filter(a => a.readyState >= 1 && a.duration > 0 && a.currentSrc);
            return ready.length >= 8 ? ready.length : null;
        }"""
    ).json_value()
    assert players >= 8  # reference + 4 context turns + S1/S2/S3 of the masked turn
    record(page, "reject", "", "A rejection needs a reason (what is wrong with the dialogue). Nothing was recorded.")
    record(page, "reject", "S2 turn garbled", f"Recorded: ip:127.0.0.1 rejects {first} (S2 turn garbled).")
    pick(page, second)
    record(page, "accept", "", f"Recorded: ip:127.0.0.1 accepts {second}.")
    pick(page, third)
    record(page, "reject", "wrong speaker", f"Recorded: ip:127.0.0.1 rejects {third} (wrong speaker).")
    page.locator("#ss-review-title").get_by_text("Your decision so far: reject (wrong speaker).").wait_for()
    page.screenshot(path="/tmp/space_review.png", full_page=True)
    with page.expect_download() as info:
        page.locator("#ss-review-download").click()
    sheet = tmp_path / "review.csv"
    shutil.copy(info.value.path(), sheet)
    page.close()

    rows = {f"{r['variant']}/{r['dialogue_id']}": (r["decision"], r["reason"]) for r in csv.DictReader(sheet.open())}
    assert rows == dict.fromkeys(keys, ("", "")) | {
        first: ("reject", "S2 turn garbled"),
        second: ("accept", ""),
        third: ("reject", "wrong speaker"),
    }

    tmp, corpus = built
    out = tmp_path / "reviewed"
    report = build(options(tmp, **MAIN_ONLY, out=out, review_decisions=sheet), corpus)
    assert report["verification"]["after conversion"]["review: S2 turn garbled"] == 1
    for key in keys:
        dialogue = app.review.dialogues[key]
        kept = {r["dialogue_id"] for r in ssd.read_rows(out, dialogue.config, columns=["dialogue_id"]).to_pylist()}
        assert (dialogue.dialogue_id in kept) == (key not in (first, third)), key
