"""The leaderboard's table: its columns (declared once: labels, groups, the headline metrics), one
variant's frame of disclosed rows, the JSON payload ``leaderboard_table.js`` draws, the CSV
download, and the paper's reported tables (``space/data/paper``) with the same column labels."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from speakersleuth.metrics.score import INTERVAL_KEYS, PAPER_SOURCES, table2_order
from speakersleuth.space.store import StoredResult

PAPER_DIR = Path(__file__).with_name("data") / "paper"
PAPER_TABLES = {"main": "table2_main.tsv", "4vc": "table9_4vc.tsv", "10turn": "table11_10turn.tsv"}
SAFE_URL = re.compile(r"https?://[^\s<>\"'`\\()\[\]]+")

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


def json_value(value):
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
        "data": [[json_value(row[i]) for i in shown] for row in frame.itertuples(index=False)],
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
