"""A submission's whole path, independent of Gradio so it can be tested directly: ``Submitter``
validates, rate-limits, scores and stores it and returns a ``SubmitResult``; what a page shows of a
stored record's scores (``breakdown_frame``, ``released_frame``) and the request helpers the tabs
share (``client_address``, ``discard_upload``) are here too. ``space.submit`` describes the path."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.score import leaderboard_row
from speakersleuth.metrics.submission import Gold, SubmissionError, load_gold, parse_submission
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.disclosure import RELEASED, Disclosure, headline, policy_for, released_task
from speakersleuth.space.leaderboard_table import column_label
from speakersleuth.space.names import name_conflicts
from speakersleuth.space.store import RateLimited, Refused, ResultsStore, StoredResult, StoreFull
from speakersleuth.space.submission_form import MAX_LINK_CHARS, FormError, clean_metadata, clean_text
from speakersleuth.space.text import encodable

logger = logging.getLogger(__name__)

MAX_ERRORS_SHOWN = 200
N_BOOTSTRAP = 1000
BREAKDOWN_COLUMNS = ["task", "metric", "value", "95% CI"]
THIS_MACHINE = "127.0.0.1"
NAME_REFUSED = "The model name or organisation cannot be used; nothing was scored."


@dataclass
class SubmitResult:
    """The outcome of one submission attempt, as plain data.

    ``status`` is one of ``accepted``, ``duplicate``, ``invalid`` (form or file; see ``errors``),
    ``rate_limited``, ``full`` (the store's size budget is spent), ``signin``, ``closed`` (a blind
    round that takes no more submissions or withdrawals), ``withdrawn`` (by
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
        leaves the leaderboard; the store keeps the record and who withdrew it, when and why. A
        closed round takes no withdrawal: its selection froze at the close."""
        user = self.identity(profile, address)
        if user is None:
            return SubmitResult("signin", _SIGNIN if self.config.on_spaces else _NO_ADDRESS)
        if self.policy.closed:
            return SubmitResult("closed", _CLOSED_WITHDRAWAL)
        errors: list[str] = []
        result_id = clean_text(result_id, "submission id", 64, errors, required=True)
        reason = clean_text(reason, "reason", MAX_LINK_CHARS, errors)
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
        if self.policy.closed:  # only each identity's frozen selection shows its private figures
            mine = self.store.results(record.variant, include_withdrawn=True, submitter=record.submitter)
            return released_frame(record, private=True, selected=self.policy.selected(record, mine))
        return released_frame(record)

    def _rate_limited(self, user: str, now: float) -> SubmitResult:
        limit, window = self.rate
        retry = self.store.retry_at(user, limit, window, now)
        when = _when(retry)
        return SubmitResult(
            "rate_limited",
            f"Rate limit reached: at most {limit} accepted submissions per {duration_words(window)} per user (invalid and "
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
_CLOSED_WITHDRAWAL = (
    "This blind round is closed: each identity's selection froze at the close, so nothing can be withdrawn; "
    "nothing was changed."
)
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


def duration_words(seconds: int) -> str:
    """A window in words: "day", "2 hours", "90 seconds"."""
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
    its Ladder level on the public part ("not released" when the Ladder held it back), or with
    ``private`` (a closed round) its value on the private part when it is its identity's frozen
    ``selected`` submission ("not selected" otherwise) (``space.disclosure``)."""
    part = "private" if private else "public"
    values = headline(record.scores["private"]) if private else record.scores.get("released", {})
    steps = {} if private else record.scores.get("step", {})
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
