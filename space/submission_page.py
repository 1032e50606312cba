"""The Submission tab: one submission's page and its withdrawal by the identity that submitted it.

The page shows a submission's metadata (the link only when it is a plain http(s) address), the
number of lines and the SHA-256 of its canonical predictions, its full per-task breakdown with
95% CIs, a download of those canonical predictions, and its analyses (``metrics.analysis``,
recomputed from the stored predictions: by clip duration quartile, source corpus, VC model and
scenario, with a chart by duration, and the deltas across the settings its submitter tagged). It opens from the id box, or from a
link ``?submission=<id>``. A submission id is checked against the shape of ids
(``space.store.result_id``) before anything is read; only the store's own id names a file.
Withdrawn submissions keep their page, marked withdrawn with when and why.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import altair as alt
import gradio as gr
import pandas as pd

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.analysis import DELTA_KEYS, GROUPINGS, Provenance, analyse, read_provenance, setting_deltas
from speakersleuth.metrics.submission import SubmissionError, parse_submission
from speakersleuth.space.disclosure import row_key
from speakersleuth.space.leaderboard_table import column_label, safe_link
from speakersleuth.space.store import StoredResult
from speakersleuth.space.submission_form import MAX_LINK_CHARS
from speakersleuth.space.submit import result_html
from speakersleuth.space.submitter import BREAKDOWN_COLUMNS, Submitter, client_address
from speakersleuth.speech.files import write_bytes_atomic

#: ``space.store.result_id``: a variant, a dash and the first 16 hex digits of the predictions' SHA-256
#: (lower case in the store; any case is accepted, ASCII letters only).
ID_PATTERN = re.compile(rf"(?:{'|'.join(map(re.escape, ssd.VARIANTS))})-[0-9a-f]{{16}}", re.ASCII | re.IGNORECASE)
ID_EXAMPLE = "main-0123456789abcdef"
MAX_ID_CHARS = 64
QUERY_PARAMETER = "submission"
TAB_ID = "submission"
VERIFIED_NOTE = "Verified: a built-in baseline scored by the Space itself"

SUBMISSION_CSS = """
.ss-submission { overflow-wrap: anywhere; }
.ss-submission dl { display: grid; grid-template-columns: fit-content(14em) minmax(0, 1fr); gap: 0.25em 1em; margin: 0.5em 0; }
.ss-submission dt { font-weight: 600; }
.ss-submission dd { margin: 0; min-width: 0; }
@media (max-width: 640px) {  /* a phone: each name above its value, which gets the whole width */
  .ss-submission dl { grid-template-columns: minmax(0, 1fr); gap: 0; }
  .ss-submission dd { margin-bottom: 0.45em; }
}
.ss-submission .ss-withdrawn { border-left: 4px solid #c62828; padding-left: 0.6em; }
/* a table wider than the page scrolls sideways (it is its own scroll box) instead of being cut off */
.ss-analyses table { border-collapse: collapse; margin: 0.3em 0 1em; display: block; width: max-content; max-width: 100%;
  overflow-x: auto; }
.ss-analyses th, .ss-analyses td { padding: 2px 8px; border-bottom: 1px solid var(--border-color-primary); text-align: left; }
.ss-analyses td { white-space: nowrap; }  /* a value and its CI on one line: the table scrolls rather than wraps */
.ss-analyses td.ss-num { text-align: right; font-variant-numeric: tabular-nums; }
"""
GROUPING_TITLES = {
    "duration": "By duration quartile of the judged target clip (paper Fig. 6)",
    "source": "By source corpus",
    "vc_model": "By voice-conversion model (S2 and S3)",
    "scenario": "By scenario (S2: gender switch, S3: similar speaker)",
}
TASK_TITLES = {"detection": "Detection accuracy", "localization": "Localization F1"}


def parse_id(text: object) -> str:
    """The submission id in ``text`` in lower case, as the store writes it (surrounding spaces
    ignored, any case accepted); ``ValueError`` with one message when it is empty or not shaped like
    an id (nothing of ``text`` is echoed: it may be anything).

    >>> parse_id(" main-0123456789ABCDEF ")
    'main-0123456789abcdef'
    >>> parse_id("../x")
    Traceback (most recent call last):
    ...
    ValueError: The submission id is not an id: an id is a variant (main, 4vc or 10turn), a dash and 16 hexadecimal digits, e.g. main-0123456789abcdef.
    """
    value = "" if text is None else str(text)
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"The submission id is longer than {MAX_ID_CHARS} characters; an id looks like {ID_EXAMPLE}.")
    value = value.strip()
    if not value:
        raise ValueError(
            f"Enter a submission id (e.g. {ID_EXAMPLE}): it is shown after submitting and in the "
            "leaderboard's \u201cDate, link, submission\u201d columns."
        )
    if not ID_PATTERN.fullmatch(value):
        variants = ", ".join(ssd.VARIANTS[:-1]) + f" or {ssd.VARIANTS[-1]}"
        raise ValueError(
            f"The submission id is not an id: an id is a variant ({variants}), a dash and 16 "
            f"hexadecimal digits, e.g. {ID_EXAMPLE}."
        )
    return value.lower()


def _utc(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _message_html(text: str) -> str:
    return f'<div class="ss-status ss-bad"><p>{html.escape(text)}</p></div>'


def _link_html(url: str) -> str:
    if not url:
        return "none"
    if safe_link(url):
        escaped = html.escape(url, quote=True)
        return f'<a href="{escaped}" target="_blank" rel="noopener noreferrer nofollow ugc">{escaped}</a>'
    return f"{html.escape(url)} (not linked: not a plain http(s) address)"


def details_html(record: StoredResult, note: str = "", history: list[StoredResult] = ()) -> str:
    """The page's head: the model's metadata, verified mark, withdrawal notice, ``note`` (what the
    policy showed), lines and hash, and the ``history`` of its leaderboard row (the submissions of
    one submitter, model name and setting, oldest first: the newest is the row); every submitted
    string escaped."""
    m = record.metadata
    esc = html.escape
    title = f"<h3>{esc(m.model_name)}"
    if record.verified:
        title += f' <span class="ss-verified" title="{VERIFIED_NOTE}">verified</span>'  # a badge (leaderboard CSS)
    parts = ['<div class="ss-submission">', title + "</h3>"]
    if record.withdrawal is not None:
        reason = (
            f"Reason: \u201c{esc(record.withdrawal.reason)}\u201d."
            if record.withdrawal.reason
            else "No reason was given."
        )
        parts.append(
            f'<p class="ss-withdrawn"><b>Withdrawn</b> by its submitter on {_utc(record.withdrawal.at)}; '
            f"it is no longer on the leaderboard. {reason}</p>"
        )
    fields = {
        "Submission id": f'<code>{esc(record.id)}</code> (<a href="?{QUERY_PARAMETER}={esc(record.id)}">link to this page</a>)',
        "Variant": esc(record.variant),
        "Organisation": esc(m.organisation) or "none given",
        "Model type": esc(m.model_type),
        "Weights": esc(m.access),
        "Model date": esc(m.model_date) or "none given",
        "Setting": esc(m.setting) or "not tagged",
        "Link": _link_html(m.link),
        "Submitted": _utc(record.created_at),
        "Lines": f"{record.num_lines:,}",
        "SHA-256 of the canonical predictions": f"<code>{esc(record.sha256)}</code>",
    }
    if note:
        parts.append(f'<p class="ss-policy">{esc(note)}</p>')
    if len(history) > 1:
        items = "".join(
            f'<li><a href="?{QUERY_PARAMETER}={esc(r.id)}">{esc(r.id)}</a> {_utc(r.created_at)}'
            + (" (this page)" if r.id == record.id else "")
            + (" (withdrawn)" if r.withdrawal else "")
            + "</li>"
            for r in history
        )
        fields["Submissions of this row"] = f'<ol class="ss-history">{items}</ol>'
    parts.append("<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in fields.items()) + "</dl></div>")
    return "".join(parts)


def _value_html(entry: dict | None) -> str:
    if entry is None:
        return "n/a"
    ci = entry["ci"]
    return f"{entry['value']:.1f}" + (f" ({ci[0]:.1f} to {ci[1]:.1f})" if ci else "")


def analyses_html(analyses: dict, deltas: list[dict]) -> str:
    """The analyses as tables (value and 95% CI per cell, counts per scenario), then the settings'
    deltas against ``main`` when there are any; every cell name escaped."""
    esc = html.escape
    parts = [
        '<div class="ss-analyses">',
        f"<p>Quartiles by the {esc(analyses['duration_basis'])}. Values in %, "
        "95% CI in brackets; a cell mixes scenarios in the proportions its counts show.</p>",
    ]
    head = (
        "<tr><th></th><th>Instances (S1/S2/S3)</th>" + "".join(f"<th>{t}</th>" for t in TASK_TITLES.values()) + "</tr>"
    )
    for grouping in GROUPINGS:
        rows = "".join(
            f'<tr><td>{esc(cell["cell"])}</td><td class="ss-num">{cell["instances"]} '
            f"({'/'.join(str(n) for n in cell['scenarios'].values())})</td>"
            + "".join(f'<td class="ss-num">{_value_html(cell[task])}</td>' for task in TASK_TITLES)
            + "</tr>"
            for cell in analyses["groups"][grouping]
        )
        parts.append(f"<h4>{GROUPING_TITLES[grouping]}</h4><table>{head}{rows}</table>")
    if deltas:
        parts.append(
            "<h4>Settings of this model (paper Tables 3 and 8): value (minus <code>main</code>)</h4><table><tr><th>Setting</th>"
            + "".join(f"<th>{esc(column_label(k))}</th>" for k in DELTA_KEYS)
            + "</tr>"
        )
        for entry in deltas:
            cells = "".join(
                f'<td class="ss-num">{_delta_html(entry["values"][k], entry["delta"][k])}</td>' for k in DELTA_KEYS
            )
            parts.append(f"<tr><td>{esc(entry['setting'])}</td>{cells}</tr>")
        parts.append("</table>")
    return "".join(parts) + "</div>"


def _delta_html(value: float | None, delta: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.1f}" + ("" if delta is None else f" ({delta:+.1f})")


def duration_chart(analyses: dict) -> alt.Chart:
    """Detection accuracy and localization F1 by duration quartile: bars with their 95% CIs."""
    points = [
        {
            "quartile": cell["cell"],
            "task": title,
            "value": cell[task]["value"],
            "low": cell[task]["ci"][0] if cell[task]["ci"] else None,
            "high": cell[task]["ci"][1] if cell[task]["ci"] else None,
        }
        for cell in analyses["groups"]["duration"]
        for task, title in TASK_TITLES.items()
        if cell[task] is not None
    ]
    frame = pd.DataFrame(points, columns=["quartile", "task", "value", "low", "high"])
    x = alt.X(
        "quartile:N", title="duration quartile of the judged target clip", sort=None, axis=alt.Axis(labelAngle=0)
    )
    offset = alt.XOffset("task:N")
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x,
            offset,
            y=alt.Y("value:Q", title="%", scale=alt.Scale(domain=[0, 100])),
            color=alt.Color("task:N", title=None),
            tooltip=[
                "quartile:N",
                "task:N",
                alt.Tooltip("value:Q", format=".1f"),
                alt.Tooltip("low:Q", format=".1f"),
                alt.Tooltip("high:Q", format=".1f"),
            ],
        )
    )
    errors = alt.Chart(frame).mark_rule(color="currentColor").encode(x, offset, y="low:Q", y2="high:Q")
    return (
        alt.layer(bars, errors)
        .properties(
            title="Accuracy by duration of the judged clip (paper Fig. 6)",
            width=420,
            height=220,
            background="transparent",
            usermeta={
                "embedOptions": {
                    "renderer": "svg",
                    "actions": {"export": True, "source": False, "compiled": False, "editor": False},
                }
            },
        )
        .configure_axis(labelColor="currentColor", titleColor="currentColor")
        .configure_legend(labelColor="currentColor", orient="bottom")
        .configure_title(color="currentColor", fontWeight="normal")
    )


@dataclass
class SubmissionPage:
    """The tab's handlers: the page of a submission, its withdrawal, the chooser's list."""

    submitter: Submitter
    download_dir: Path
    provenance: object = field(init=False, repr=False)  # variant -> ``Provenance`` (read once)

    def __post_init__(self) -> None:
        gold = None if self.submitter.gold_root == self.submitter.dataset else self.submitter.gold_root
        self.provenance = lru_cache(maxsize=None)(
            lambda variant: read_provenance(self.submitter.dataset, variant, gold=gold)
        )

    def show(self, text: object):
        """The page of the submission ``text`` names: details, breakdown, predictions download, the
        analyses and their chart. An odd or unknown id gives one message, and nothing is written."""
        try:
            record = self.submitter.store.get(parse_id(text))
        except ValueError as err:
            return self._nothing(str(err))
        except KeyError as err:
            return self._nothing(f"There is no submission with the id {err.args[0]}.")
        policy = self.submitter.policy
        history = [
            r
            for r in self.submitter.store.results(record.variant, include_withdrawn=True)
            if row_key(r) == row_key(record)
        ]
        if not policy.shows_details:  # a blind round: the breakdown it allows, no predictions, no analyses
            note = policy.status(record)
            return (
                details_html(record, note, history),
                self.submitter.breakdown(record),
                gr.DownloadButton(value=None, visible=False),
                f"<p>{html.escape(note)}</p>",
                None,
            )
        path = self.download_dir / f"{record.id}.jsonl"  # the store's id, checked by parse_id
        if not path.is_file():
            write_bytes_atomic(path, self.submitter.store.predictions(record.id), durable=True)
        download = gr.DownloadButton(
            f"Download the canonical predictions ({record.id}.jsonl)", value=str(path), visible=True
        )
        return (
            details_html(record, history=history),
            self.submitter.breakdown(record),
            download,
            *self.analyses(record),
        )

    def analyses(self, record: StoredResult) -> tuple[str, alt.Chart | None]:
        """The analyses of a stored submission (recomputed from its predictions) and their chart;
        one message instead where its predictions or the gold of its variant cannot be read."""
        try:
            gold = self.submitter.gold(record.variant)
            sub = parse_submission(self.submitter.store.predictions(record.id), gold)
            provenance: Provenance = self.provenance(record.variant)
        except (SubmissionError, OSError, ValueError) as err:
            return f"<p>No analyses for this submission: {html.escape(str(err).splitlines()[0])}</p>", None
        analyses = analyse(sub, gold, provenance, n_bootstrap=self.submitter.n_bootstrap)
        return analyses_html(analyses, setting_deltas(self.settings_of(record))), duration_chart(analyses)

    def settings_of(self, record: StoredResult) -> dict[str, dict]:
        """The leaderboard rows of the tagged settings of ``record``'s model (same submitter, model
        name and variant; the newest per setting), when it has at least two."""
        rows = {}
        for other in self.submitter.store.results(record.variant):
            m = other.metadata
            if other.submitter == record.submitter and m.model_name == record.metadata.model_name and m.setting:
                rows[m.setting] = self.submitter.policy.row(other)
        return rows if len(rows) > 1 else {}

    @staticmethod
    def _nothing(message: str):
        return (
            _message_html(message),
            pd.DataFrame(columns=BREAKDOWN_COLUMNS),
            gr.DownloadButton(value=None, visible=False),
            "",
            None,
        )

    def open_link(self, request: gr.Request):
        """On page load: with ``?submission=<id>``, the Submission tab showing it; without it, or
        with an empty value, nothing. Outputs: the ``gr.Tabs``, then ``SubmissionTab.chooser`` and
        ``SubmissionTab.outputs``."""
        text = dict(request.query_params).get(QUERY_PARAMETER) or ""
        if not text.strip():
            return [gr.skip()] * 7
        try:
            chosen = parse_id(text)
        except ValueError:
            chosen = None
        return [gr.Tabs(selected=TAB_ID), gr.Dropdown(value=chosen, allow_custom_value=True), *self.show(text)]

    def choices(self):
        """The chooser's list: every submission on the leaderboard, newest first."""
        results = reversed(self.submitter.store.results())
        return gr.Dropdown(
            choices=[(f"{r.metadata.model_name} \u00b7 {r.variant} \u00b7 {r.id}", r.id) for r in results]
        )

    def withdraw(
        self, text: object, reason: str, confirmed: bool, request: gr.Request, profile: gr.OAuthProfile | None = None
    ):
        """Withdraw the shown submission as the requesting identity; returns the status and the
        page again (marked withdrawn when it was)."""
        page = [
            gr.skip()
        ] * 5  # the page (``SubmissionTab.outputs``: details, breakdown, download, analyses, chart) as it is
        try:
            rid = parse_id(text)
        except ValueError as err:
            return [_message_html(str(err)), *page]
        if not confirmed:
            return [
                _message_html("Tick the box to confirm the withdrawal (it cannot be undone); nothing was withdrawn."),
                *page,
            ]
        result = self.submitter.withdraw(rid, reason, profile, address=client_address(request))
        return [result_html(result), *self.show(rid)]


