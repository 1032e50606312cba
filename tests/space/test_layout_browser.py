"""How the Space looks at a desktop (1280 px) and a phone (390 px) width, in a real browser
(Playwright driving Debian's headless Chromium), over a store holding the built-in baselines'
names (``<method>-<encoder>`` and its ``-calibrated`` twin, judges.names' grammar) and one
submission: every baseline name reads whole in the table, every tab is a tab on a phone, the
charts' text stays at least 10 px, and a submission's page stacks its metadata and scrolls its
wide tables instead of cutting them. Screenshots go to /tmp/space_layout_*.png."""

from __future__ import annotations

import itertools
import shutil

import pytest

from speakersleuth.judges.names import METHODS, parse_judge_name
from speakersleuth.metrics.submission import load_gold
from speakersleuth.space.store import BASELINE_SUBMITTER, SqliteStore
from tests.support.space_support import CHROMIUM, add_result, build_dataset, new_page, running_app, served_config

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed")

#: The encoders whose weights ship in a package (speech.encoders.offline_encoders): the baselines
#: ``judges baselines`` writes, each at the paper's threshold and calibrated, plus two thresholds
#: spelled into the name; names of one family differ only at their end.
ENCODERS = ("campplus", "dvector", "eres2net", "resemblyzer")
BASELINES = [
    f"{method}-{encoder}{suffix}"
    for method, encoder, suffix in itertools.product(METHODS, ENCODERS, ("", "-calibrated"))
] + ["centroid-campplus-cos0.30", "centroid-campplus-cos0.45"]
SUBMITTED = "lab-model"
TABS = ["Leaderboard", "Submit", "Submission", "Viewer", "Review", "Check your audio", "About"]
TABLE = "#ss-leaderboard-main"
DESKTOP, PHONE = 1280, 390
#: A submission's page at 390 px: 5,800 px tall when its metadata wrapped two characters a line
#: (its values 23 px wide) and its analyses tables wrapped every value; about 3,700 px now.
PHONE_PAGE_MAX_PX = 4_500
PHONE_DETAILS_MAX_PX = 1_000  # the metadata block alone: ~2,700 px before, ~680 px now
MIN_VALUE_PX = 150
MIN_TEXT_PX = 10


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("space-layout-browser")
    dataset = build_dataset(root)
    gold = load_gold(dataset, "main")
    config = served_config(dataset, root / "data")
    store = SqliteStore(config.data_dir)
    assert all(parse_judge_name(name).method in METHODS for name in BASELINES)
    for i, name in enumerate(BASELINES):
        add_result(store, gold, name, i * 37 + 5, submitter=BASELINE_SUBMITTER, model_type="embedding")
    record = add_result(
        store,
        gold,
        SUBMITTED,
        0b0110,
        model_type="LALM",
        link="https://example.org/models/" + "a-very-long-path-segment/" * 4,
    )
    with running_app(config, store=store, n_bootstrap=50) as (app, url):
        yield url, record.id


def leaderboard(browser, url: str, width: int):
    page = new_page(browser, width)
    page.goto(url)
    page.wait_for_function(
        "([t, n]) => document.querySelectorAll(t + ' tbody tr').length === n", arg=[TABLE, len(BASELINES) + 1]
    )
    page.locator("#ss-bias-main svg.marks .mark-symbol path").first.wait_for()
    return page


def submission(browser, url: str, submission_id: str, width: int):
    page = new_page(browser, width)
    page.goto(f"{url}?submission={submission_id}")
    page.locator("#ss-submission-analyses table").first.wait_for()
    page.locator("#ss-submission-chart svg.marks").wait_for()
    page.locator("#ss-submission-breakdown").get_by_text("Det Bal Acc").wait_for()
    return page


def smallest_text_px(page, svg: str) -> float:
    """The smallest text of the chart ``svg`` as drawn: its font size times the scale the SVG is
    drawn at (a chart scaled down to fit shrinks its text with it; an axis title may be turned)."""
    return page.evaluate(
        """s => Math.min(...Array.from(document.querySelectorAll(s + ' text')).filter(t => t.textContent.trim())
            .map(t => { const m = t.getScreenCTM(); return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b); }))""",
        svg,
    )


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_every_baseline_name_reads_whole_in_the_table(browser, served, width):
    url, _ = served
    page = leaderboard(browser, url, width)
    page.screenshot(path=f"/tmp/space_layout_names_{width}.png", full_page=True)
    cells = page.evaluate(
        """t => Array.from(document.querySelectorAll(t + ' tbody td.ss-model .ss-clip')).map(e => ({
        text: e.textContent, width: [e.scrollWidth, e.clientWidth], height: [e.scrollHeight, e.clientHeight]}))""",
        TABLE,
    )
    baselines = [c for c in cells if c["text"] in BASELINES]
    assert sorted(c["text"] for c in baselines) == sorted(BASELINES)
    cut = [c for c in baselines if c["width"][0] > c["width"][1] or c["height"][0] > c["height"][1]]
    assert not cut, f"{len(cut)} of {len(baselines)} baseline names are cut at {width} px: {cut[:3]}"
    if width == PHONE:  # the name column still leaves room for the headline metrics
        rights = page.evaluate(
            "t => Array.from(document.querySelectorAll(t + ' thead th'))"
            ".map(th => [th.innerText.trim(), th.getBoundingClientRect().right])",
            TABLE,
        )
        shown = [name for name, right in rights if right <= PHONE]
        assert shown[:5] == ["Rank", "Model", "Det Bal Acc", "Loc Bal F1", "Disc Avg"], shown
    page.close()


