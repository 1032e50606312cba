"""The Leaderboard tab's data without a browser: ranks, the default columns, the JSON the table
is drawn from, the CSV download and the detection-bias chart's spec and label placement."""

from __future__ import annotations

import csv
import io
import itertools
import json
import time

import altair as alt
import pytest

from speakersleuth.metrics.score import TABLE2_KEYS
from speakersleuth.metrics.submission import load_gold
from speakersleuth.space import bias_chart, leaderboard, leaderboard_table
from speakersleuth.space.disclosure import Disclosure
from speakersleuth.space.store import BASELINE_SUBMITTER, SqliteStore
from tests.support.space_support import add_result, build_dataset

XSS = "<img src=x onerror=alert(1)>"
LONG = "W" * 300
CJK = "音声言語モデル"


@pytest.fixture(scope="module")
def gold(tmp_path_factory):
    return load_gold(build_dataset(tmp_path_factory.mktemp("space-leaderboard")), "main")


@pytest.fixture
def store(tmp_path):
    with SqliteStore(tmp_path) as store:
        yield store


def entries(store):
    return Disclosure().rows(store.results("main"))


def strict_json(text: str):
    """JSON as a browser reads it: NaN or Infinity are errors."""
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))


def test_ties_share_a_rank_and_rows_without_the_headline_metric_come_last_unranked(store, gold):
    add_result(store, gold, "partial", 0b0110, without=("detection",))
    for name in ("tie-1", "tie-2"):
        add_result(store, gold, name, 0b0110)
    for pattern in (0, 0b1, 0b111000111, 0b1010101):
        add_result(store, gold, f"pattern-{pattern}", pattern)
    frame, datatypes = leaderboard_table.leaderboard_frame(entries(store))
    ranks = dict(zip(frame["Model"], frame["Rank"]))
    scores = dict(zip(frame["Model"], frame["Det Bal Acc"]))
    assert ranks["tie-1"] == ranks["tie-2"]
    for name, score in scores.items():
        if name != "partial":
            assert ranks[name] == 1 + sum(other > score for other in scores.values()), name
    assert list(frame["Det Bal Acc"])[:-1] == sorted(list(frame["Det Bal Acc"])[:-1], reverse=True)
    assert list(frame["Model"])[-1] == "partial" and ranks["partial"] is leaderboard_table.pd.NA
    assert len(set(ranks.values())) >= 4 and datatypes[0] == "rank"