@dataclass
class SubmissionTab:
    """What the app wires: ``page.open_link`` on page load (outputs: the ``gr.Tabs``, ``chooser``,
    ``outputs``), ``page.choices`` when the tab is selected, a leaderboard refresh after ``withdrawn``."""

    page: SubmissionPage
    chooser: gr.Dropdown
    outputs: list[gr.components.Component]
    withdrawn: gr.events.Dependency


def build_submission_tab(submitter: Submitter, download_dir: Path) -> SubmissionTab:
    """The Submission tab's components and events (api names ``submission`` and ``withdraw``);
    ``download_dir``'s files are served as they are (static paths), not copied into Gradio's cache."""
    gr.set_static_paths([download_dir])
    gr.Markdown(
        f"One submission: its metadata, the SHA-256 of its canonical predictions (one compact JSON line per "
        f"instance, sorted), its full per-task breakdown with 95% CIs, those predictions to download, and "
        f"analyses: detection accuracy and localization F1 by the judged clip's duration quartile, source corpus, "
        f"VC model and scenario, and, for a model tagged with several settings, each setting against `main`. "
        f"Link to a submission with `?{QUERY_PARAMETER}=<id>`."
    )
    with gr.Row():
        chooser = gr.Dropdown(
            [],
            value=None,
            label="Submission (choose, or paste an id)",
            allow_custom_value=True,
            filterable=True,
            scale=4,
            elem_id="ss-submission-id",
        )
        show_button = gr.Button("Show", scale=1, elem_id="ss-submission-show")
    details = gr.HTML(elem_id="ss-submission-details")
    download = gr.DownloadButton(
        "Download the canonical predictions", visible=False, size="sm", elem_id="ss-submission-download"
    )
    breakdown = gr.Dataframe(
        value=pd.DataFrame(columns=BREAKDOWN_COLUMNS),
        datatype="str",
        interactive=False,
        label="Per-task breakdown",
        elem_id="ss-submission-breakdown",
        max_height=700,
    )
    with gr.Accordion("Analyses: by clip duration, source corpus, VC model, scenario and setting", open=True):
        chart = gr.Plot(show_label=False, elem_id="ss-submission-chart", elem_classes="ss-bias")
        analyses = gr.HTML(elem_id="ss-submission-analyses")
    with gr.Accordion("Withdraw this submission", open=False):
        gr.Markdown(
            "Only the identity that submitted it can withdraw a submission (the Hugging Face user on Spaces, "
            "elsewhere the network address it came from). It leaves the leaderboard; its record, and who "
            "withdrew it, when and why, stay in the store, and the same predictions cannot be submitted again."
        )
        if submitter.config.on_spaces:
            gr.LoginButton()
        reason = gr.Textbox(label="Reason (optional, shown on the page)", max_length=MAX_LINK_CHARS, max_lines=1)
        confirmed = gr.Checkbox(label="I want to withdraw this submission; this cannot be undone")
        withdraw_button = gr.Button("Withdraw", variant="stop", elem_id="ss-withdraw")
        status = gr.HTML(elem_id="ss-withdraw-status")

    page = SubmissionPage(submitter, download_dir)
    outputs = [details, breakdown, download, analyses, chart]
    show_button.click(page.show, chooser, outputs, api_name="submission")
    chooser.input(page.show, chooser, outputs, api_name=False)
    withdrawn = withdraw_button.click(
        page.withdraw, [chooser, reason, confirmed], [status, *outputs], api_name="withdraw"
    )
    return SubmissionTab(page, chooser, outputs, withdrawn)
