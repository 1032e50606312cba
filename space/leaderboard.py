"""The Leaderboard tab: one table per variant (rank, model, the paper's headline Table-2 columns
and the model's metadata; the rest behind toggles), its CSV download, the detection-bias chart,
and the paper's reported numbers apart.

Nothing a submitter typed is ever parsed as HTML or markdown: the table reaches the browser as
JSON (``table_payload``) and ``leaderboard_table.js`` writes every cell with ``textContent``
(a link only when it is http(s)); the chart is a Vega-Lite spec whose names are text marks and
tooltip values. Long names are cut by the browser (CSS ellipsis, Vega's ``limit``) and shown in
full on hover, so one name cannot widen a column or push the chart's axes.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import math
import re
import threading
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import altair as alt
import gradio as gr
import pandas as pd
from gradio.components.plot import PlotData

from metrics.score import INTERVAL_KEYS, PAPER_SOURCES, table2_order
from space import about
from space.disclosure import Disclosure
from space.store import ResultsStore, StoredResult
from speech.files import write_bytes_atomic

PAPER_DIR = Path(__file__).with_name("data") / "paper"
PAPER_TABLES = {"main": "table2_main.tsv", "4vc": "table9_4vc.tsv", "10turn": "table11_10turn.tsv"}
SAFE_URL = re.compile(r"https?://[^\s<>\"'`\\()\[\]]+")
TABLE_JS = Path(__file__).with_name("leaderboard_table.js")

RANK, MODEL, VERIFIED = "Rank", "Model", "Verified"
META = ["Organisation", "Type", "Weights"]
META_BACK = ["Date", "Link", "Submitted", "Submission id"]
#: Threshold-free detection, present for submissions whose detection lines carry scores.
THRESHOLD_FREE = ["det_auroc", "det_eer"]
#: The headline metrics, shown by default: those the scorer gives a 95 % interval, but AUROC and
#: EER, which have their own group (the default columns fill a 1,200 px wide view).
HEADLINE = [k for k in INTERVAL_KEYS if k not in THRESHOLD_FREE]

#: The paper's names of its source datasets (``metrics.score.PAPER_SOURCES``).
PAPER_SOURCE_NAMES = dict(zip(PAPER_SOURCES, ("Bazinga", "AMI", "Behavior-SD", "DailyTalk"), strict=True))

#: Column label of each leaderboard key (``metrics.score.TABLE2_KEYS``): the paper's column names.
COLUMN_LABELS = {
    "det_s1_acc": "Det S1",
    "det_s2_acc": "Det S2",
    "det_s3_acc": "Det S3",
    "det_bal_acc": "Det Bal Acc",
    "loc_s1_f1": "Loc S1 F1",
    "loc_s2_p": "Loc S2 P",
    "loc_s2_r": "Loc S2 R",
    "loc_s2_f1": "Loc S2 F1",
    "loc_s3_p": "Loc S3 P",
    "loc_s3_r": "Loc S3 R",
    "loc_s3_f1": "Loc S3 F1",
    "loc_bal_f1": "Loc Bal F1",
    **{f"disc_acc_{key}": f"Disc {name}" for key, name in PAPER_SOURCE_NAMES.items()},
    "disc_acc_avg": "Disc Avg",
    "ndcg_at_1": "N@1",
    "ndcg_at_2": "N@2",
    "exact_match": "EM",
    "det_paired_acc": "Det Paired",
    "loc_paired_acc": "Loc Paired",
    "det_auroc": "Det AUROC",
    "det_eer": "Det EER",
    "det_coverage": "Det Coverage",
    "loc_coverage": "Loc Coverage",
    "disc_coverage": "Disc Coverage",
    "rank_coverage": "Rank Coverage",
}

#: Toggleable column groups; rank, model, the headline metrics and the metadata are always shown
#: (together they fit a 1,200 px wide view).
GROUP_DETECTION = "Detection per scenario"
GROUP_LOCALIZATION = "Localization per scenario"
GROUP_DISCRIMINATION = "Discrimination per source, N@1"
GROUP_COVERAGE = "Coverage"
GROUP_CI = "95% CI"
GROUP_THRESHOLD_FREE = "Detection AUROC, EER (scores)"
GROUP_DETAILS = "Date, link, submission"
GROUPS = [
    GROUP_CI,
    GROUP_THRESHOLD_FREE,
    GROUP_DETECTION,
    GROUP_LOCALIZATION,
    GROUP_DISCRIMINATION,
    GROUP_COVERAGE,
    GROUP_DETAILS,
]
DEFAULT_GROUPS: list[str] = []

#: A spreadsheet runs a cell starting with one of these as a formula (OWASP's CSV injection list).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _group_of(key: str) -> str | None:
    if key in HEADLINE:
        return None
    if key in THRESHOLD_FREE:
        return GROUP_THRESHOLD_FREE
    if key.endswith("_coverage"):
        return GROUP_COVERAGE
    if key.startswith("det_"):
        return GROUP_DETECTION
    if key.startswith("loc_"):
        return GROUP_LOCALIZATION
    return GROUP_DISCRIMINATION


def column_label(key: str) -> str:
    """Display label of a leaderboard key, including ``disc_acc_<source>`` of other sources."""
    if key in COLUMN_LABELS:
        return COLUMN_LABELS[key]
    if key.startswith("disc_acc_"):
        return "Disc " + key.removeprefix("disc_acc_").replace("_", " ").title()
    raise KeyError(key)


def safe_link(url: str) -> str:
    """``url`` when it is a plain http(s) address the table may link to, else ``""``."""
    return url if SAFE_URL.fullmatch(url or "") else ""


Scored = list[tuple[StoredResult, dict]]


def _row(result: StoredResult, flat: dict) -> dict:
    m = result.metadata
    row = {
        MODEL: f"{m.model_name} [{m.setting}]" if m.setting else m.model_name,
        VERIFIED: result.verified,
        "Organisation": m.organisation,
        "Type": m.model_type,
        "Weights": m.access,
        "Date": m.model_date,
        "Link": safe_link(m.link),
        "Submitted": dt.datetime.fromtimestamp(result.created_at, dt.UTC).strftime("%Y-%m-%d"),
        "Submission id": result.id,
    }
    for key, value in flat.items():
        if key.endswith("_ci"):
            row[f"{column_label(key[:-3])} 95% CI"] = "" if value is None else f"{value[0]:.1f}-{value[1]:.1f}"
        else:
            row[key] = math.nan if value is None else value
    return row


def metric_keys(entries: Scored) -> list[str]:
    """Metric keys with at least one value among ``entries``, in the scorer's display order
    (so source datasets a build does not have do not become empty columns)."""
    order: list[str] = []
    seen: set[str] = set()
    for _, flat in entries:
        for key, value in flat.items():
            if key.endswith("_ci"):
                continue
            if key not in order:
                order.append(key)
            if value is not None:
                seen.add(key)
    return [k for k in table2_order(order) if k in seen]


def leaderboard_frame(entries: Scored, groups: Iterable[str] = DEFAULT_GROUPS) -> tuple[pd.DataFrame, list[str]]:
    """The table for one variant (``Disclosure.rows(results)``) and the kind of each column ("rank",
    "number", "str", "bool", "link" or "submission"), best first by the first headline metric present.

    ``Rank`` orders by that metric, ties sharing a rank (1, 2, 2, 4); rows without it have none
    and come last. ``Verified`` marks the built-in baselines.
    """
    groups = set(groups)
    keys = metric_keys(entries)
    headline = [k for k in HEADLINE if k in keys]
    detail = [k for k in keys if k not in HEADLINE and _group_of(k) in groups]
    ci = [f"{column_label(k)} 95% CI" for k in headline + detail if k in INTERVAL_KEYS] if GROUP_CI in groups else []
    back = META_BACK if GROUP_DETAILS in groups else []
    columns = [MODEL, VERIFIED] + headline + META + ci + detail + back
    frame = pd.DataFrame.from_records([_row(r, flat) for r, flat in entries], columns=columns)
    ranks = pd.Series(pd.NA, index=frame.index, dtype="Int64")
    if headline and len(frame):
        frame = frame.sort_values(headline[0], ascending=False, na_position="last", kind="stable")
        ranks = frame[headline[0]].rank(method="min", ascending=False).astype("Int64")
    frame.insert(0, RANK, ranks)
    numbers = {column_label(k) for k in headline + detail}
    frame = frame.rename(columns={k: column_label(k) for k in headline + detail}).reset_index(drop=True)
    kinds = {RANK: "rank", VERIFIED: "bool", "Link": "link", "Submission id": "submission"}
    return frame, [kinds.get(c, "number" if c in numbers else "str") for c in frame.columns]


def _cell(value):
    """A frame value as JSON: missing values (NaN, NA) become ``None``."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def table_payload(frame: pd.DataFrame, datatypes: list[str], label: str) -> dict:
    """What ``leaderboard_table.js`` draws: the columns (``Verified`` becomes a badge in the model's
    cell), their kinds, the rows as plain values and ``verified`` per row."""
    shown = [i for i, c in enumerate(frame.columns) if c != VERIFIED]
    return {
        "label": label,
        "headers": [frame.columns[i] for i in shown],
        "datatypes": [datatypes[i] for i in shown],
        "data": [[_cell(row[i]) for i in shown] for row in frame.itertuples(index=False)],
        "verified": [bool(v) for v in frame[VERIFIED]] if VERIFIED in frame else [],
    }


