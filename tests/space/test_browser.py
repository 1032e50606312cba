"""The Space in a real browser (Playwright driving Debian's headless Chromium): a valid upload
shows its row, a broken file shows line-numbered errors, an HTML/JS model name stays text, and
the viewer's players hold playable audio. Screenshots of every tab go to /tmp/space_*.png."""

from __future__ import annotations

import shutil

import pytest

from speakersleuth.metrics.submission import load_gold
from tests.support.space_support import CHROMIUM, build_dataset, new_page, predictions, running_app, served_config

XSS = "<img src=x onerror=alert(1)>"

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("space-browser")
    dataset = build_dataset(root)
    with running_app(served_config(dataset, root / "data"), n_bootstrap=100) as (app, url):
        yield app, url, load_gold(dataset, "main"), root


@pytest.fixture(scope="module")
def page(served, browser):
    _, url, _, _ = served
    page = new_page(browser)
    page.goto(url)
    yield page
    page.close()


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()


def upload(page, path, model_name: str) -> str:
    """Fill the Submit form, upload ``path``, submit, and return the status box's text."""
    open_tab(page, "Submit")
    page.get_by_label("Model name (required)").fill(model_name)
    page.get_by_label("Organisation").fill("browser test")
    before = page.locator("#ss-submit-status").inner_text()
    page.locator("#ss-upload input[type=file]").set_input_files(str(path))
    clear = page.locator("#ss-upload").get_by_role("button", name="Clear")
    clear.wait_for()  # shown once the upload has finished
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_function(
        "before => { const e = document.querySelector('#ss-submit-status .ss-status');"
        " return e && e.innerText !== before; }",
        arg=before,
    )
    text = page.locator("#ss-submit-status .ss-status").inner_text()
    clear.wait_for(state="detached")  # the app empties the file slot: the upload is gone from the server
    page.locator("#ss-upload input[type=file]").wait_for(state="attached")
    return text


def wait_for_row(page, text: str) -> None:
    """Wait until the main leaderboard table shows ``text`` (as rendered, visible text)."""
    page.wait_for_function(
        "text => (document.querySelector('#ss-leaderboard-main')?.innerText || '').includes(text)", arg=text
    )


def assert_no_dialog_once_rendered(page, selector: str, text: str) -> None:
    """Wait for a positive signal that the hostile ``text`` has been drawn: an element matching
    ``selector`` whose text is exactly ``text``, then a control image with the payload's bad
    ``src`` ("x") having fired its error event (had the name been parsed as HTML, its image's
    ``onerror`` would have run by then, the same address failing first for it); then no dialog may
    have opened. A fixed sleep proves nothing."""
    page.wait_for_function(
        "([s, t]) => Array.from(document.querySelectorAll(s)).some(e => e.textContent === t)", arg=[selector, text]
    )
    assert (
        page.evaluate("""() => new Promise(done => {
        const img = new Image();
        img.onerror = () => setTimeout(() => done('error'), 0);
        img.onload = () => done('load');
        img.src = 'x';
    })""")
        == "error"
    )
    assert page.dialogs == []


def leaderboard_text(page) -> str:
    open_tab(page, "Leaderboard")
    page.get_by_role("button", name="Refresh").click()
    return page.locator("#ss-leaderboard-main").inner_text()


def test_valid_upload_appears_on_the_leaderboard(page, served):
    _, _, gold, root = served
    page.locator("#ss-leaderboard-main").wait_for()
    page.screenshot(path="/tmp/space_leaderboard_empty.png", full_page=True)
    path = root / "valid.jsonl"
    path.write_bytes(predictions(gold, 0b1010))
    status = upload(page, path, "browser-model-1")
    assert "Accepted" in status, status
    page.locator("#ss-breakdown").get_by_text("Det Bal Acc").wait_for()
    page.screenshot(path="/tmp/space_submit.png", full_page=True)
    open_tab(page, "Leaderboard")
    wait_for_row(page, "browser-model-1")
    page.screenshot(path="/tmp/space_leaderboard.png", full_page=True)


def test_broken_file_shows_line_numbered_errors(page, served):
    _, _, gold, root = served
    good = predictions(gold).decode().splitlines()
    path = root / "broken.jsonl"
    path.write_text(
        "\n".join([good[0], "{oops", '{"task": "detection", "id": "x", "prediction": "consistent"}']) + "\n"
    )
    status = upload(page, path, "broken-model")
    assert "refused" in status
    assert "line 2: not valid JSON" in status and 'line 3: unknown detection id "x"' in status
    page.screenshot(path="/tmp/space_submit_errors.png", full_page=True)
    assert "broken-model" not in leaderboard_text(page)


def test_html_in_a_model_name_is_shown_as_text(page, served):
    _, _, gold, root = served
    path = root / "xss.jsonl"
    path.write_bytes(predictions(gold, 0b0110))
    status = upload(page, path, XSS)
    assert XSS in status  # the status box shows the literal text
    open_tab(page, "Leaderboard")
    wait_for_row(page, XSS)
    assert page.locator("img[src='x']").count() == 0
    assert page.evaluate("() => document.querySelectorAll('img[onerror]').length") == 0
    assert_no_dialog_once_rendered(page, "#ss-leaderboard-main tbody td.ss-model .ss-clip", XSS)


def test_viewer_plays_audio(page):
    open_tab(page, "Viewer")
    page.get_by_text("target turn 1", exact=True).first.wait_for()
    durations = page.wait_for_function(
        """() => {
            const players = Array.from(document.querySelectorAll('*')).filter(e => e.shadowRoot)
                .flatMap(e => Array.from(e.shadowRoot.querySelectorAll('audio')));
            const ready = players.filter(a => a.readyState >= 1 && a.duration > 0 && a.currentSrc);
            return ready.length >= 6 ? ready.map(a => a.duration) : null;
        }"""
    ).json_value()
    assert len(durations) >= 6 and all(d > 0.5 for d in durations)  # reference + 5 target turns
    page.screenshot(path="/tmp/space_viewer.png", full_page=True)
    open_tab(page, "About")
    page.get_by_text("Metrics (exact definitions)").wait_for()
    page.screenshot(path="/tmp/space_about.png", full_page=True)
