"""The Leaderboard tab: one table per variant (the paper's Table-2 columns, headline first, the
rest behind toggles), the detection-bias scatter, and the paper's reported numbers apart.

Tables hold only plain text and numbers (``datatype`` "str"/"number"), so a submitted name is
shown as text whatever it contains; the one markdown column is the link, built from a URL that
must match ``SAFE_URL`` (anything else is left out).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import math
import re
from collections.abc import Iterable
from pathlib import Path

import gradio as gr
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from metrics.score import LEADERBOARD_COLUMNS, column_label, leaderboard_row  # noqa: E402

from space import about  # noqa: E402
from space.store import ResultsStore, StoredResult, write_atomic  # noqa: E402

PAPER_DIR = Path(__file__).with_name("data") / "paper"
PAPER_TABLES = {"main": "table2_main.tsv", "4vc": "table9_4vc.tsv", "10turn": "table11_10turn.tsv"}
SAFE_URL = re.compile(r"https?://[^\s<>\"'`\\()\[\]]+")

META_FRONT = ["Model", "Organisation", "Type", "Weights"]
META_BACK = ["Date", "Link", "Submitted", "Submission id"]
HEADLINE = [key for key, _, headline in LEADERBOARD_COLUMNS if headline]

#: Toggleable column groups (label -> predicate on a metric key); the headline metrics and the
#: front metadata are always shown.
GROUP_DETECTION = "Detection per scenario"
GROUP_LOCALIZATION = "Localization per scenario"
GROUP_DISCRIMINATION = "Discrimination per source, N@1"
GROUP_COVERAGE = "Coverage"
GROUP_CI = "95% CI"
GROUP_DETAILS = "Date, link, submission"
GROUPS = [GROUP_CI, GROUP_DETECTION, GROUP_LOCALIZATION, GROUP_DISCRIMINATION, GROUP_COVERAGE, GROUP_DETAILS]
DEFAULT_GROUPS = [GROUP_DETAILS]


def _group_of(key: str) -> str | None:
    if key in HEADLINE:
        return None
    if key.endswith("_coverage"):
        return GROUP_COVERAGE
    if key.startswith("det_"):
        return GROUP_DETECTION
    if key.startswith("loc_"):
        return GROUP_LOCALIZATION
    return GROUP_DISCRIMINATION


def _link_cell(url: str) -> str:
    return f"[link](<{url}>)" if SAFE_URL.fullmatch(url or "") else ""


Scored = list[tuple[StoredResult, dict]]


def scored(results: Iterable[StoredResult]) -> Scored:
    """Each result with its flat leaderboard row (computed once per refresh)."""
    return [(r, leaderboard_row(r.scores)) for r in results]


def _row(result: StoredResult, flat: dict) -> dict:
    m = result.metadata
    row = {
        "Model": m.model_name, "Organisation": m.organisation, "Type": m.model_type, "Weights": m.access,
        "Date": m.model_date, "Link": _link_cell(m.link),
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
            if key.endswith("_ci") or key in order:
                continue
            order.append(key)
            if value is not None:
                seen.add(key)
    reference = [k for k, _, _ in LEADERBOARD_COLUMNS]
    extra = [k for k in order if k not in reference]
    full = []
    for key in reference:
        if key == "disc_acc_avg":
            full += extra
        full.append(key)
    return [k for k in full if k in seen]


def leaderboard_frame(entries: Scored, groups: Iterable[str] = DEFAULT_GROUPS) -> tuple[pd.DataFrame, list[str]]:
    """The table for one variant (``scored(results)``) and the Dataframe datatypes of its
    columns; sorted by the first headline metric present (best first)."""
    groups = set(groups)
    keys = metric_keys(entries)
    headline = [k for k in HEADLINE if k in keys]
    detail = [k for k in keys if k not in HEADLINE and _group_of(k) in groups]
    ci = [f"{column_label(k)} 95% CI" for k in headline] if GROUP_CI in groups else []
    back = META_BACK if GROUP_DETAILS in groups else []
    rows = [_row(r, flat) for r, flat in entries]
    frame = pd.DataFrame.from_records(rows, columns=META_FRONT + headline + ci + detail + back)
    if headline and len(frame):
        frame = frame.sort_values(headline[0], ascending=False, na_position="last", kind="stable")
    frame = frame.rename(columns={k: column_label(k) for k in headline + detail})
    datatypes = [
        "markdown" if c == "Link" else "number" if c in {column_label(k) for k in headline + detail} else "str"
        for c in frame.columns
    ]
    return frame.reset_index(drop=True), datatypes


def bias_figure(entries: Scored, variant: str):
    """Detection bias (the paper's Figure 5): S1 accuracy against the mean of S2 and S3
    accuracy, one point per submission, with the diagonal of an unbiased judge."""
    fig, ax = plt.subplots(figsize=(6.4, 5.2), dpi=100)
    ax.plot([0, 100], [0, 100], color="0.6", linestyle="--", linewidth=1, label="no bias (S1 = mean S2/S3)")
    markers = {"LALM": "o", "embedding": "s", "other": "^"}
    plotted = 0
    for result, row in entries:
        s1, s2, s3 = row.get("det_s1_acc"), row.get("det_s2_acc"), row.get("det_s3_acc")
        if None in (s1, s2, s3):
            continue
        y = (s2 + s3) / 2
        ax.scatter([s1], [y], marker=markers.get(result.metadata.model_type, "^"), s=40, zorder=3)
        ax.annotate(
            result.metadata.model_name[:40], (s1, y), xytext=(4, 4), textcoords="offset points",
            fontsize=8, parse_math=False,
        )
        plotted += 1
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.set_aspect("equal")
    ax.set_xlabel("S1 accuracy (%)  [says 'consistent' on consistent dialogues]")
    ax.set_ylabel("mean of S2 and S3 accuracy (%)")
    ax.set_title(f"Detection bias on this build ({variant}); {plotted} submission(s)", fontsize=10)
    ax.text(97, 4, "biased towards\n'consistent'", ha="right", va="bottom", fontsize=8, color="0.4")
    ax.text(3, 96, "biased towards\n'inconsistent'", ha="left", va="top", fontsize=8, color="0.4")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    plt.close(fig)
    return fig


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
"""


def build_leaderboard_tab(store: ResultsStore, variants: list[str], available: list[str], figure_dir: Path):
    """One sub-tab per variant with its table, column toggles, scatter and the paper's table.
    The scatter is drawn once per change of the results, as a PNG in ``figure_dir``.

    Returns ``refresh(*groups_per_variant)`` and its inputs/outputs, so the app refreshes the tab
    on page load and after a submission.
    """
    tables, toggles, plots = [], [], []
    for variant in variants:
        with gr.Tab(variant, id=f"lb-{variant}"):
            if variant not in available:
                gr.Markdown(f"The dataset this Space serves has no `{variant}` variant; submissions for it are not possible.")
            toggle = gr.CheckboxGroup(GROUPS, value=DEFAULT_GROUPS, label="Show more columns")
            table = gr.Dataframe(
                value=pd.DataFrame(columns=META_FRONT), interactive=False, show_search="search", pinned_columns=1,
                label=f"Submissions on this build ({variant})", elem_id=f"ss-leaderboard-{variant}",
                elem_classes="ss-leaderboard", max_height=600,
            )
            with gr.Accordion("Detection bias (S1 vs mean S2/S3 accuracy)", open=True):
                plot = gr.Image(show_label=False, type="filepath", format="png", interactive=False,
                                buttons=["download"], elem_id=f"ss-bias-{variant}")
            with gr.Accordion("Reported in the paper, on the original data (not this build)", open=False):
                gr.Markdown(f"{about.PAPER_NOTE}\n*{paper_caption(variant)}*")
                paper = paper_frame(variant)
                paper_types = ["str", "str"] + ["number"] * (len(paper.columns) - 2)
                gr.Dataframe(value=one_decimal(paper, paper_types), interactive=False, datatype=paper_types, show_search="search",
                             pinned_columns=1, label=f"Reported on the original data ({variant})",
                             elem_id=f"ss-paper-{variant}", max_height=600)
            tables.append(table)
            toggles.append(toggle)
            plots.append(plot)

    figures: dict[str, tuple[tuple[str, ...], str]] = {}  # variant -> (result ids, PNG path)

    def refresh_variant(variant: str, groups: list[str]):
        entries = scored(store.results(variant))
        frame, datatypes = leaderboard_frame(entries, groups)
        shown = one_decimal(frame, datatypes)
        ids = tuple(r.id for r, _ in entries)
        if variant not in figures or figures[variant][0] != ids:  # redraw only when results changed
            buffer = io.BytesIO()
            bias_figure(entries, variant).savefig(buffer, format="png")
            digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]
            path = figure_dir / f"bias-{variant}-{digest}.png"
            write_atomic(path, buffer.getvalue())
            if variant in figures and figures[variant][1] != str(path):
                Path(figures[variant][1]).unlink(missing_ok=True)  # served from Gradio's cache by now
            figures[variant] = (ids, str(path))
        return gr.update(value=shown, datatype=datatypes), figures[variant][1]

    def refresh(*groups):
        out = []
        for variant, selected in zip(variants, groups):
            out += refresh_variant(variant, selected)
        return out

    outputs = [c for pair in zip(tables, plots) for c in pair]
    for variant, toggle, table, plot in zip(variants, toggles, tables, plots):
        toggle.change(lambda g, v=variant: refresh_variant(v, g), toggle, [table, plot], api_name=False)
    return refresh, toggles, outputs