def _spreadsheet_safe(value):
    """A text cell a spreadsheet shows as text: one starting like a formula gets a leading ``'``."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_START) else value


def leaderboard_csv(entries: Scored) -> bytes:
    """The whole leaderboard of a variant as CSV: every column, full names, ``Verified`` as
    yes/no, text that a spreadsheet would run as a formula prefixed with ``'``; UTF-8 with a
    byte-order mark (so spreadsheets read non-Latin names right)."""
    frame, _ = leaderboard_frame(entries, GROUPS)
    frame[VERIFIED] = frame[VERIFIED].map({True: "yes", False: "no"})
    frame = frame.map(_spreadsheet_safe)
    return frame.to_csv(index=False, lineterminator="\r\n").encode("utf-8-sig")


# ---------------------------------------------------------------------------- detection bias chart

CHART_WIDTH, CHART_HEIGHT = 520, 440
AXIS_DOMAIN = (-4, 104)  # room around 0 and 100 so markers there are drawn whole
#: A label is cut (with an ellipsis) past LABEL_LIMIT_PX: every baseline name, "-calibrated" ones too, fits whole.
LABEL_FONT_PX, LABEL_LIMIT_PX, MAX_LABELS = 11, 220, 30
TYPE_COLOURS = {"LALM": "#4c78a8", "embedding": "#f58518", "other": "#54a24b"}
TYPE_SHAPES = {"LALM": "circle", "embedding": "square", "other": "triangle-up"}
#: A verified row's point is ringed (in the text colour) and its label bold: marks no name can draw.
VERIFIED_YES, VERIFIED_NO = "yes: a built-in baseline scored by the Space", "no: a submission"
VERIFIED_RING_SIZE, VERIFIED_RING_WIDTH = 180, 1.5
#: Where a label may sit around its point, clear of a verified point's ring: name -> (dx, dy, align,
#: baseline, box offset from the point).
LABEL_SIDES = {
    "right": (10, 0, "left", "middle", lambda w, h: (10, -h / 2)),
    "left": (-10, 0, "right", "middle", lambda w, h: (-10 - w, -h / 2)),
    "above": (0, -10, "center", "bottom", lambda w, h: (-w / 2, -10 - h)),
    "below": (0, 10, "center", "top", lambda w, h: (-w / 2, 10)),
}


#: Fixed notes on the chart: (S1, mean S2/S3, text, align), kept clear of the labels.
NOTES = [
    (100, 25, "biased towards 'consistent'", "right"),
    (0, 75, "biased towards 'inconsistent'", "left"),
    (72, 76, "no bias (S1 = mean S2/S3)", "right"),
]
NOTE_FONT_PX = 10


def _label_width(text: str, font_px: float = LABEL_FONT_PX) -> float:
    """A generous width in pixels of ``text`` (wide CJK glyphs count double), capped where Vega
    cuts a label."""
    em = sum(1.0 if unicodedata.east_asian_width(ch) in "WF" else 0.62 for ch in text)
    return min(LABEL_LIMIT_PX, em * font_px)


def _position(s1: float, s23: float) -> tuple[float, float]:
    """Where a point is drawn, in pixels from the plot's top left corner."""
    low, high = AXIS_DOMAIN
    return (s1 - low) / (high - low) * CHART_WIDTH, (high - s23) / (high - low) * CHART_HEIGHT


