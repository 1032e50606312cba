"""The Submit tab: metadata form + predictions JSONL -> validated -> scored -> stored.

``Submitter.submit`` is the whole path, independent of Gradio so it can be tested directly; the
tab's handler only adapts its result for display. Everything a submitter provides is untrusted:
form fields are length-limited and checked, the file is size- and line-capped and never used as a
path, every string shown back is HTML-escaped, and an unexpected failure shows a reference code
instead of a stack trace (the trace goes to the server log). The store receives the canonical form
of the predictions, so the same answers however encoded are one submission.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import html
import json
import logging
import math
import os
import re
import threading
import time
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import gradio as gr
import pandas as pd

import speakersleuth_dataset as ssd
from metrics.analysis import SETTINGS
from metrics.score import leaderboard_row
from metrics.submission import Gold, SubmissionError, load_gold, parse_submission
from space.config import SpaceConfig
from space.disclosure import RELEASED, Disclosure, policy_for, released_task
from space.leaderboard_table import column_label
from space.names import name_conflicts
from space.store import Metadata, RateLimited, Refused, ResultsStore, StoredResult, StoreFull
from space.text import encodable
from space.uploads import SubmissionFile

logger = logging.getLogger(__name__)

MODEL_TYPES = ("LALM", "embedding", "other")
ACCESS = ("open", "proprietary")
MAX_NAME_CHARS = 100
MAX_LINK_CHARS = 300
MAX_ERRORS_SHOWN = 200
N_BOOTSTRAP = 1000
BREAKDOWN_COLUMNS = ["task", "metric", "value", "95% CI"]
THIS_MACHINE = "127.0.0.1"
NAME_REFUSED = "The model name or organisation cannot be used; nothing was scored."


class FormError(ValueError):
    """Metadata that cannot be accepted; ``errors`` names every field at fault."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


def _clean_text(value: Any, field_name: str, max_chars: int, errors: list[str], *, required: bool = False) -> str:
    text = "" if value is None else str(value).strip()
    if required and not text:
        errors.append(f"{field_name} is required")
    if len(text) > max_chars:
        errors.append(f"{field_name} is longer than {max_chars} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cf") and not _joins_emoji(text, i) for i, ch in enumerate(text)):
        errors.append(f"{field_name} contains control or invisible formatting characters")
    if any(unicodedata.category(ch) == "Cs" for ch in text):
        errors.append(f"{field_name} contains an unpaired surrogate (e.g. a lone \\ud800 escape), which is not text")
    return text


def _joins_emoji(text: str, i: int) -> bool:
    """Whether ``text[i]`` is the zero-width joiner of an emoji sequence (e.g. 👩‍💻, 🏳️‍🌈, 👨🏽‍🚀): a
    pictograph, optionally with its presentation selector or skin tone, before it and one after.

    >>> _joins_emoji("👩\u200d💻", 1), _joins_emoji("a\u200db", 1)
    (True, False)
    """
    if text[i] != "\u200d" or i + 1 >= len(text) or unicodedata.category(text[i + 1]) != "So":
        return False
    before = text[:i].rstrip("\ufe0f\U0001f3fb\U0001f3fc\U0001f3fd\U0001f3fe\U0001f3ff")
    return bool(before) and unicodedata.category(before[-1]) == "So"


def clean_metadata(
    model_name: Any,
    organisation: Any = "",
    model_type: Any = "other",
    access: Any = "open",
    link: Any = "",
    model_date: Any = "",
    setting: Any = "",
) -> Metadata:
    """Validate the form; returns ``Metadata`` or raises ``FormError`` listing every problem.

    >>> clean_metadata(" m ", "org", "LALM", "open", "https://example.org/m", "2025-01").model_name
    'm'
    >>> clean_metadata("", link="javascript:alert(1)")
    Traceback (most recent call last):
    ...
    space.submit.FormError: model name is required; link must be an http(s) URL without spaces, quotes, brackets or parentheses
    """
    errors: list[str] = []
    name = _clean_text(model_name, "model name", MAX_NAME_CHARS, errors, required=True)
    org = _clean_text(organisation, "organisation", MAX_NAME_CHARS, errors)
    url = _clean_text(link, "link", MAX_LINK_CHARS, errors)
    date = _clean_text(model_date, "model date", 10, errors)
    if model_type not in MODEL_TYPES:
        errors.append(f"model type must be one of {', '.join(MODEL_TYPES)}")
    if access not in ACCESS:
        errors.append(f"access must be one of {', '.join(ACCESS)}")
    if url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc or re.search(r"[\s<>\"'`\\()\[\]]", url):
            errors.append("link must be an http(s) URL without spaces, quotes, brackets or parentheses")
    if date and not _is_date(date):
        errors.append("model date must be YYYY-MM-DD or YYYY-MM")
    setting = "" if setting is None else setting
    if setting not in ("", *SETTINGS):
        errors.append(f"setting must be one of {', '.join(SETTINGS)}, or empty (not tagged)")
    if errors:
        raise FormError(errors)
    return Metadata(
        model_name=name,
        organisation=org,
        model_type=model_type,
        access=access,
        link=url,
        model_date=date,
        setting=setting,
    )


