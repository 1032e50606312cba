"""What the Space's browser tests do on its page (Playwright): open a tab, wait for a leaderboard
row, and check that a hostile name was drawn as text without opening a dialog."""

from __future__ import annotations


def open_tab(page, name: str) -> None:
    """Click the tab named exactly ``name``."""
    page.get_by_role("tab", name=name, exact=True).click()


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