def place_labels(points: list[dict]) -> None:
    """Give up to ``MAX_LABELS`` points (in the given order) a ``side`` where their label overlaps
    no other label and stays inside the plot; the rest are named on hover only (``side`` "")."""
    placed: list[tuple[float, float, float, float]] = []
    for s1, s23, text, align in NOTES:
        (px, py), w, h = _position(s1, s23), _label_width(text, NOTE_FONT_PX), NOTE_FONT_PX + 3
        left = px - w if align == "right" else px
        placed.append((left, py - h / 2, left + w, py + h / 2))
    labelled = 0
    for point in points:
        point["side"] = ""
        if labelled >= MAX_LABELS:
            continue
        (px, py), w, h = _position(point["s1"], point["s23"]), _label_width(point["model"]), LABEL_FONT_PX + 3
        for side, (*_, offset) in LABEL_SIDES.items():
            ox, oy = offset(w, h)
            box = (px + ox, py + oy, px + ox + w, py + oy + h)
            inside = box[0] >= 0 and box[1] >= 0 and box[2] <= CHART_WIDTH and box[3] <= CHART_HEIGHT
            if inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                point["side"] = side
                placed.append(box)
                labelled += 1
                break


#: What the chart knows of each point.
POINT_FIELDS = ["model", "organisation", "type", "verified", "rank", "s1", "s23", "description", "side"]


