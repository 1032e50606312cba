"""The Review tab: a reviewer named in the configuration (``SPEAKERSLEUTH_REVIEWERS``) picks one
dialogue of one variant, listens to it (the reference, the target's context turns and the masked
turn as S1, the original, and as the S2 and S3 conversions) and accepts or rejects it with a reason.

Decisions go to the results store like results (``ResultsStore.add_review``), every one of them
kept as the audit trail; a reviewer's latest decision on a dialogue is the one that counts.
``review_sheet`` writes them in the builder's ``review.csv`` format, so
``python -m speakersleuth.builder_scripts build ... --review-decisions review.csv`` drops every dialogue that a
reviewer rejected (one rejection is enough; their reasons are joined). A dialogue of an earlier
build stays in the sheet, so a rebuild keeps it dropped.

A dialogue is read from the discrimination config of its variant (one row holds every clip). A
blind copy has no dialogue ids in its test split: review the labelled build instead.
"""

from __future__ import annotations

import csv
import html
import io
import logging
import tempfile
import time
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import pyarrow.parquet as pq

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.space.config import ENV_PREFIX, SpaceConfig
from speakersleuth.space.store import ResultsStore, ReviewDecision
from speakersleuth.space.submitter import THIS_MACHINE, client_address
from speakersleuth.space.text import encodable
from speakersleuth.space.viewer import CANDIDATE_SLOTS, TURN_SLOTS, InstanceIndex, empty_view, instance_panel, instance_view, players
from speakersleuth.speech.files import write_bytes_atomic

DECISIONS = ("accept", "reject")
logger = logging.getLogger(__name__)
MAX_REASON_CHARS = 300
TASK = "discrimination"


@dataclass(frozen=True)
class Dialogue:
    """One reviewable dialogue: its variant, id and the discrimination instance that holds its clips."""

    variant: str
    dialogue_id: str
    instance_id: str
    converted_turn: int
    vc_model: str

    @property
    def key(self) -> str:
        """What the picker shows and sends: ``<variant>/<dialogue_id>``."""
        return f"{self.variant}/{self.dialogue_id}"

    @property
    def config(self) -> str:
        return ssd.config_name(TASK, self.variant)


def reviewable_dialogues(root: str | Path) -> dict[str, Dialogue]:
    """The dialogues of every variant's discrimination test split, by ``Dialogue.key`` (none of a blind copy)."""
    dialogues = {}
    for variant in ssd.VARIANTS:
        config = ssd.config_name(TASK, variant)
        paths = ssd.shard_paths(root, config)
        if not paths or "dialogue_id" not in pq.read_schema(paths[0]).names:
            continue
        columns = ["id", "dialogue_id", "masked_position", "vc_model"]
        for row in ssd.read_rows(root, config, columns=columns).to_pylist():
            dialogue = Dialogue(variant, row["dialogue_id"], row["id"], row["masked_position"], row["vc_model"])
            dialogues[dialogue.key] = dialogue
    return dialogues


def latest_decisions(reviews: list[ReviewDecision]) -> dict[tuple[str, str], list[ReviewDecision]]:
    """Each reviewer's latest decision, by ``(variant, dialogue_id)``, in the order they were made."""
    latest = {(d.variant, d.dialogue_id, d.reviewer): d for d in sorted(reviews, key=lambda d: d.at)}
    by_dialogue: dict[tuple[str, str], list[ReviewDecision]] = {}
    for decision in sorted(latest.values(), key=lambda d: d.at):
        by_dialogue.setdefault((decision.variant, decision.dialogue_id), []).append(decision)
    return by_dialogue


def sheet_rows(reviews: list[ReviewDecision], dialogues: dict[str, Dialogue]) -> list[dict[str, object]]:
    """The ``review.csv`` rows: every dialogue served and every dialogue decided; ``reject`` when
    any reviewer's latest decision rejects it, ``accept`` when all accept, empty when undecided."""
    decided = latest_decisions(reviews)
    keys = dict.fromkeys([(d.variant, d.dialogue_id) for d in dialogues.values()] + list(decided))
    rows = []
    for variant, dialogue_id in keys:
        decisions = decided.get((variant, dialogue_id), [])
        verdict = "reject" if any(d.decision == "reject" for d in decisions) else "accept" if decisions else ""
        reasons = dict.fromkeys(d.reason for d in decisions if d.decision == verdict and d.reason)
        served = dialogues.get(f"{variant}/{dialogue_id}")
        rows.append(
            {
                "dialogue_id": dialogue_id,
                "variant": variant,
                "decision": verdict,
                "reason": "; ".join(reasons),
                "converted_turn": served.converted_turn if served else "",
                "vc_model": served.vc_model if served else "",
                "text": "",
                "audio_files": "",
            }
        )
    return rows


