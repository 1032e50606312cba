"""The Leaderboard tab in a real browser (Playwright driving Debian's headless Chromium) over a
store holding hostile names: a very wide one, a CJK one, HTML, a spreadsheet formula, several
judges at (100, 0) of the bias chart, a verified baseline, a name imitating its verified mark and
a row without the headline metric.
Screenshots go to /tmp/space_lb_*.png."""

from __future__ import annotations

import itertools
import re
import shutil

import pytest

from speakersleuth.metrics.submission import load_gold
from speakersleuth.space.store import BASELINE_SUBMITTER, SqliteStore
from tests.space.test_browser import assert_no_dialog_once_rendered
from tests.support.space_support import CHROMIUM, add_result, build_dataset, new_page, running_app, served_config

LONG = "W" * 300
CJK = "音声言語モデル"
XSS = "<img src=x onerror=alert(1)>"
FORMULA = '=HYPERLINK("http://evil.example","x")'
CROWD = ["always-consistent-1", "always-consistent-2", XSS]  # every one at S1 = 100, mean S2/S3 = 0
IMITATION = "\u2713 baseline-v2"  # names.py refuses it now; stored straight, as an older store may hold it
ROWS = 9
DEFAULT_HEADERS = [
    "Rank",
    "Model",
    "Det Bal Acc",
    "Loc Bal F1",
    "Disc Avg",
    "N@2",
    "EM",
    "Det Paired",
    "Loc Paired",
    "Organisation",
    "Type",
    "Weights",
]
TABLE = "#ss-leaderboard-main"
CHART = "#ss-bias-main svg.marks"

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("space-leaderboard-browser")
    dataset = build_dataset(root)
    gold = load_gold(dataset, "main")
    config = served_config(dataset, root / "data", max_bytes=1_500_000)
    store = SqliteStore(config.data_dir)
    for name in CROWD:
        add_result(store, gold, name, 0)
    add_result(store, gold, LONG, 0b1010)
    add_result(store, gold, CJK, 0b0110, model_type="LALM")
    add_result(store, gold, FORMULA, 0b111000111)
    add_result(store, gold, "baseline", 0b1011, submitter=BASELINE_SUBMITTER, model_type="embedding")
    add_result(store, gold, IMITATION, 0b0001, model_type="embedding")
    add_result(store, gold, "partial", 0b0110, without=("detection",))
    with running_app(config, store=store, n_bootstrap=50) as (app, url):
        yield url, root


def open_page(browser, url: str, width: int = 1214, query: str = ""):
    """A page of the Space at ``width`` px, once the main table and chart are drawn."""
    page = new_page(browser, width, accept_downloads=True)
    page.goto(url + query)
    page.wait_for_function("([t, n]) => document.querySelectorAll(t + ' tbody tr').length === n", arg=[TABLE, ROWS])
    page.locator(f"{CHART} .mark-symbol path").first.wait_for()
    return page


@pytest.fixture(scope="module")
def page(browser, served):
    url, _ = served
    page = open_page(browser, url)
    yield page
    page.close()


def column(page, header: str) -> list[str]:
    return page.evaluate(
        """([table, header]) => {
            const heads = Array.from(document.querySelectorAll(table + ' thead th')).map(th => th.innerText.trim());
            const i = heads.findIndex(h => h.replace(/[▲▼]/g, '').trim() === header);
            return Array.from(document.querySelectorAll(table + ' tbody tr')).map(tr => tr.children[i].innerText.trim());
        }""",
        [TABLE, header],
    )


def tooltip_of(page, name: str) -> str:
    """The chart's hover text for the point of ``name`` (pointer events sent to that very marker,
    so points drawn on top of each other do not hide it)."""
    marker = page.locator(f"{CHART} .mark-symbol path").and_(page.get_by_label(name, exact=True))
    for event in ("pointerover", "pointermove"):
        marker.dispatch_event(event, {"bubbles": True, "pointerType": "mouse"})
    tooltip = page.locator("#vg-tooltip-element.visible")
    tooltip.wait_for()
    return tooltip.inner_text()