def bias_spec(entries: Scored, variant: str) -> dict:
    """Detection bias (the paper's Figure 5) as a Vega-Lite spec: S1 accuracy against the mean of
    S2 and S3 accuracy, one point per submission (best ranked labelled first), with the diagonal of
    an unbiased judge; a verified row's point is ringed and its label bold (the legend and the
    tooltip say so).

    Drawn by the browser as SVG in the page's text colour (``currentColor``), so it follows the
    light or dark theme and writes names in the browser's fonts. The spec without its points is
    made by Altair once (``_bias_chart_spec``); a refresh only puts the points and the title in.
    """
    frame, _ = leaderboard_frame(entries, [GROUP_DETECTION])
    points = []
    for row in frame.itertuples(index=False):
        row = dict(zip(frame.columns, row))
        s1, s2, s3 = (row.get(column_label(f"det_{s}_acc")) for s in ("s1", "s2", "s3"))
        if any(v is None or pd.isna(v) for v in (s1, s2, s3)):
            continue
        points.append(
            {
                "model": row[MODEL],
                "organisation": row["Organisation"],
                "type": row["Type"],
                "verified": VERIFIED_YES if row[VERIFIED] else VERIFIED_NO,
                "rank": _cell(row[RANK]),
                "s1": float(s1),
                "s23": round((s2 + s3) / 2, 1),
                "description": f"{row[MODEL]} (verified baseline)" if row[VERIFIED] else row[MODEL],
            }
        )
    place_labels(points)
    spec = dict(_bias_chart_spec())
    spec["title"] = f"Detection bias on this build ({variant}); {len(points)} submission(s)"
    spec["data"] = {"values": points}  # inline: Gradio's chart draws top-level data given by value
    return spec


@functools.cache
def _bias_chart_spec() -> dict:
    """``_bias_chart`` as a spec (JSON-ready dict) whose layers draw the top-level data
    (``bias_spec`` puts the points there): made once, never changed."""
    chart = _bias_chart()
    chart.data = pd.DataFrame(columns=POINT_FIELDS)
    with alt.utils.schemapi.debug_mode(False):
        spec = chart.to_dict(validate=False)
    del spec["datasets"][spec.pop("data")["name"]]
    return spec


def _bias_chart() -> alt.LayerChart:
    """The detection-bias chart without its points and title (``bias_spec`` adds them)."""
    x, y = _axes()
    layers = _guide_layers(x, y)
    tooltip = _tooltip()
    layers += _point_layers(x, y, tooltip)
    layers += _label_layers(x, y, tooltip)
    return _themed(alt.layer(*layers))