def review_sheet(reviews: list[ReviewDecision], dialogues: dict[str, Dialogue]) -> str:
    """``sheet_rows`` as the builder's ``review.csv`` text."""
    out = io.StringIO()
    writer = csv.DictWriter(out, ssd.REVIEW_FIELDS)
    writer.writeheader()
    writer.writerows(sheet_rows(reviews, dialogues))
    return out.getvalue()


def export_review_sheet(store: ResultsStore, dataset: str | Path, path: str | Path) -> Path:
    """Write the store's review decisions on ``dataset`` as ``review.csv`` at ``path``; returns the path."""
    write_bytes_atomic(
        Path(path), review_sheet(store.reviews(), reviewable_dialogues(dataset)).encode("utf-8"), durable=True
    )
    return Path(path)


def clean_reason(reason: object) -> str:
    """The reason on one line: control characters (newlines, tabs) become spaces, ends trimmed."""
    text = "".join(" " if unicodedata.category(c) == "Cc" else c for c in str(reason or ""))
    return encodable(text.strip())


@dataclass(frozen=True)
class Outcome:
    """What a review action did: ``ok`` and the one message the reviewer sees."""

    ok: bool
    message: str

    def html(self) -> str:
        return f'<div class="ss-status {"ss-ok" if self.ok else "ss-bad"}"><p>{html.escape(self.message)}</p></div>'