def test_every_tab_is_a_tab_on_a_phone(browser, served):
    url, _ = served
    page = leaderboard(browser, url, PHONE)
    page.screenshot(path="/tmp/space_layout_tabs_390.png")
    bar = page.evaluate(
        """names => names.map(name => {
        const tab = Array.from(document.querySelectorAll('[role=tab]')).find(t => t.innerText.trim() === name);
        if (!tab) return [name, null];
        const r = tab.getBoundingClientRect();
        return [name, tab.checkVisibility() ? [r.left, r.right, r.width] : null];
    })""",
        TABS,
    )
    missing = [name for name, box in bar if box is None or box[2] <= 0 or box[0] < 0 or box[1] > PHONE]
    assert not missing, f"not on the tab bar at {PHONE} px: {missing}"
    assert page.locator(".overflow-menu").filter(visible=True).count() == 0  # no "..." menu
    page.get_by_role("tab", name="About", exact=True).click()  # straight from the bar
    assert page.get_by_role("tab", name="About", exact=True).get_attribute("aria-selected") == "true"
    page.close()


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_the_bias_chart_text_stays_readable(browser, served, width):
    url, _ = served
    page = leaderboard(browser, url, width)
    chart = "#ss-bias-main svg.marks"
    page.locator(chart).scroll_into_view_if_needed()
    page.screenshot(path=f"/tmp/space_layout_chart_{width}.png")
    assert smallest_text_px(page, chart) >= MIN_TEXT_PX
    box = page.evaluate(
        """s => { const svg = document.querySelector(s); const box = svg.closest('.vega-embed');
        return [getComputedStyle(box).overflowX, box.scrollWidth, box.clientWidth, box.getBoundingClientRect().right,
                svg.getBoundingClientRect().width]; }""",
        chart,
    )
    overflow, scroll_width, client_width, right, drawn = box
    assert right <= width and scroll_width >= drawn - 1  # the whole chart is inside its box...
    assert scroll_width <= client_width or overflow in ("auto", "scroll")  # ...scrolled to where narrower
    page.close()


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_a_submission_page_stacks_its_metadata_and_scrolls_its_tables(browser, served, width):
    url, submission_id = served
    page = submission(browser, url, submission_id, width)
    page.screenshot(path=f"/tmp/space_layout_submission_{width}.png", full_page=True)
    values = page.evaluate(
        "() => Array.from(document.querySelectorAll('#ss-submission-details dd'))"
        ".map(d => d.getBoundingClientRect().width)"
    )
    assert len(values) >= 10 and min(values) >= MIN_VALUE_PX, values  # were 23 px at 390 px: two characters a line
    if width == PHONE:
        height = page.evaluate("() => document.documentElement.scrollHeight")
        details = page.locator("#ss-submission-details").bounding_box()["height"]
        assert details <= PHONE_DETAILS_MAX_PX and height <= PHONE_PAGE_MAX_PX, (details, height)
    tables = page.evaluate("""() => Array.from(document.querySelectorAll('#ss-submission-analyses table')).map(t => {
        let box = t;  // the table's scroll box: itself or the nearest box around it in the analyses that scrolls sideways
        const top = document.querySelector('#ss-submission-analyses').parentElement;
        while (box !== top && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
        box = box === top ? t : box;
        const last = () => Math.max(...Array.from(t.querySelectorAll('th, td')).map(c => c.getBoundingClientRect().right));
        box.scrollLeft = box.scrollWidth;
        const reached = last();
        const r = box.getBoundingClientRect();
        return {scrolls: ['auto', 'scroll'].includes(getComputedStyle(box).overflowX),
                left: r.left, right: r.right, reached: reached};
    })""")
    assert len(tables) >= 4
    for table in tables:  # every column can be brought into view, inside the page
        assert table["scrolls"] and table["left"] >= 0 and table["right"] <= width, table
        assert table["reached"] <= table["right"] + 1, table
    assert smallest_text_px(page, "#ss-submission-chart svg.marks") >= MIN_TEXT_PX
    page.close()
