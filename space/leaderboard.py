"""The Leaderboard tab: one table per variant (rank, model, the paper's headline Table-2 columns
and the model's metadata; the rest behind toggles), its CSV download, the detection-bias chart,
and the paper's reported numbers apart. The table's columns, frame, CSV and the paper's tables
are in ``space.leaderboard_table``, the chart in ``space.bias_chart``; here are the tab and its
views, made again only when the results change.

Nothing a submitter typed is ever parsed as HTML or markdown: the table reaches the browser as
JSON (``table_payload``) and ``leaderboard_table.js`` writes every cell with ``textContent``
(a link only when it is http(s)); the chart is a Vega-Lite spec whose names are text marks and
tooltip values. Long names are cut by the browser (CSS ellipsis, Vega's ``limit``) and shown in
full on hover, so one name cannot widen a column or push the chart's axes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr
from gradio.components.plot import PlotData

from speakersleuth.space import about
from speakersleuth.space.bias_chart import bias_spec
from speakersleuth.space.disclosure import Disclosure
from speakersleuth.space.leaderboard_table import (
    DEFAULT_GROUPS,
    GROUPS,
    Scored,
    leaderboard_csv,
    leaderboard_frame,
    one_decimal,
    paper_caption,
    paper_frame,
    table_payload,
)
from speakersleuth.space.store import ResultsStore, StoredResult
from speakersleuth.speech.files import write_bytes_atomic

TABLE_JS = Path(__file__).with_name("leaderboard_table.js")

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
    payload per choice of column groups (made on first use); ``ids``: the results' ids, each with
    whether it is withdrawn (``_state``); ``made_at`` is ``time.monotonic()``."""

    ids: tuple[tuple[str, bool], ...]
    entries: Scored
    chart: PlotData
    csv_path: Path
    made_at: float
    tables: dict[tuple[str, ...], dict] = field(default_factory=dict)


def _state(results: list[StoredResult]) -> tuple[tuple[str, bool], ...]:
    """What a view was made from: each result's id and whether it is withdrawn."""
    return tuple((r.id, r.withdrawal is not None) for r in results)


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
            results = self.store.results(variant, include_withdrawn=True)  # a closed round's selection reads them
            view = self._views.get(variant)
            if view is not None and view.ids != _state(results):
                if (wait := view.made_at + self.coalesce_s - time.monotonic()) > 0:
                    time.sleep(wait)
                    results = self.store.results(variant, include_withdrawn=True)
            ids = _state(results)
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
    store: ResultsStore,
    variants: list[str],
    available: list[str],
    export_dir: Path,
    policy: Disclosure | None = None,
    note: Callable[[], str] = str,
):
    """One sub-tab per variant with its table, column toggles, CSV download, chart and the paper's
    table, under a line that says what ``note()`` says (the baselines still running, ``space.seed``;
    hidden when empty). Entries, chart and CSV (``export_dir/speakersleuth-<variant>.csv``) are
    made again only when the results change.

    Returns ``refresh(*groups_per_variant)`` and its inputs/outputs, so the app refreshes the tab
    on page load and after a submission.
    """
    views = LeaderboardViews(store, variants, export_dir, policy)
    status = gr.Markdown(visible=False, elem_id="ss-baselines-note")
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

    def refresh(*groups):
        text = note()
        return [*views.refresh(*groups), gr.Markdown(text, visible=bool(text))]

    return refresh, toggles, [*outputs, status]