class ReviewDesk:
    """The Review tab's handlers over one dataset folder and one store. ``identity(profile, address)``
    names who asks (``space.submitter.Submitter.identity``); only ``config.reviewers`` may act."""

    def __init__(
        self,
        config: SpaceConfig,
        store: ResultsStore,
        dataset: str | Path,
        identity: Callable[..., str | None],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.store = store
        self.dataset = Path(dataset)
        self.identity = identity
        self.clock = clock
        self.dialogues = reviewable_dialogues(self.dataset)
        self.index = InstanceIndex(self.dataset)
        self.export_dir = Path(tempfile.mkdtemp(prefix="speakersleuth-review-"))

    def reviewer(self, profile: gr.OAuthProfile | None, address: str | None) -> Outcome:
        """``Outcome(True, identity)`` for a configured reviewer, else the one refusal to show."""
        user = self.identity(profile, address)
        if user is None:
            return Outcome(
                False,
                "Sign in with Hugging Face to review."
                if self.config.on_spaces
                else "The server cannot tell who sent this request (no client address); nothing was done.",
            )
        if not self.config.is_reviewer(user):
            return Outcome(False, f"Only the reviewers named in {ENV_PREFIX}REVIEWERS may review; you are {user}.")
        return Outcome(True, user.lower())  # one reviewer however the name is cased

    def decide(
        self,
        key: object,
        decision: object,
        reason: object,
        profile: gr.OAuthProfile | None = None,
        *,
        address: str | None = THIS_MACHINE,
    ) -> Outcome:
        """Record one decision on the dialogue ``key`` (``<variant>/<dialogue_id>``); never raises."""
        who = self.reviewer(profile, address)
        if not who.ok:
            return who
        dialogue = self.dialogues.get(str(key or ""))
        if dialogue is None:
            return Outcome(
                False,
                f"Unknown dialogue {encodable(str(key or ''))[:200]!r}; pick one from the list. Nothing was recorded.",
            )
        if decision not in DECISIONS:
            return Outcome(
                False,
                f"The decision must be accept or reject, got {encodable(str(decision))[:50]!r}. Nothing was recorded.",
            )
        reason = clean_reason(reason)
        if decision == "reject" and not reason:
            return Outcome(
                False, "A rejection needs a reason (what is wrong with the dialogue). Nothing was recorded."
            )
        if len(reason) > MAX_REASON_CHARS:
            return Outcome(
                False, f"The reason has {len(reason)} characters; at most {MAX_REASON_CHARS}. Nothing was recorded."
            )
        try:
            self.store.add_review(
                ReviewDecision(dialogue.variant, dialogue.dialogue_id, who.message, decision, reason, self.clock())
            )
        except Exception:
            ref = uuid.uuid4().hex[:8]
            logger.exception("review decision %s failed unexpectedly", ref)
            return Outcome(
                False, f"Internal error while recording the decision (reference {ref}); nothing was recorded."
            )
        return Outcome(
            True, f"Recorded: {who.message} {decision}s {dialogue.key}" + (f" ({reason})." if reason else ".")
        )

    def export(self) -> Path:
        """The current ``review.csv`` (a fresh file in this desk's folder)."""
        return export_review_sheet(self.store, self.dataset, self.export_dir / "review.csv")

    def current(self, dialogue: Dialogue, reviewer: str) -> str:
        """The reviewer's latest decision on ``dialogue``, in words."""
        decisions = latest_decisions(self.store.reviews()).get((dialogue.variant, dialogue.dialogue_id), [])
        mine = [d for d in decisions if d.reviewer == reviewer]
        if not mine:
            return "You have not decided on this dialogue yet."
        return f"Your decision so far: {mine[-1].decision}" + (f" ({mine[-1].reason})." if mine[-1].reason else ".")

    # ------------------------------------------------------------------ Gradio events (identity injected)

    def _download(self, who: Outcome):
        """The sheet's download button: the current ``review.csv`` for a reviewer, hidden for anyone else."""
        return gr.update(value=str(self.export()), visible=True) if who.ok else gr.update(value=None, visible=False)

    def on_open(self, request: gr.Request, profile: gr.OAuthProfile | None = None):
        """On opening the tab: who may review (or the one refusal), the sheet's download, and the
        decision controls (decision, reason, record button): enabled for a reviewer only."""
        who = self.reviewer(profile, client_address(request))
        status = Outcome(True, f"You review as {who.message}.") if who.ok else who
        return status.html(), self._download(who), *[gr.update(interactive=who.ok)] * len(CONTROLS)

    def on_show(self, key: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None) -> list:
        """The dialogue ``key`` to listen to: its text, facts, reference, context turns and the S1/S2/S3 candidates."""
        dialogue = self.dialogues.get(str(key or ""))
        if dialogue is None:
            return empty_view(
                "<p>Pick a dialogue.</p>"
                if not key
                else f"<p>Unknown dialogue {html.escape(repr(str(key)[:200]))}.</p>"
            )
        row = self.index.load(dialogue.config, dialogue.instance_id)
        dialogue_value, facts_value, turns, candidates, ref = instance_view(row, dialogue.config)
        who = self.reviewer(profile, client_address(request))
        title = f"{dialogue.key}: converted target turn {dialogue.converted_turn} ({dialogue.vc_model})."
        title += f" {self.current(dialogue, who.message)}" if who.ok else ""
        return [
            f"<p>{html.escape(title)}</p>",
            dialogue_value,
            facts_value,
            gr.update(value=ref, visible=ref is not None),
            *players(turns, TURN_SLOTS),
            *players(candidates, CANDIDATE_SLOTS),
        ]

    def on_decide(self, key, decision, reason, request: gr.Request, profile: gr.OAuthProfile | None = None):
        """Record the decision; the status, the refreshed sheet, and the reason box (emptied once recorded)."""
        address = client_address(request)
        outcome = self.decide(key, decision, reason, profile, address=address)
        return (
            outcome.html(),
            self._download(self.reviewer(profile, address)),
            gr.update(value="") if outcome.ok else gr.update(),
        )


CONTROLS = ("decision", "reason", "record")  # what ``on_open`` enables for a reviewer (disabled until then)

REVIEW_INTRO = (
    "Listen to one dialogue: the reference clip of the target speaker, the target's context turns, and the "
    "masked target turn as S1 (the original) and as the S2 and S3 conversions (in the candidates' shuffled order). "
    "Accept it, or reject it with a reason. Every decision is kept; your latest on a dialogue counts, and one "
    "rejection drops the dialogue when the dataset is rebuilt with the downloaded `review.csv` "
    "(`python -m speakersleuth.builder_scripts build ... --review-decisions review.csv`). "
    f"Only the reviewers named in `{ENV_PREFIX}REVIEWERS` may review."
)


def build_review_tab(desk: ReviewDesk, tab: gr.Tab) -> None:
    """The Review tab's components and events (call inside ``gr.Blocks`` / ``gr.Tab``); selecting
    ``tab`` says who may review and shows the picked dialogue."""
    gr.Markdown(REVIEW_INTRO)
    if desk.config.on_spaces:
        gr.LoginButton()
    who = gr.HTML(elem_id="ss-review-who")
    keys = list(desk.dialogues)
    if not keys:
        gr.Markdown("This dataset has no dialogue ids in its test split (a blind copy?): review the labelled build.")
    picker = gr.Dropdown(
        keys, value=keys[0] if keys else None, label="Dialogue (variant/dialogue id)", elem_id="ss-review-dialogue"
    )
    shown = instance_panel("ss-review-title")
    with gr.Row():
        decision = gr.Radio(
            list(DECISIONS), value="accept", label="Decision", elem_id="ss-review-decision", interactive=False
        )
        reason = gr.Textbox(
            label="Reason (required to reject)",
            max_lines=1,
            max_length=MAX_REASON_CHARS,
            elem_id="ss-review-reason",
            scale=3,
            interactive=False,
        )
    record = gr.Button("Record decision", variant="primary", elem_id="ss-review-record", interactive=False)
    status = gr.HTML(elem_id="ss-review-status")
    download = gr.DownloadButton("Download review.csv", visible=False, size="sm", elem_id="ss-review-download")

    picker.input(desk.on_show, picker, shown, api_name="review_show")
    record.click(
        desk.on_decide, [picker, decision, reason], [status, download, reason], api_name="review_decide"
    ).then(desk.on_show, picker, shown, api_name=False)
    tab.select(desk.on_open, None, [who, download, decision, reason, record], api_name=False).then(
        desk.on_show, picker, shown, api_name=False
    )