def _axes() -> tuple[alt.X, alt.Y]:
    """S1 accuracy across, the mean of S2 and S3 accuracy up, both on ``AXIS_DOMAIN``."""
    x = alt.X(
        "s1:Q",
        title="S1 accuracy (%), says 'consistent' on consistent dialogues",
        scale=alt.Scale(domain=list(AXIS_DOMAIN), nice=False),
        axis=alt.Axis(values=list(range(0, 101, 20))),
    )
    y = alt.Y(
        "s23:Q",
        title="mean of S2 and S3 accuracy (%)",
        scale=alt.Scale(domain=list(AXIS_DOMAIN), nice=False),
        axis=alt.Axis(values=list(range(0, 101, 20))),
    )
    return x, y


def _guide_layers(x: alt.X, y: alt.Y) -> list[alt.Chart]:
    """The diagonal of an unbiased judge and the notes on either side of it."""
    diagonal = (
        alt.Chart(alt.Data(values=[{"s1": 0, "s23": 0}, {"s1": 100, "s23": 100}]))
        .mark_line(strokeDash=[5, 4], color="#888", strokeWidth=1, aria=False)
        .encode(x, y)
    )
    notes = alt.Chart(pd.DataFrame(NOTES, columns=["s1", "s23", "text", "align"]))
    return [diagonal] + [
        notes.transform_filter(alt.datum.align == align)
        .mark_text(align=align, fontSize=NOTE_FONT_PX, color="#888", aria=False)
        .encode(x, y, text="text:N")
        for align in ("left", "right")
    ]


def _tooltip() -> list[alt.Tooltip]:
    """What a point's tooltip shows: the submission, its rank and its two accuracies."""
    return [
        alt.Tooltip("model:N", title="Model"),
        alt.Tooltip("organisation:N", title="Organisation"),
        alt.Tooltip("type:N", title="Type"),
        alt.Tooltip("verified:N", title="Verified"),
        alt.Tooltip("rank:Q", title="Rank"),
        alt.Tooltip("s1:Q", title="S1 accuracy", format=".1f"),
        alt.Tooltip("s23:Q", title="mean S2/S3 accuracy", format=".1f"),
    ]


def _point_layers(x: alt.X, y: alt.Y, tooltip: list[alt.Tooltip]) -> list[alt.Chart]:
    """The ring around a verified row's point, then the points, coloured and shaped by type."""
    types = list(TYPE_COLOURS)
    ring = alt.Stroke(
        "verified:N",
        title="Verified (ringed, name in bold)",
        legend=alt.Legend(labelLimit=320, titleLimit=320),
        scale=alt.Scale(domain=[VERIFIED_YES], range=["currentColor"]),
    )
    return [
        alt.Chart()
        .transform_filter(alt.datum.verified == VERIFIED_YES)
        .mark_point(
            shape="circle",
            filled=False,
            size=VERIFIED_RING_SIZE,
            strokeWidth=VERIFIED_RING_WIDTH,
            opacity=1,
            aria=False,
        )
        .encode(x, y, tooltip=tooltip, stroke=ring),
        alt.Chart()
        .mark_point(filled=True, size=70, opacity=0.85)
        .encode(
            x,
            y,
            tooltip=tooltip,
            description="description:N",  # what a screen reader says of a point
            color=alt.Color("type:N", title="Type", scale=alt.Scale(domain=types, range=list(TYPE_COLOURS.values()))),
            shape=alt.Shape("type:N", title="Type", scale=alt.Scale(domain=types, range=list(TYPE_SHAPES.values()))),
        ),
    ]


def _label_layers(x: alt.X, y: alt.Y, tooltip: list[alt.Tooltip]) -> list[alt.Chart]:
    """The names beside the points, one layer per side and verified or not (a verified name in bold)."""
    layers = []
    for (side, (dx, dy, align, baseline, _)), verified in itertools.product(
        LABEL_SIDES.items(), (VERIFIED_YES, VERIFIED_NO)
    ):
        layers.append(
            alt.Chart()
            .transform_filter((alt.datum.side == side) & (alt.datum.verified == verified))
            .mark_text(
                align=align,
                baseline=baseline,
                dx=dx,
                dy=dy,
                fontSize=LABEL_FONT_PX,
                limit=LABEL_LIMIT_PX,
                fontWeight="bold" if verified == VERIFIED_YES else "normal",
                color="currentColor",
                aria=False,
            )
            .encode(x, y, text="model:N", tooltip=tooltip)
        )
    return layers