def _is_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text if len(text) == 10 else f"{text}-01")
    except ValueError:
        return False
    return bool(re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", text))


@dataclass
class SubmitResult:
    """The outcome of one submission attempt, as plain data.

    ``status`` is one of ``accepted``, ``duplicate``, ``invalid`` (form or file; see ``errors``),
    ``rate_limited``, ``full`` (the store's size budget is spent), ``signin``, ``closed`` (a blind
    round that takes no more submissions), ``withdrawn`` (by
    ``Submitter.withdraw``) or ``error`` (unexpected; ``message`` carries a reference code).
    """

    status: str
    message: str
    errors: list[str] = field(default_factory=list)
    record: StoredResult | None = None

    def __post_init__(self) -> None:  # errors quote the upload, which may hold what UTF-8 cannot send
        self.message = encodable(self.message)
        self.errors = [encodable(e) for e in self.errors]


def gold_folder(config: SpaceConfig, dataset: Path) -> Path | None:
    """Where the test gold of ``dataset`` is read from: the configured gold folder, or None for the
    dataset's own; a blind dataset without a configured gold folder is refused."""
    gold = config.gold_folder()
    if gold is None and ssd.is_blind(dataset):
        raise ValueError(
            f"{dataset} is a blind copy without test gold: give its private gold folder "
            "(--gold <folder or Hub id>, or SPEAKERSLEUTH_GOLD)"
        )
    return gold


class Submitter:
    """Validates, rate-limits, scores and stores submissions for one dataset folder."""

    def __init__(
        self,
        config: SpaceConfig,
        store: ResultsStore,
        dataset: str | os.PathLike,
        *,
        variants: list[str],
        n_bootstrap: int = N_BOOTSTRAP,
        clock: Callable[[], float] = time.time,
        gold: str | os.PathLike | None = None,
        policy: Disclosure | None = None,
    ) -> None:
        """``gold``: the private gold folder of a blind ``dataset`` (default: the dataset's own);
        ``policy``: what is shown of the scores (default: ``space.disclosure.policy_for`` the dataset)."""
        self.config = config
        self.store = store
        self.dataset = Path(dataset)
        self.gold_root = Path(gold) if gold is not None else self.dataset
        self.variants = list(variants)
        self.n_bootstrap = n_bootstrap
        self.policy = policy or policy_for(config, self.dataset, n_bootstrap)
        self.clock = clock
        self.gold = lru_cache(maxsize=None)(lambda variant: load_gold(self.gold_root, variant=variant))
        self._turns: dict[str, threading.Lock] = {}  # one per identity: its files are scored one at a time
        self._turns_guard = threading.Lock()

    def turn(self, user: str) -> threading.Lock:
        """The lock an identity's submission holds from reading its history to storing its record, so
        that files sent at once are scored one after another against the updated history (the Ladder
        releases one value at a time per identity)."""
        with self._turns_guard:
            return self._turns.setdefault(user, threading.Lock())

    def identity(self, profile: gr.OAuthProfile | None, address: str | None = None) -> str | None:
        """Who the rate limit counts against and who may withdraw: the OAuth username; when not
        running on Spaces, the client's network address (``gr.Request.client.host``). ``None``
        (cannot submit) on Spaces without login, or off Spaces without an address."""
        if profile is not None:
            return f"hf:{profile.username}"
        if self.config.on_spaces or not address:
            return None
        return f"ip:{address}"

    def submit(
        self,
        data: bytes | str | os.PathLike | None,
        variant: str,
        form: dict[str, Any],
        profile: gr.OAuthProfile | None = None,
        *,
        address: str | None = THIS_MACHINE,
        as_user: str | None = None,
        rate_limited: bool = True,
    ) -> SubmitResult:
        """The whole path for one upload; never raises. ``data`` is the file's bytes or the path
        of Gradio's temporary copy; ``address`` the client's network address (a call from this
        process comes from this machine). ``as_user`` and ``rate_limited=False`` are for trusted
        local callers (seeding) only."""
        ref = uuid.uuid4().hex[:8]
        try:
            return self._submit(data, variant, form, as_user or self.identity(profile, address), rate_limited)
        except Exception:
            logger.exception("submission %s failed unexpectedly", ref)
            return SubmitResult(
                "error", f"Internal error while handling the submission (reference {ref}); nothing was stored."
            )

    def withdraw(
        self,
        result_id: str,
        reason: str = "",
        profile: gr.OAuthProfile | None = None,
        *,
        address: str | None = THIS_MACHINE,
    ) -> SubmitResult:
        """Withdraw one's own submission (the identity that submitted it); never raises. The row
        leaves the leaderboard; the store keeps the record and who withdrew it, when and why."""
        user = self.identity(profile, address)
        if user is None:
            return SubmitResult("signin", _SIGNIN if self.config.on_spaces else _NO_ADDRESS)
        errors: list[str] = []
        result_id = _clean_text(result_id, "submission id", 64, errors, required=True)
        reason = _clean_text(reason, "reason", MAX_LINK_CHARS, errors)
        if errors:
            return SubmitResult("invalid", "Nothing was withdrawn.", errors)
        try:
            record = self.store.withdraw(result_id, user, reason, now=self.clock())
        except KeyError:
            return SubmitResult(
                "invalid", "Nothing was withdrawn.", [f"there is no submission with the id {result_id!r}"]
            )
        except (PermissionError, ValueError) as err:
            return SubmitResult("invalid", "Nothing was withdrawn.", [str(err)])
        except Exception:
            ref = uuid.uuid4().hex[:8]
            logger.exception("withdrawal %s failed unexpectedly", ref)
            return SubmitResult("error", f"Internal error while withdrawing (reference {ref}); nothing was changed.")
        return SubmitResult(
            "withdrawn",
            f"Withdrawn: \u201c{record.metadata.model_name}\u201d is off the {record.variant} leaderboard. "
            "The store keeps the record of it and of this withdrawal.",
            record=record,
        )

    def _submit(self, data, variant, form, user, rate_limited) -> SubmitResult:
        if user is None:
            return SubmitResult("signin", _SIGNIN if self.config.on_spaces else _NO_ADDRESS)
        errors = []
        try:
            metadata = clean_metadata(**form)
        except FormError as err:
            errors += err.errors
        if variant not in self.variants:
            errors.append(f"variant must be one of {', '.join(self.variants)}")
        if data is None:
            errors.append("choose a predictions file (.jsonl) to upload")
        if errors:
            return SubmitResult("invalid", "The form is incomplete; nothing was scored.", errors)
        if self.policy.closed:
            return SubmitResult("closed", _CLOSED)

        def admit(stored: list[StoredResult]) -> list[str]:  # again under the store's lock: two identities racing
            return name_conflicts(metadata, user, stored)  # for one new name cannot both get it

        if taken := admit(self.store.results(include_withdrawn=True)):
            return SubmitResult("invalid", NAME_REFUSED, taken)
        if not isinstance(data, (bytes, bytearray)):
            data = self._read_upload(data)
            if isinstance(data, SubmitResult):
                return data
        gold = self.gold(variant)
        try:
            sub = parse_submission(bytes(data), gold, max_bytes=self.config.max_bytes, max_lines=self.config.max_lines)
        except SubmissionError as err:
            return SubmitResult("invalid", "The file was refused; nothing was stored.", _capped(err.errors))
        if short := self.policy.missing(sub, gold):
            return SubmitResult("invalid", "The file was refused; nothing was stored.", [short])
        canonical = sub.canonical()
        sha256 = hashlib.sha256(canonical).hexdigest()
        existing = self.store.find(variant, sha256)
        if existing is not None:
            return _duplicate(existing)
        budget = self.config.store_budget_bytes
        if self.store.stored_bytes() + len(canonical) > budget:
            return _store_full()
        limit = self.rate if rate_limited else None  # quota is charged by store.add, for a stored submission only
        if limit is not None and self.store.retry_at(user, *limit, now := self.clock()) > now:
            return self._rate_limited(user, now)
        with self.turn(user):
            return self._store(sub, (canonical, sha256), variant, metadata, user, limit, admit, gold)

    def _store(self, sub, stored, variant, metadata, user, limit, admit, gold) -> SubmitResult:
        """Score a parsed submission against ``user``'s history and store it (its ``stored`` canonical
        predictions and their SHA-256) under ``turn(user)``."""
        canonical, sha256 = stored
        history = self.policy.history(
            self.store.results(variant, include_withdrawn=True, submitter=user), user, metadata.model_name
        )
        scores = self.policy.score(sub, gold, history, user)
        try:
            record, created = self.store.add(
                variant=variant,
                sha256=sha256,
                predictions=canonical,
                scores=scores,
                metadata=metadata,
                submitter=user,
                num_lines=sub.num_lines,
                now=self.clock(),
                budget_bytes=self.config.store_budget_bytes,
                admit=admit,
                rate_limit=limit,
            )
        except StoreFull:
            return _store_full()
        except RateLimited:  # another submission of this identity was stored meanwhile
            return self._rate_limited(user, self.clock())
        except Refused as refused:
            return SubmitResult("invalid", NAME_REFUSED, refused.errors)
        if not created:
            return _duplicate(record)
        shown = self.policy.status(record) if self.policy.blind else "it is on the leaderboard now."
        return SubmitResult("accepted", f"Accepted and scored on the {variant} variant; {shown}", record=record)

    def _read_upload(self, path: str | os.PathLike) -> bytes | SubmitResult:
        """The bytes of Gradio's copy of an upload, or why it cannot be read."""
        if not os.path.isfile(path):
            return SubmitResult("invalid", "The uploaded file is no longer on the server; upload it again.")
        size = os.path.getsize(path)
        if size > self.config.max_bytes:
            return SubmitResult(
                "invalid",
                "The file is too large.",
                [f"file has {size:,} bytes; the limit is {self.config.max_bytes:,}"],
            )
        return Path(path).read_bytes()

    @property
    def rate(self) -> tuple[int, int]:
        """The rate limit: accepted submissions per window (seconds) per identity; a blind round's is its budget."""
        if self.policy.blind:
            return self.config.blind_rate_limit, self.config.blind_rate_window_s
        return self.config.rate_limit, self.config.rate_window_s

    def breakdown(self, record: StoredResult) -> pd.DataFrame:
        """What a page shows of ``record``'s scores: the full breakdown where the policy allows it,
        else only the released values."""
        scores = self.policy.breakdown_scores(record)
        if scores is not None:
            return breakdown_frame(scores)
        if self.policy.closed:  # only each identity's selected submission shows its private levels
            newest = self.store.results(record.variant, submitter=record.submitter)
            return released_frame(record, private=True, selected=bool(newest) and newest[-1].id == record.id)
        return released_frame(record)

    def _rate_limited(self, user: str, now: float) -> SubmitResult:
        limit, window = self.rate
        retry = self.store.retry_at(user, limit, window, now)
        when = _when(retry)
        return SubmitResult(
            "rate_limited",
            f"Rate limit reached: at most {limit} accepted submissions per {_duration(window)} per user (invalid and "
            f"duplicate files do not count). Your next submission is possible from {when}, in {_wait(retry - now)}.",
        )


def _wait(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return f"{minutes} minute{'s' * (minutes != 1)}" if minutes < 120 else f"{minutes / 60:.1f} hours"


def client_address(request: gr.Request | None) -> str | None:
    """The network address a request came from (uvicorn takes it from X-Forwarded-For only when
    the direct peer is a trusted proxy, by default 127.0.0.1)."""
    client = getattr(request, "client", None)
    return getattr(client, "host", None) or None


def discard_upload(path: str | os.PathLike | None) -> None:
    """Delete Gradio's temporary copy of an upload, and its folder once empty: after scoring, a
    refusal or a duplicate it is never read again, and uploads left behind would fill the disk."""
    if path is None:
        return
    path = Path(path)
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # the folder Gradio made for it; kept if anything else is in it
        path.parent.rmdir()


def example_file(gold: Gold) -> bytes:
    """A valid submission that answers every instance of ``gold`` with a constant (consistent,
    no turn, the first candidate, candidates in label order): the format, not a result."""
    lines = []
    for task, rows in gold.tasks.items():
        for rid, row in rows.items():
            line = {"task": task, "id": rid}
            if task == "detection":
                line["prediction"] = "consistent"
            elif task == "localization":
                line["prediction"] = []
            else:
                labels = list(row["candidate_labels"])
                line.update(prediction=labels[0], ranking=labels)
            lines.append(json.dumps(line))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _capped(errors: list[str]) -> list[str]:
    if len(errors) <= MAX_ERRORS_SHOWN:
        return list(errors)
    return errors[:MAX_ERRORS_SHOWN] + [f"... and {len(errors) - MAX_ERRORS_SHOWN} more"]


_SIGNIN = "Sign in with Hugging Face to submit."
_CLOSED = "This blind round is closed: the final ranking is on the leaderboard, and no submission is taken any more."
_NO_ADDRESS = "The server cannot tell who sent this request (no client address); nothing was done."


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _duplicate(record: StoredResult) -> SubmitResult:
    said = (
        f"These predictions (the same answers, however the file is written) were already submitted on the "
        f"{record.variant} variant as \u201c{record.metadata.model_name}\u201d on {_when(record.created_at)}"
    )
    if record.withdrawal is not None:
        return SubmitResult(
            "duplicate",
            f"{said} and withdrawn on {_when(record.withdrawal.at)}; withdrawn predictions cannot be "
            "submitted again. Nothing was stored.",
        )
    return SubmitResult("duplicate", f"{said}; nothing new was stored. Its scores:", record=record)


def _store_full() -> SubmitResult:
    logger.warning("the results store has reached its size budget; submissions are refused")
    return SubmitResult(
        "full",
        "The leaderboard's store is full (its size budget is spent), so no new submission can be stored now; "
        "nothing was stored. Please tell the maintainers.",
    )


def _duration(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return unit if n == 1 else f"{n} {unit}s"
    return f"{seconds} seconds"


# ------------------------------------------------------------------------------------- display


def _task_of(key: str) -> str:
    if key.startswith("det_"):
        return "detection"
    if key.startswith("loc_"):
        return "localization"
    return "discrimination"


def breakdown_frame(scores: dict[str, Any]) -> pd.DataFrame:
    """Every metric of a scored submission as rows: task, metric, value, 95% CI (percent).
    Metrics of a task the file did not answer read "n/a"; per-source accuracies of source
    datasets this build does not have are left out."""
    row = leaderboard_row(scores)
    records = []
    for key, value in row.items():
        if key.endswith("_ci") or (
            key.startswith("disc_acc_") and key != "disc_acc_avg" and value is None and scores.get("discrimination")
        ):
            continue
        ci = row.get(f"{key}_ci")
        records.append(
            {
                "task": _task_of(key),
                "metric": column_label(key),
                "value": "n/a" if value is None else f"{value:.1f}",
                "95% CI": f"{ci[0]:.1f} to {ci[1]:.1f}" if ci else "",
            }
        )
    return pd.DataFrame.from_records(records, columns=BREAKDOWN_COLUMNS)


def released_frame(record: StoredResult, *, private: bool = False, selected: bool = True) -> pd.DataFrame:
    """A blind round's breakdown of ``record``: each released metric of the tasks it answers, with
    its level on the public part ("not released" when the Ladder held it back), or with
    ``private`` (a closed round) its level on the private part when it is its identity's
    ``selected`` submission ("not selected" otherwise) (``space.disclosure``)."""
    part = "private" if private else "public"
    values = record.scores.get(f"{part}_released" if private else "released", {})
    steps = record.scores.get("private_margin" if private else "margin", {})
    records = []
    for key in RELEASED:
        if released_task(key) not in record.scores.get("tasks", []):
            continue
        value = "not selected" if not selected else f"{values[key]:.1f}" if key in values else "not released"
        records.append(
            {
                "task": released_task(key),
                "metric": f"{column_label(key)} ({part} part)",
                "value": value,
                "95% CI": f"steps of {steps[key]:.1f}" if key in steps else "",
            }
        )
    return pd.DataFrame.from_records(records, columns=BREAKDOWN_COLUMNS)


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


def build_submit_tab(submitter: Submitter):
    """The Submit tab's components and its submit event (api name ``submit``); returns the
    event so the app can chain a leaderboard refresh."""
    _introduction(submitter)
    inputs = _form(submitter)
    upload = inputs[0]  # cleared once submitted
    button = gr.Button("Submit", variant="primary")
    status = gr.HTML(elem_id="ss-submit-status")
    breakdown = gr.Dataframe(
        value=pd.DataFrame(columns=BREAKDOWN_COLUMNS),
        datatype="str",
        interactive=False,
        label="Per-task breakdown",
        elem_id="ss-breakdown",
        max_height=700,
    )
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
        f"{_duration(submitter.rate[1])} per user. The file is validated and scored at once; "
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
            upload = SubmissionFile(
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