def test_default_columns_are_rank_model_headline_metrics_and_metadata(store, gold):
    add_result(store, gold, "a", 1)
    frame, _ = leaderboard_table.leaderboard_frame(entries(store))
    assert list(frame.columns) == [
        "Rank",
        "Model",
        "Verified",
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
    full, _ = leaderboard_table.leaderboard_frame(entries(store), leaderboard_table.GROUPS)
    assert {"Det S1", "Det Bal Acc 95% CI", "Det Coverage", "Link", "Submission id"} <= set(full.columns)


def test_every_scorer_key_has_a_label_and_other_sources_get_one_from_their_key():
    assert [leaderboard_table.column_label(k) for k in TABLE2_KEYS][12:16] == [
        "Disc Bazinga",
        "Disc AMI",
        "Disc Behavior-SD",
        "Disc DailyTalk",
    ]
    assert set(leaderboard_table.COLUMN_LABELS) == set(TABLE2_KEYS)
    assert leaderboard_table.column_label("disc_acc_chitchat_tts") == "Disc Chitchat Tts"
    assert leaderboard_table.column_label("ndcg_at_2") == "N@2"
    with pytest.raises(KeyError):
        leaderboard_table.column_label("det_s4_acc")


def test_the_table_reaches_the_browser_as_plain_json_with_verified_rows_marked(store, gold):
    add_result(store, gold, XSS, 1)
    add_result(store, gold, "baseline", 2, submitter=BASELINE_SUBMITTER)
    add_result(store, gold, "partial", 3, without=("detection",))
    frame, datatypes = leaderboard_table.leaderboard_frame(entries(store))
    payload = strict_json(json.dumps(leaderboard_table.table_payload(frame, datatypes, "label"), allow_nan=False))
    assert "Verified" not in payload["headers"] and payload["headers"][:2] == ["Rank", "Model"]
    rows = {row[1]: (row, verified) for row, verified in zip(payload["data"], payload["verified"])}
    assert rows[XSS][0][1] == XSS and payload["datatypes"][1] == "str"  # text, drawn with textContent
    assert rows["baseline"][1] is True and rows[XSS][1] is False
    partial = rows["partial"][0]
    assert partial[0] is None and partial[payload["headers"].index("Det Bal Acc")] is None  # empty, not NaN


@pytest.mark.parametrize("name", ['=HYPERLINK("http://evil","x")', "+1+cmd", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_csv_cells_that_a_spreadsheet_would_run_start_with_a_quote(store, gold, name):
    add_result(store, gold, name, 1)
    rows = list(csv.DictReader(io.StringIO(leaderboard_table.leaderboard_csv(entries(store)).decode("utf-8-sig"))))
    assert rows[0]["Model"] == "'" + name


def test_csv_has_every_column_full_names_and_utf8(store, gold):
    add_result(store, gold, LONG, 1, link="https://example.org/m")
    add_result(store, gold, CJK, 2, submitter=BASELINE_SUBMITTER)
    add_result(store, gold, "partial", 3, without=("detection",))
    data = leaderboard_table.leaderboard_csv(entries(store))
    assert data.startswith(b"\xef\xbb\xbf")  # UTF-8 with a byte-order mark, for spreadsheets
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
    full, _ = leaderboard_table.leaderboard_frame(entries(store), leaderboard_table.GROUPS)
    assert list(rows[0]) == list(full.columns)
    by_name = {row["Model"]: row for row in rows}
    assert set(by_name) == {LONG, CJK, "partial"}  # full names, not cut
    assert by_name[CJK]["Verified"] == "yes" and by_name[LONG]["Verified"] == "no"
    assert by_name[LONG]["Link"] == "https://example.org/m"
    assert by_name["partial"]["Rank"] == "" and by_name["partial"]["Det Bal Acc"] == ""
    assert float(by_name[LONG]["Det Bal Acc"]) >= 0 and "-" in by_name[LONG]["Det Bal Acc 95% CI"]


def test_chart_is_a_themeable_vega_lite_spec_with_names_as_text(store, gold):
    add_result(store, gold, XSS, 1)
    add_result(store, gold, CJK, 2, submitter=BASELINE_SUBMITTER)
    add_result(store, gold, "partial", 3, without=("detection",))
    spec = strict_json(json.dumps(bias_chart.bias_spec(entries(store), "main")))
    alt.LayerChart.from_dict(spec)  # valid Vega-Lite: Altair checks the spec against the schema
    assert spec["background"] == "transparent" and spec["usermeta"]["embedOptions"]["renderer"] == "svg"
    assert spec["config"]["axis"]["labelColor"] == "currentColor"  # the page's text colour, light or dark
    points = spec["data"]["values"]
    marks = [
        layer for layer in spec["layer"] if layer["mark"]["type"] in ("point", "text") and "model" in json.dumps(layer)
    ]
    assert marks and all("data" not in layer for layer in marks)  # the points' and names' layers draw these points
    assert {p["model"] for p in points} == {XSS, CJK}  # no point without the S1/S2/S3 accuracies
    assert {p["model"]: p["verified"] for p in points} == {XSS: bias_chart.VERIFIED_NO, CJK: bias_chart.VERIFIED_YES}
    assert {p["model"]: p["description"] for p in points} == {
        XSS: XSS,
        CJK: f"{CJK} (verified baseline)",
    }  # screen readers
    assert "2 submission(s)" in spec["title"]
    scales = [layer["encoding"]["x"]["scale"]["domain"] for layer in spec["layer"] if "x" in layer.get("encoding", {})]
    assert all(low < 0 and high > 100 for low, high in scales)  # markers at 0 and 100 are drawn whole
    tooltips = [t["field"] for layer in spec["layer"] for t in layer.get("encoding", {}).get("tooltip", [])]
    assert {"model", "verified", "s1", "s23"} <= set(tooltips)


def label_boxes(points):
    boxes = []
    for point in points:
        if point["side"]:
            px, py = bias_chart._position(point["s1"], point["s23"])
            w, h = bias_chart._label_width(point["model"]), bias_chart.LABEL_FONT_PX + 3
            ox, oy = bias_chart.LABEL_SIDES[point["side"]][4](w, h)
            boxes.append((px + ox, py + oy, px + ox + w, py + oy + h))
    return boxes


def test_labels_never_overlap_and_stay_inside_the_plot():
    crowd = [{"model": f"always consistent {i}", "s1": 100.0, "s23": 0.0} for i in range(6)]
    spread = [
        {"model": name, "s1": s1, "s23": s23}
        for name, (s1, s23) in zip(
            [LONG, CJK, XSS] + [f"m{i}" for i in range(60)], itertools.product(range(0, 101, 12), repeat=2)
        )
    ]
    points = crowd + spread
    bias_chart.place_labels(points)
    boxes = label_boxes(points)
    assert sum(1 for p in crowd if p["side"]) == 1  # one name at (100, 0); the others on hover
    assert 10 <= len(boxes) <= bias_chart.MAX_LABELS
    for a, b in itertools.combinations(boxes, 2):
        assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    assert all(
        0 <= b[0] and b[2] <= bias_chart.CHART_WIDTH and 0 <= b[1] and b[3] <= bias_chart.CHART_HEIGHT for b in boxes
    )


def test_a_burst_of_results_is_shown_by_few_rebuilds_and_every_refresh_shows_what_was_stored(
    store, gold, tmp_path, monkeypatch
):
    """Ten results stored 0.1 s apart, each followed by a refresh from two pages at once: every
    refresh shows every result stored before it was called, and the views are made again about once
    per ``coalesce_s`` (here 0.4 s, so ~3 times over the 1 s burst), not once per result."""
    from concurrent.futures import ThreadPoolExecutor

    views = leaderboard.LeaderboardViews(store, ["main"], tmp_path / "exports", coalesce_s=0.4)
    made = []
    real = leaderboard.bias_spec
    monkeypatch.setattr(
        leaderboard, "bias_spec", lambda entries, variant: made.append(len(entries)) or real(entries, variant)
    )
    add_result(store, gold, "first", 0)
    views.view_of("main")
    stored = {"first"}
    with ThreadPoolExecutor(4) as pool:
        pending = []
        for i in range(10):
            add_result(store, gold, f"burst-{i}", i + 1)
            stored.add(f"burst-{i}")
            pending += [(set(stored), pool.submit(views.view_of, "main")) for _ in range(2)]
            time.sleep(0.1)
        for before, future in pending:
            shown = {r.metadata.model_name for r, _ in future.result().entries}
            assert before <= shown, sorted(before - shown)
    assert len(made) <= 5, made  # one rebuild per result would be 11
    assert made[-1] == 11


def test_a_refresh_that_waits_for_its_rebuild_shows_what_arrived_while_it_waited(store, gold, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    views = leaderboard.LeaderboardViews(store, ["main"], tmp_path / "exports", coalesce_s=1.0)
    add_result(store, gold, "first", 0)
    views.view_of("main")
    add_result(store, gold, "second", 1)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(views.view_of, "main")  # out of date within coalesce_s of its rebuild: waits
        time.sleep(0.3)
        add_result(store, gold, "while-waiting", 2)
        shown = {r.metadata.model_name for r, _ in waiting.result().entries}
    assert shown == {"first", "second", "while-waiting"}


def test_the_chart_writes_every_baseline_name_whole():
    """The built-in baselines differ only at their ends (``centroid-campplus`` and
    ``centroid-campplus-calibrated``): their chart labels must not be cut. Widths are measured
    with Pillow's DejaVu Sans at the label size, an independent stand-in for the browser's font."""
    from PIL import ImageFont

    from speakersleuth.judges.__main__ import OFFLINE_JUDGES

    font = ImageFont.load_default(size=bias_chart.LABEL_FONT_PX)
    for judge in OFFLINE_JUDGES.split(","):
        for name in (judge, f"{judge}-calibrated"):
            width = font.getlength(name)
            assert width < bias_chart.LABEL_LIMIT_PX, (name, width)
            assert bias_chart._label_width(name) >= width, name  # placement counts a label no narrower than drawn