def _themed(chart: alt.LayerChart) -> alt.LayerChart:
    """``chart`` sized, on a transparent background, drawn as SVG in the page's text colour and font."""
    return (
        chart.properties(
            width=CHART_WIDTH,
            height=CHART_HEIGHT,
            background="transparent",
            usermeta={
                "embedOptions": {
                    "renderer": "svg",
                    "actions": {"export": True, "source": False, "compiled": False, "editor": False},
                }
            },
        )
        .configure(font="ui-sans-serif, system-ui, sans-serif")
        .configure_axis(
            labelColor="currentColor",
            titleColor="currentColor",
            tickColor="currentColor",
            domainColor="currentColor",
            gridColor="currentColor",
            gridOpacity=0.15,
        )
        .configure_legend(labelColor="currentColor", titleColor="currentColor", orient="bottom")
        .configure_title(
            color="currentColor",
            fontSize=13,
            fontWeight="normal",
        )
        .configure_view(stroke="currentColor", strokeOpacity=0.3)
    )


def paper_frame(variant: str) -> pd.DataFrame:
    """The paper's reported table for a variant (``space/data/paper``), labelled columns."""
    frame = pd.read_csv(PAPER_DIR / PAPER_TABLES[variant], sep="\t", comment="#")
    frame = frame.rename(columns={"method": "Method", "group": "Group"})
    return frame.rename(columns={c: column_label(c) for c in frame.columns if c not in ("Method", "Group")})


def paper_caption(variant: str) -> str:
    """The caption line of the paper's table (the TSV's comment header)."""
    with open(PAPER_DIR / PAPER_TABLES[variant], encoding="utf-8") as f:
        return f.readline().lstrip("# ").strip()


def one_decimal(frame: pd.DataFrame, datatypes: list[str]):
    """The frame styled to show its number columns with one decimal (sorting still uses the
    numbers; missing values show empty)."""
    numeric = [c for c, d in zip(frame.columns, datatypes) if d == "number"]
    return frame.style.format("{:.1f}", subset=numeric, na_rep="")