def boxes(page, selector: str) -> list[dict]:
    return page.evaluate(
        "s => Array.from(document.querySelectorAll(s)).map(e => e.getBoundingClientRect().toJSON())", selector
    )


def overlap(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


def luminance(css_colour: str) -> float:
    r, g, b = (float(v) for v in re.findall(r"[\d.]+", css_colour)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_a_wide_name_is_cut_with_the_full_text_on_hover_and_the_default_columns_fit(page):
    page.screenshot(path="/tmp/space_lb_table.png", full_page=True)
    headers = page.evaluate(
        "t => Array.from(document.querySelectorAll(t + ' thead th')).map(th => th.innerText.trim())", TABLE
    )
    assert headers == DEFAULT_HEADERS
    fits = page.evaluate(
        "t => { const s = document.querySelector(t + ' .ss-lb-scroll'); return [s.scrollWidth, s.clientWidth]; }",
        TABLE,
    )
    assert fits[0] <= fits[1], f"the default columns need {fits[0]} px in {fits[1]} px"
    model = page.locator(f"{TABLE} thead th", has_text="Model")
    assert model.bounding_box()["width"] <= 260  # was ~870 px for one wide name
    name = page.locator(f"{TABLE} tbody .ss-clip", has_text="WWWWW").first
    assert name.get_attribute("title") == LONG
    # cut (an ellipsis after two wrapped lines), the full text on hover
    assert name.evaluate("e => e.scrollWidth > e.clientWidth || e.scrollHeight > e.clientHeight")
    assert name.inner_text() == LONG  # the text itself is whole (copy, search)


def test_narrow_screen_shows_rank_model_and_headline_metrics(browser, served):
    url, _ = served
    page = open_page(browser, url, width=390)
    page.screenshot(path="/tmp/space_lb_390.png", full_page=True)
    rights = page.evaluate(
        "t => Array.from(document.querySelectorAll(t + ' thead th')).map(th => th.getBoundingClientRect().right)",
        TABLE,
    )
    visible = [h for h, right in zip(DEFAULT_HEADERS, rights) if right <= 390]
    assert visible == DEFAULT_HEADERS[:6], visible  # two columns showed before; the headline metrics come first
    page.close()


def test_a_header_click_sorts_with_empty_values_last_both_ways(page):
    header = page.locator(f"{TABLE} thead th", has_text="Det Bal Acc")
    for direction in ("descending", "ascending"):
        header.click()
        assert header.get_attribute("aria-sort") == direction
        values = column(page, "Det Bal Acc")
        assert values[-1] == "" and "" not in values[:-1], values  # "partial" has none: last either way
        numbers = [float(v) for v in values[:-1]]
        assert numbers == sorted(numbers, reverse=direction == "descending")
    page.locator(f"{TABLE} thead th", has_text="Model").click()
    names = [name.removesuffix("verified").strip() for name in column(page, "Model")]
    assert names.index("baseline") < names.index("partial") < names.index(LONG)


def test_the_sort_stays_on_its_column_when_more_columns_are_shown(browser, served):
    url, _ = served
    page = open_page(browser, url)
    page.get_by_label("Date, link, submission").first.check()
    header = page.locator(f"{TABLE} thead th", has_text="Submission id")
    header.click()
    page.get_by_label("95% CI").first.check()  # its columns come before the submission id
    page.locator(f"{TABLE} thead th", has_text="Det Bal Acc 95% CI").wait_for()
    assert header.get_attribute("aria-sort") == "ascending"
    assert page.locator(f"{TABLE} thead th[aria-sort=ascending]").count() == 1
    page.close()


def test_ranks_and_the_verified_mark(page):
    page.locator(f"{TABLE} thead th", has_text="Rank").click()
    ranks = column(page, "Rank")
    assert ranks[0] == "1" and ranks[-1] == ""  # unranked last
    assert [int(r) for r in ranks[:-1]] == sorted(int(r) for r in ranks[:-1])
    crowd = {name: rank for name, rank in zip(column(page, "Model"), ranks) if name in CROWD}
    assert len(set(crowd.values())) == 1  # equal scores share a rank
    marks = page.locator(f"{TABLE} tbody .ss-verified")
    assert marks.count() == 1 and "Verified" in marks.get_attribute("title")
    assert "baseline" in marks.locator("xpath=..").inner_text()


def test_chart_names_are_browser_text_with_the_full_name_on_hover(page):
    page.screenshot(path="/tmp/space_lb_chart.png", full_page=True)
    assert page.locator("#ss-bias-main img").count() == 0  # no server-drawn raster
    labels = page.evaluate(
        "c => Array.from(document.querySelectorAll(c + ' .mark-text.role-mark text')).map(t => t.textContent)", CHART
    )
    assert CJK in labels  # drawn by the browser in its fonts, not boxes from a server font
    cut = [t for t in labels if t.startswith("WWW")]
    assert cut and all(t.endswith("…") and len(t) < 40 for t in cut)
    assert LONG in tooltip_of(page, LONG)
    assert "Verified yes: a built-in baseline" in " ".join(tooltip_of(page, "baseline (verified baseline)").split())


TRANSPARENT = "rgba(0, 0, 0, 0)"


def test_the_verified_mark_in_the_table_is_a_badge_no_name_can_draw(page):
    page.screenshot(path="/tmp/space_lb_verified.png", full_page=True)
    badges = page.locator(f"{TABLE} tbody .ss-verified")
    assert badges.count() == 1 and "Verified" in badges.get_attribute("title")
    real = badges.locator("xpath=..")
    assert real.locator(".ss-clip").inner_text() == "baseline"
    badge = badges.evaluate(
        "e => { const s = getComputedStyle(e); return [s.backgroundColor, s.color, s.borderRadius]; }"
    )
    cell = real.evaluate("e => getComputedStyle(e).backgroundColor")
    assert badge[0] not in (TRANSPARENT, cell) and badge[1] != badge[0] and badge[2] != "0px", badge  # a filled pill
    imitation = page.locator(f"{TABLE} tbody td.ss-model", has=page.locator(".ss-clip", has_text=IMITATION))
    assert imitation.evaluate(  # submitted text is only text: nothing filled, nothing but its own characters
        "(td, clear) => Array.from(td.querySelectorAll('*')).every(e => getComputedStyle(e).backgroundColor === clear)",
        TRANSPARENT,
    )
    assert imitation.inner_text().strip() == IMITATION


def test_the_verified_mark_in_the_chart_is_a_ring_a_bold_label_the_legend_and_the_tooltip(page):
    centre = "e => { const b = e.getBoundingClientRect(); return [Math.round(b.x + b.width / 2), Math.round(b.y + b.height / 2)]; }"
    rings = page.evaluate(
        f"""c => Array.from(document.querySelectorAll(c + ' .mark-symbol.role-mark path'))
        .filter(p => p.getAttribute('fill') === 'transparent').map({centre})""",
        CHART,
    )
    real = page.locator(f"{CHART} .mark-symbol path").and_(
        page.get_by_label("baseline (verified baseline)", exact=True)
    )
    fake = page.locator(f"{CHART} .mark-symbol path").and_(page.get_by_label(IMITATION, exact=True))
    assert rings == [real.evaluate(centre)] and fake.evaluate(centre) not in rings
    weights = page.evaluate(
        "c => Object.fromEntries(Array.from(document.querySelectorAll(c + ' .mark-text.role-mark text'))"
        ".map(t => [t.textContent, getComputedStyle(t).fontWeight]))",
        CHART,
    )
    assert int(weights["baseline"]) >= 700 and all(int(w) < 700 for name, w in weights.items() if name != "baseline")
    legend = page.evaluate(
        "c => Array.from(document.querySelectorAll(c + ' .role-legend text')).map(t => t.textContent)", CHART
    )
    assert {"Verified (ringed, name in bold)", "yes: a built-in baseline scored by the Space"} <= set(legend), legend
    assert "Verified no: a submission" in " ".join(tooltip_of(page, IMITATION).split())


def test_chart_labels_do_not_overlap_and_markers_at_100_are_whole(page):
    texts = boxes(page, f"{CHART} .mark-text.role-mark text")
    assert len(texts) >= 6
    for a, b in itertools.combinations(texts, 2):
        assert not overlap(a, b), (a, b)
    frame = boxes(page, f"{CHART} .role-frame path.background")[0]
    markers = boxes(page, f"{CHART} .mark-symbol.role-mark path")
    assert len(markers) == ROWS - 1 + 1  # every row but "partial", and the verified baseline's ring
    for m in markers:  # inside the plot, not cut by its edge (x = 100 for the crowd)
        assert (
            frame["left"] < m["left"]
            and m["right"] < frame["right"]
            and frame["top"] < m["top"]
            and m["bottom"] < frame["bottom"]
        )
    axis = boxes(page, f"{CHART} .role-axis-label text") + boxes(page, f"{CHART} .role-axis-title text")
    svg = boxes(page, CHART)[0]
    assert all(svg["left"] <= a["left"] and a["right"] <= svg["right"] for a in axis)  # no axis cut by a name


def test_html_in_a_name_stays_text_in_table_chart_and_tooltip(page):
    assert XSS in tooltip_of(page, XSS)
    assert page.locator(f"{TABLE} tbody .ss-clip", has_text=XSS).count() == 1
    assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"], img[onerror]').length") == 0
    assert_no_dialog_once_rendered(page, f"{TABLE} tbody td.ss-model .ss-clip", XSS)
    assert_no_dialog_once_rendered(page, "#vg-tooltip-element td.value", XSS)  # the chart's hover text


def test_dark_theme_draws_table_and_chart_in_light_text(browser, served):
    url, _ = served
    page = open_page(browser, url, query="?__theme=dark")
    page.screenshot(path="/tmp/space_lb_dark.png", full_page=True)
    chart_text = page.evaluate(
        "c => getComputedStyle(document.querySelector(c + ' .role-axis-label text')).fill", CHART
    )
    assert luminance(chart_text) > 0.6, chart_text  # the figure was a white PNG
    assert (
        page.evaluate("c => getComputedStyle(document.querySelector(c)).backgroundColor", CHART) == "rgba(0, 0, 0, 0)"
    )
    cell = page.locator(f"{TABLE} tbody td").first
    assert luminance(cell.evaluate("e => getComputedStyle(e).color")) > 0.6
    page.close()


def test_csv_download_has_every_row_full_names_and_no_formula(page):
    with page.expect_download() as download:
        page.locator("#ss-csv-main").click()
    data = open(download.value.path(), "rb").read()
    assert download.value.suggested_filename.endswith(".csv")
    text = data.decode("utf-8-sig")
    assert data.startswith(b"\xef\xbb\xbf") and LONG in text and CJK in text and XSS in text
    assert "'" + FORMULA.replace('"', '""') in text and "\n" + FORMULA not in text and "," + FORMULA not in text
    assert len(text.strip().splitlines()) == 1 + ROWS


def test_the_form_states_the_upload_limit_as_the_upload_refusal_does(page, served):
    _, root = served
    page.get_by_role("tab", name="Submit", exact=True).click()
    big = root / "big.jsonl"
    big.write_bytes(b" " * 1_600_000)
    page.locator("#ss-upload input[type=file]").set_input_files(str(big))
    refusal = page.get_by_text("exceed the maximum allowed size of").first
    refusal.wait_for()
    stated = refusal.inner_text().split("maximum allowed size of ")[1].split(":")[0]  # Gradio's words: "1.4 Mb"
    assert stated == "1.4 Mb"
    assert page.get_by_text(f"Limits: {stated} (1,500,000 bytes)").count() == 1


def test_a_submission_id_links_to_its_page(browser, served):
    url, _ = served
    page = open_page(browser, url)
    page.get_by_label("Date, link, submission").first.check()
    link = page.locator(f"{TABLE} tbody tr", has=page.locator(".ss-verified")).get_by_role("link", name="main-")
    submission_id = link.inner_text()
    link.click()
    page.locator("#ss-submission-details").get_by_text("baseline").first.wait_for()
    assert page.url.endswith(f"?submission={submission_id}")
    assert page.get_by_role("tab", name="Submission", exact=True).get_attribute("aria-selected") == "true"
    page.close()
