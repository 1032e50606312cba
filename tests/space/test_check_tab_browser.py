"""The Check your audio tab in a real browser (Playwright driving Debian's headless Chromium):
nine real turn files uploaded, the speakers table filled from their names, Check pressed, and the
similarity picture and the flagged turns shown as ``judges.check`` finds them. A screenshot goes
to /tmp/space_check.png."""

from __future__ import annotations

import shutil

import pytest

import speakersleuth.space.check_tab as tab
from tests.support.check_audio import write_check_dialogue
from tests.support.space_support import CHROMIUM, build_dataset, new_page, running_app, served_config

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed")
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def served(tmp_path_factory, one_torch_thread):
    root = tmp_path_factory.mktemp("check-browser")
    dialogue = write_check_dialogue(root / "dialogue", root / "tts")
    with running_app(served_config(build_dataset(root), root / "data"), n_bootstrap=50) as (_, url):
        yield url, dialogue


def expected_report(dialogue):
    from speakersleuth.judges.cache import EmbeddingCache
    from speakersleuth.judges.check import check, resolve_settings

    settings = resolve_settings()
    return check(dialogue.manifest, cache=EmbeddingCache(tab.shared_encoder(settings.encoder)))


def text_of(page, selector: str) -> str:
    return page.locator(selector).inner_text()


def test_uploaded_turns_show_the_picture_and_the_flagged_turns(served, browser):
    url, dialogue = served
    report = expected_report(dialogue)
    flagged = [t.turn for t in report.flagged]
    assert dialogue.intruder in flagged
    page = new_page(browser)
    page.set_default_timeout(180_000)  # the first check loads the encoder on a busy machine
    page.goto(url)
    page.get_by_role("tab", name=tab.TAB_NAME, exact=True).click()
    page.locator("#ss-check-turns input[type=file]").set_input_files([str(p) for p in dialogue.turns])
    names = [p.name for p in dialogue.turns]
    page.wait_for_function(
        "names => { const t = document.querySelector('#ss-check-speakers')?.innerText || '';"
        " return names.every(n => t.includes(n)); }",
        arg=names,
    )
    assert "guest" in text_of(page, "#ss-check-speakers")  # the speakers guessed from the names
    page.get_by_role("button", name="Check", exact=True).click()
    page.wait_for_function(
        "() => (document.querySelector('#ss-check-status')?.innerText || '').includes('turns flagged')"
    )
    status = text_of(page, "#ss-check-status")
    assert f"{len(flagged)} of 9 turns flagged." in status and f"τ = {report.threshold:g}" in status
    picture = page.locator("#ss-check-picture img")
    picture.wait_for()
    page.wait_for_function("() => document.querySelector('#ss-check-picture img')?.naturalWidth > 300")
    shown = text_of(page, "#ss-check-flagged")
    assert all(name in shown for name in flagged), shown
    assert not [n for n in names if n not in flagged and n in shown], shown
    assert f"{report.flagged[0].score:.3f}".rstrip("0") in shown
    page.screenshot(path="/tmp/space_check.png", full_page=True)
    page.close()