LEADERBOARD_CSS = """
.ss-leaderboard table td, .ss-leaderboard table th { font-variant-numeric: tabular-nums; }
.ss-lb-bar { display: flex; flex-wrap: wrap; gap: 0.5em 1em; align-items: center; justify-content: space-between;
  margin-bottom: 0.4em; color: var(--body-text-color); }
.ss-lb-bar .ss-lb-label { font-weight: 600; }
.ss-lb-bar input { padding: 0.25em 0.5em; border: 1px solid var(--border-color-primary); border-radius: var(--radius-sm);
  background: var(--input-background-fill); color: var(--body-text-color); min-width: 12em; }
.ss-lb-scroll { max-height: 600px; overflow: auto; border: 1px solid var(--border-color-primary);
  border-radius: var(--radius-lg); }
.ss-lb-scroll table { border-collapse: separate; border-spacing: 0; width: max-content; min-width: 100%;
  font-size: var(--text-sm); margin: 0; }
.ss-lb-scroll th, .ss-lb-scroll td { padding: 5px 6px; border: 0; border-bottom: 1px solid var(--border-color-primary);
  text-align: left; white-space: nowrap; background: var(--background-fill-primary); color: var(--body-text-color); }
.ss-lb-scroll tbody tr:nth-child(even) td { background: var(--table-even-background-fill, var(--background-fill-secondary)); }
.ss-lb-scroll thead th { position: sticky; top: 0; z-index: 3; background: var(--background-fill-secondary); }
.ss-lb-scroll th button { all: unset; display: block; width: 100%; cursor: pointer; font-weight: 600; }
.ss-lb-scroll th button:focus-visible { outline: 2px solid var(--color-accent); }
.ss-lb-scroll .ss-num { text-align: right; }
.ss-lb-scroll .ss-clip { display: block; max-width: 8em; overflow: hidden; text-overflow: ellipsis; }
/* a model name wraps (after a dash, or inside a long word) onto two lines, three on a phone, instead of being
   cut where the names of one family still read the same (centroid-campplus-...); a longer one ends in an ellipsis */
.ss-lb-scroll .ss-model .ss-clip { display: -webkit-inline-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2;
  line-clamp: 2; width: max-content; max-width: 12em; vertical-align: middle; white-space: normal; overflow-wrap: anywhere; }
/* the verified badge (table, submission page): a filled pill, which no submitted text can draw */
.ss-verified { display: inline-block; margin-left: 0.4em; padding: 0 0.5em; border-radius: 999px; vertical-align: middle;
  background: var(--button-primary-background-fill); color: var(--button-primary-text-color);
  font-size: 0.75em; font-weight: 700; line-height: 1.6; letter-spacing: 0.03em; white-space: nowrap; }
.ss-lb-scroll .ss-rank { position: sticky; left: 0; z-index: 2; box-sizing: border-box; width: 3.6em; min-width: 3.6em; }
.ss-lb-scroll .ss-model { position: sticky; left: 3.6em; z-index: 2; }
.ss-lb-scroll thead .ss-rank, .ss-lb-scroll thead .ss-model { z-index: 4; }
@media (max-width: 640px) {
  .ss-lb-scroll .ss-model .ss-clip { max-width: 9em; -webkit-line-clamp: 3; line-clamp: 3; }
  .ss-lb-scroll .ss-model .ss-verified { display: block; width: fit-content; margin: 0.2em 0 0; }
  .ss-lb-scroll th, .ss-lb-scroll td { padding: 4px 5px; }
  .ss-lb-scroll table { width: auto; }
  .ss-lb-scroll thead th.ss-num { white-space: normal; min-width: 3.2em; }
}
.ss-bias { color: var(--body-text-color); }
/* a chart keeps its size (text of 10-13 px) and scrolls sideways where the page is narrower (a phone) */
.ss-bias .vega-embed { max-width: 100%; overflow-x: auto; }
.ss-bias svg { max-width: none; }
"""


@dataclass(frozen=True)
class VariantView:
    """What one set of results shows: the scored entries, the chart, the CSV file and the table
    payload per choice of column groups (made on first use); ``made_at`` is ``time.monotonic()``."""

    ids: tuple[str, ...]
    entries: Scored
    chart: PlotData
    csv_path: Path
    made_at: float
    tables: dict[tuple[str, ...], dict] = field(default_factory=dict)


#: A view is made again at most this often (seconds): results that arrive together are shown by
#: one rebuild rather than one each (a refresh that finds its view out of date waits for it).
COALESCE_S = 0.5
#: Leaderboard refreshes that may run at once, all refresh events together (``concurrency_id``
#: "refresh"): more than the submissions' few slots, fewer than Gradio's 40 worker threads.
REFRESH_CONCURRENCY = 16


