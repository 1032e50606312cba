"""The leaderboard's detection-bias chart (the paper's Figure 5): a Vega-Lite spec made by Altair
once, into which each refresh puts the points of one variant's table, with labels placed so that
none overlaps another."""

from __future__ import annotations

import functools
import itertools
import unicodedata

import altair as alt
import pandas as pd

from speakersleuth.space.leaderboard_table import (
    GROUP_DETECTION,
    MODEL,
    RANK,
    VERIFIED,
    Scored,
    column_label,
    json_value,
    leaderboard_frame,
)

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
                "rank": json_value(row[RANK]),
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


#: How every name beside a point is drawn: its size, cut off past its width, in the page's text
#: colour, silent to screen readers (each point already says its model).
_LABEL_TEXT = {"fontSize": LABEL_FONT_PX, "limit": LABEL_LIMIT_PX, "color": "currentColor", "aria": False}


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
                fontWeight="bold" if verified == VERIFIED_YES else "normal",
                **_LABEL_TEXT,
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
