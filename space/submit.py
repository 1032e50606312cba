"""The Submit tab: metadata form + predictions JSONL -> validated -> scored -> stored. The tab's
layout and its status box are here; the form's checks are in ``space.submission_form``, the
submission's path in ``space.submitter``.

``Submitter.submit`` is the whole path, independent of Gradio so it can be tested directly; the
tab's handler only adapts its result for display. Everything a submitter provides is untrusted:
form fields are length-limited and checked, the file is size- and line-capped and never used as a
path, every string shown back is HTML-escaped, and an unexpected failure shows a reference code
instead of a stack trace (the trace goes to the server log). The store receives the canonical form
of the predictions, so the same answers however encoded are one submission.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import gradio as gr
import pandas as pd

from speakersleuth.metrics.analysis import SETTINGS
from speakersleuth.space.submission_form import ACCESS, MAX_LINK_CHARS, MAX_NAME_CHARS, MODEL_TYPES
from speakersleuth.space.submitter import (
    BREAKDOWN_COLUMNS,
    SubmitResult,
    Submitter,
    client_address,
    discard_upload,
    duration_words,
)
from speakersleuth.space.uploads import FileUpload


def result_html(result: SubmitResult) -> str:
    """The status box: the message and every error, all escaped."""
    css = {"accepted": "ss-ok", "withdrawn": "ss-ok", "duplicate": "ss-info"}.get(result.status, "ss-bad")
    parts = [f'<div class="ss-status {css}"><p>{html.escape(result.message)}</p>']
    if result.errors:
        items = "".join(f"<li>{html.escape(e)}</li>" for e in result.errors)
        parts.append(f'<ul class="ss-errors">{items}</ul>')
    if result.record is not None:
        m = result.record.metadata
        parts.append(
            f"<p>Model: <b>{html.escape(m.model_name)}</b> ({html.escape(m.organisation or 'no organisation')})"
            f" &middot; submission id <code>{html.escape(result.record.id)}</code></p>"
        )
    parts.append("</div>")
    return "".join(parts)


SUBMIT_CSS = """
.ss-status { padding: 0.5em 1em; border-radius: 6px; border: 1px solid var(--border-color-primary); }
.ss-ok { border-color: #2e7d32; }
.ss-info { border-color: #1565c0; }
.ss-bad { border-color: #c62828; }
.ss-errors { font-family: var(--font-mono); font-size: 0.9em; max-height: 24em; overflow-y: auto; }
"""


def breakdown_table(elem_id: str) -> gr.Dataframe:
    """An empty per-task breakdown (``Submitter.breakdown``'s columns) that a handler fills."""
    return gr.Dataframe(
        value=pd.DataFrame(columns=BREAKDOWN_COLUMNS),
        datatype="str",
        interactive=False,
        label="Per-task breakdown",
        elem_id=elem_id,
        max_height=700,
    )


def build_submit_tab(submitter: Submitter):
    """The Submit tab's components and its submit event (api name ``submit``); returns the
    event so the app can chain a leaderboard refresh."""
    _introduction(submitter)
    inputs = _form(submitter)
    upload = inputs[0]  # cleared once submitted
    button = gr.Button("Submit", variant="primary")
    status = gr.HTML(elem_id="ss-submit-status")
    breakdown = breakdown_table("ss-breakdown")
    return button.click(
        _submit_handler(submitter),
        inputs,
        [status, breakdown, upload],
        api_name="submit",
        concurrency_limit=submitter.config.concurrency,
        concurrency_id="submit",
    )


def _introduction(submitter: Submitter) -> None:
    """What the tab says first (the limits of an upload) and, on Spaces, the login button."""
    config = submitter.config
    gr.Markdown(
        f"Upload one predictions JSONL file for one variant (format in the About tab). Limits: "
        # the size as Gradio's upload box words its refusal (1024-based, one decimal, "Mb"), and exact
        f"{config.max_bytes / 2**20:.1f} Mb ({config.max_bytes:,} bytes), {config.max_lines:,} lines, "
        f"{submitter.rate[0]} accepted submissions per "
        f"{duration_words(submitter.rate[1])} per user. The file is validated and scored at once; "
        f"an identical file submitted again is recognised."
    )
    if config.on_spaces:
        gr.LoginButton()
    else:
        gr.Markdown("Running outside Hugging Face Spaces: submissions count against your network address.")


def _form(submitter: Submitter) -> list:
    """The form's components; returns them in the order of the submit handler's arguments (the
    upload first)."""
    with gr.Row():
        with gr.Column():
            model_name = gr.Textbox(label="Model name (required)", max_length=MAX_NAME_CHARS, max_lines=1)
            organisation = gr.Textbox(label="Organisation", max_length=MAX_NAME_CHARS, max_lines=1)
            model_type = gr.Radio(list(MODEL_TYPES), value="LALM", label="Model type")
            access = gr.Radio(list(ACCESS), value="open", label="Weights")
        with gr.Column():
            link = gr.Textbox(
                label="Link (paper, model card or code; http(s))", max_length=MAX_LINK_CHARS, max_lines=1
            )
            model_date = gr.Textbox(label="Model date (YYYY-MM-DD or YYYY-MM)", max_length=10, max_lines=1)
            variant = gr.Dropdown(
                submitter.variants, value=submitter.variants[0] if submitter.variants else None, label="Variant"
            )
            setting = gr.Dropdown(
                [("not tagged", ""), *((s, s) for s in SETTINGS)],
                value="",
                elem_id="ss-setting",
                label="Setting (optional): tag runs of one model in several settings to compare them",
            )
            upload = FileUpload(
                label="Predictions (.jsonl)", file_types=[".jsonl"], type="filepath", elem_id="ss-upload"
            )
    return [upload, variant, model_name, organisation, model_type, access, link, model_date, setting]


def _submit_handler(submitter: Submitter) -> Callable:
    """The submit event's function: the upload submitted (then deleted), its status and breakdown shown."""

    def handle(
        file_path,
        variant_value,
        name,
        org,
        mtype,
        acc,
        url,
        date,
        setting_value="",
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ):
        form = {
            "model_name": name,
            "organisation": org,
            "model_type": mtype,
            "access": acc,
            "link": url,
            "model_date": date,
            "setting": setting_value,
        }
        try:
            result = submitter.submit(file_path, variant_value, form, profile, address=client_address(request))
        finally:
            discard_upload(file_path)
        frame = submitter.breakdown(result.record) if result.record else pd.DataFrame(columns=BREAKDOWN_COLUMNS)
        return result_html(result), frame, None  # the upload is gone from the server: clear its widget

    return handle