class LeaderboardViews:
    """The Leaderboard tab's views over one store, one ``VariantView`` per variant, made again only
    when that variant's results change, at most once per ``coalesce_s`` (thread-safe: refreshes of
    several pages may overlap)."""

    def __init__(
        self,
        store: ResultsStore,
        variants: list[str],
        export_dir: Path,
        policy: Disclosure | None = None,
        coalesce_s: float = COALESCE_S,
    ) -> None:
        self.store, self.variants, self.export_dir = store, variants, export_dir
        self.policy = policy or Disclosure()
        self.coalesce_s = coalesce_s
        self._views: dict[str, VariantView] = {}
        self._locks = {variant: threading.Lock() for variant in variants}

    def view_of(self, variant: str) -> VariantView:
        """The variant's view, showing every result stored when it was called. The store is read
        under the variant's lock, so refreshes that queue behind a rebuild reuse it when nothing
        changed meanwhile; one that finds the view out of date less than ``coalesce_s`` after it
        was made waits until then and reads the store again, so a burst of submissions is shown by
        one rebuild rather than one each."""
        with self._locks[variant]:
            results = self.store.results(variant)
            view = self._views.get(variant)
            if view is not None and view.ids != tuple(r.id for r in results):
                if (wait := view.made_at + self.coalesce_s - time.monotonic()) > 0:
                    time.sleep(wait)
                    results = self.store.results(variant)
            ids = tuple(r.id for r in results)
            if view is None or view.ids != ids:
                entries = self.policy.rows(results)
                chart = PlotData(type="altair", plot=json.dumps(bias_spec(entries, variant), allow_nan=False))
                csv_path = self.export_dir / f"speakersleuth-{variant}.csv"
                write_bytes_atomic(csv_path, leaderboard_csv(entries))  # made again from the store after a crash
                view = self._views[variant] = VariantView(ids, entries, chart, csv_path, time.monotonic())
        return view

    def refresh_variant(self, variant: str, groups: list[str]):
        """One variant's table (with the column ``groups``), chart and CSV path."""
        view = self.view_of(variant)
        key = tuple(sorted(groups))
        if key not in view.tables:
            frame, datatypes = leaderboard_frame(view.entries, groups)
            view.tables[key] = table_payload(frame, datatypes, f"Submissions on this build ({variant}): {len(frame)}")
        return view.tables[key], view.chart, str(view.csv_path)  # a value, not gr.update: no new component per refresh

    def refresh(self, *groups):
        """Every variant's table, chart and CSV path; ``groups`` holds each variant's column groups."""
        out = []
        for variant, selected in zip(self.variants, groups):
            out += self.refresh_variant(variant, selected)
        return out


def _variant_tab(variant: str, available: list[str]):
    """One variant's sub-tab (call inside ``gr.Tab``); returns its toggle, table, chart and download."""
    if variant not in available:
        gr.Markdown(f"The dataset this Space serves has no `{variant}` variant; submissions for it are not possible.")
    toggle = gr.CheckboxGroup(GROUPS, value=DEFAULT_GROUPS, label="Show more columns")
    table = gr.HTML(
        None,
        html_template='<div class="ss-lb"></div>',
        js_on_load=TABLE_JS.read_text(encoding="utf-8"),
        elem_id=f"ss-leaderboard-{variant}",
        elem_classes="ss-leaderboard",
        padding=False,
    )
    with gr.Row():
        download = gr.DownloadButton(f"Download CSV ({variant}): all columns", size="sm", elem_id=f"ss-csv-{variant}")
    with gr.Accordion("Detection bias (S1 vs mean S2/S3 accuracy)", open=True):
        plot = gr.Plot(show_label=False, elem_id=f"ss-bias-{variant}", elem_classes="ss-bias")
    with gr.Accordion("Reported in the paper, on the original data (not this build)", open=False):
        gr.Markdown(f"{about.PAPER_NOTE}\n*{paper_caption(variant)}*")
        paper = paper_frame(variant)
        paper_types = ["str", "str"] + ["number"] * (len(paper.columns) - 2)
        gr.Dataframe(
            value=one_decimal(paper, paper_types),
            interactive=False,
            datatype=paper_types,
            show_search="search",
            pinned_columns=1,
            label=f"Reported on the original data ({variant})",
            elem_id=f"ss-paper-{variant}",
            max_height=600,
        )
    return toggle, table, plot, download


def build_leaderboard_tab(
    store: ResultsStore, variants: list[str], available: list[str], export_dir: Path, policy: Disclosure | None = None
):
    """One sub-tab per variant with its table, column toggles, CSV download, chart and the paper's
    table. Entries, chart and CSV (``export_dir/speakersleuth-<variant>.csv``) are made again only
    when the results change.

    Returns ``refresh(*groups_per_variant)`` and its inputs/outputs, so the app refreshes the tab
    on page load and after a submission.
    """
    views = LeaderboardViews(store, variants, export_dir, policy)
    toggles, outputs = [], []
    for variant in variants:
        with gr.Tab(variant, id=f"lb-{variant}"):
            toggle, table, plot, download = _variant_tab(variant, available)
        toggle.change(
            lambda g, v=variant: views.refresh_variant(v, g),
            toggle,
            [table, plot, download],
            api_name=False,
            concurrency_limit=REFRESH_CONCURRENCY,
            concurrency_id="refresh",
        )
        toggles.append(toggle)
        outputs += [table, plot, download]
    return views.refresh, toggles, outputs
