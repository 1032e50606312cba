"""The "Check your audio" tab: a person's own dialogue judged by ``judges.check``, as the command does.

A person uploads turn files (one audio file per turn; the speaker of each typed in a small table,
filled with the file names and a guess from each name) or one recording with its RTTM file,
optionally reference clips named after their speakers, and presses Check. The tab shows, per
speaker, the similarity strip (``judges.check`` scores, τ drawn, flagged turns marked) and the
flagged turns in a table, with τ and where it comes from.

Limits, checked before anything is decoded: at most ``MAX_FILES`` files and ``MAX_UPLOAD_BYTES``
in all (each file's size on disk), then at most ``MAX_AUDIO_SECONDS`` of audio in all (each file's
header). Nothing is stored: the uploads are read where Gradio put them and deleted after the
check, embeddings stay in memory for the one request, and nothing is written to the Space's data
folder or results store. A file the check refuses gets one line naming it (``CheckInputError``);
any other failure one line without a traceback (the traceback goes to the server's log).

``judges.check`` (and the encoders, which need torch: the ``builder`` extra) is imported inside
the handler only: where it is not installed (the published Hub Space) the tab says so in one line.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import pandas as pd

from speakersleuth.space.submitter import discard_upload
from speakersleuth.space.uploads import FileUpload
from speakersleuth.speech.extras import missing_extra

logger = logging.getLogger(__name__)

TAB_ID, TAB_NAME = "check", "Check your audio"
#: Most files of one check (turns, references, a recording and its RTTM).
MAX_FILES = 64
#: Most bytes of one check's files, together (each file is also under the Space's per-file limit).
MAX_UPLOAD_BYTES = 50_000_000
#: Most seconds of audio of one check, together (from the files' headers, before decoding).
MAX_AUDIO_SECONDS = 600.0
#: What the encoders need that the core and the Space's own install lack.
EXTRA = "check"
TURNS, RTTM = "Turn files", "Recording + RTTM"
SPEAKER_COLUMNS = ["file", "speaker"]
FLAGGED_COLUMNS = ["speaker", "turn", "score", "flagged when"]
CHECK_CONCURRENCY = 1  # one check at a time: the encoder runs on the Space's few CPU cores

INTRODUCTION = f"""\
## Check your audio

Does each speaker of **your** dialogue keep one voice? Upload the turns, press **Check**: per
speaker, each turn is compared with the speaker's other turns (or with a reference clip) by the
benchmark's embedding judge, and the turns past the threshold τ are flagged.

- **Turn files**: one audio file per turn, in dialogue order by file name (`01_host.wav`,
  `02_guest.wav`, ...). The table lists them with a speaker guessed from each name (its last part
  that is not a number); correct any speaker there before pressing Check.
- **Recording + RTTM**: one recording and its diarization (RTTM: each `SPEAKER` line a turn; the
  file id must be the recording's name without its extension).
- **Reference clips** (optional): a clip of a speaker named after the speaker (`host.wav`); a
  speaker with a single turn needs one.

Limits: at most {MAX_FILES} files, {MAX_UPLOAD_BYTES // 1_000_000} MB and
{MAX_AUDIO_SECONDS / 60:g} minutes of audio per check, turns of at least 0.5 s; WAV, FLAC, MP3,
OGG (and what FFmpeg reads where it is installed). Nothing is kept: your files are deleted after
the check (upload them again to check again) and nothing is written to the Space's store.

τ is calibrated on the benchmark's TTS voices, where an inconsistent turn is re-spoken by another
voice or DSP-converted, and on dialogues of real recordings and two other synthesisers with a
planted turn: on other speech it is a **starting point**, not a verdict. `python -m speakersleuth.judges check --calibrate` picks τ on your own labelled turns.
"""


class Refused(Exception):
    """One line for the page: what is wrong, naming the file."""


@dataclass(frozen=True)
class Upload:
    """An uploaded file: where Gradio keeps it (``path``) and the name the person gave it."""

    path: Path
    name: str


@dataclass
class Outcome:
    """A check's result: the report, or the one line that says why there is none."""

    report: object | None = None
    line: str = ""


def uploads(paths) -> list[Upload]:
    """The uploads of a widget's value (None, one path or a list of paths)."""
    if not paths:
        return []
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    return [Upload(Path(p), Path(p).name) for p in paths]


def guess_speaker(name: str) -> str:
    """The speaker a file name suggests: its last ``_``/``-``/space-separated part that is not a
    number (``01_host.wav`` -> ``host``, ``guest-3.flac`` -> ``guest``), else empty."""
    parts = [p for p in re.split(r"[_\-\s.]+", Path(name).stem) if p and not p.isdigit()]
    return parts[-1] if parts else ""


def natural_key(name: str) -> list:
    """Sort key that puts ``turn2`` before ``turn10``."""
    return [int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", name)]


def speaker_table(paths, table) -> list[list[str]]:
    """The speakers table for the uploaded turn files: one row per file in file-name order, a
    speaker already typed for that name kept, else the guess."""
    typed = {str(r[0]): str(r[1]) for r in rows_of(table) if len(r) >= 2 and str(r[1]).strip()}
    names = sorted({u.name for u in uploads(paths)}, key=natural_key)
    return [[name, typed.get(name, guess_speaker(name))] for name in names]


def rows_of(table) -> list[list]:
    """A Dataframe's value as rows (it comes as a DataFrame, a dict or a list)."""
    if table is None:
        return []
    if isinstance(table, pd.DataFrame):
        return table.astype(str).values.tolist()
    if isinstance(table, dict):
        return list(table.get("data") or [])
    return [list(r) for r in table]


def enforce_size(files: list[Upload]) -> None:
    """Refuse, before anything is read, too many files or too many bytes (sizes on disk)."""
    if len(files) > MAX_FILES:
        raise Refused(f"{len(files)} files: a check takes at most {MAX_FILES}.")
    total = 0
    for f in files:
        size = f.path.stat().st_size
        if size == 0:
            raise Refused(f"{f.name}: the file is empty (0 bytes).")
        total += size
    if total > MAX_UPLOAD_BYTES:
        raise Refused(
            f"{total / 1e6:.1f} MB in all: a check takes at most {MAX_UPLOAD_BYTES / 1e6:g} MB "
            "(compressed formats such as FLAC or MP3 fit more audio)."
        )


def enforce_duration(files: list[Upload]) -> float:
    """Refuse, from the audio files' headers alone, more than ``MAX_AUDIO_SECONDS`` in all (a header
    that claims hours is refused here, before it is decoded); returns the seconds."""
    from speakersleuth.judges.check.audio import audio_info

    total = 0.0
    for f in files:
        seconds = audio_info(f.path).seconds
        if seconds > MAX_AUDIO_SECONDS:
            raise Refused(
                f"{f.name}: its header says {seconds:,.0f} s of audio; a check takes at most {MAX_AUDIO_SECONDS:g} s."
            )
        total += seconds
    if total > MAX_AUDIO_SECONDS:
        raise Refused(f"{total:.0f} s of audio in all: a check takes at most {MAX_AUDIO_SECONDS:g} s.")
    return total


def turn_dialogue(turns: list[Upload], table, references: list[Upload]):
    """The dialogue of turn files, in the table's order, with the speakers it names."""
    from speakersleuth.judges.check import Clip, Dialogue, Turn

    by_name = _unique(turns + references)
    turn_names = {u.name for u in turns}
    speakers = {}
    for row in rows_of(table):
        name, speaker = (str(row[0]).strip(), str(row[1]).strip()) if len(row) >= 2 else ("", "")
        if not name and not speaker:
            continue
        if name not in turn_names:
            raise Refused(f"{name or '(empty row)'}: the speakers table names no uploaded turn file of that name.")
        if not speaker:
            raise Refused(f"{name}: no speaker given in the table.")
        speakers[name] = speaker
    for u in turns:
        if u.name not in speakers:
            raise Refused(f"{u.name}: uploaded but not in the speakers table; give its speaker there.")
    dialogue = Dialogue(
        [Turn(n, speakers[n], Clip.from_file(by_name[n].path)) for n in speakers], name="your dialogue"
    )
    _add_references(dialogue, references)
    return dialogue


def rttm_dialogue(recording: list[Upload], rttm: list[Upload], references: list[Upload]):
    """The dialogue of one recording and its RTTM file."""
    from speakersleuth.judges.check import read_rttm

    if len(recording) != 1 or len(rttm) != 1:
        raise Refused("Upload one recording and its RTTM file.")
    _unique(recording + rttm + references)
    dialogue = read_rttm(rttm[0].path, recording[0].path)
    _add_references(dialogue, references)
    return dialogue


def _unique(files: list[Upload]) -> dict[str, Upload]:
    """Uploads by name; two files of one name are refused (the table and messages go by name)."""
    by_name: dict[str, Upload] = {}
    for f in files:
        if f.name in by_name:
            raise Refused(f"{f.name}: two uploaded files have this name; rename one.")
        by_name[f.name] = f
    return by_name


def _add_references(dialogue, references: list[Upload]) -> None:
    """Each reference clip to the speaker its file is named after."""
    from speakersleuth.judges.check import Clip

    for ref in references:
        speaker = Path(ref.name).stem
        if speaker not in dialogue.speakers:
            raise Refused(
                f"{ref.name}: a reference clip is named after its speaker, and there is no speaker "
                f"{speaker!r} (speakers: {', '.join(dialogue.speakers)})."
            )
        dialogue.references[speaker] = Clip.from_file(ref.path)


_ENCODERS: dict[str, object] = {}
_ENCODERS_LOCK = threading.Lock()


def shared_encoder(spec: str):
    """The encoder of ``spec``, loaded once per process (its weights, not anyone's audio)."""
    with _ENCODERS_LOCK:
        if spec not in _ENCODERS:
            from speakersleuth.speech.encoders import get_encoder

            _ENCODERS[spec] = get_encoder(spec)
        return _ENCODERS[spec]


def check_dialogue(dialogue):
    """``judges.check.check_dialogues`` on one dialogue with the shipped calibration's judge, its
    embeddings in memory for this call only; refusals come before the encoder loads."""
    from speakersleuth.judges.cache import EmbeddingCache
    from speakersleuth.judges.check import check_dialogues, resolve_settings, validate

    settings = resolve_settings()
    validate(dialogue, needs_reference=settings.method == "reference")
    cache = EmbeddingCache(shared_encoder(settings.encoder))  # no cache_dir: nothing on disk
    return check_dialogues(dialogue, cache=cache)


def unavailable() -> str | None:
    """One line when this install cannot check audio (no torch, so no encoder, or no
    ``speakersleuth.judges``: the published Hub tree leaves both out), else None."""
    for name in ("torch", "speakersleuth.judges"):
        if importlib.util.find_spec(name) is None:
            return missing_extra(ModuleNotFoundError(name=name), EXTRA, "Check your audio")
    return None


def run_check(mode: str, turns, table, recording, rttm, references) -> Outcome:
    """The tab's work on the uploads' paths: the limits, the dialogue, the check; every refusal
    one line with the uploads' own names (not the server's temporary paths)."""
    groups = [uploads(turns)] if mode == TURNS else [uploads(recording), uploads(rttm)]
    refs = uploads(references)
    files = [f for g in groups for f in g] + refs
    try:
        if not groups[0]:
            raise Refused("Upload the turn files first." if mode == TURNS else "Upload a recording and its RTTM file.")
        enforce_size(files)
        if (line := unavailable()) is not None:
            return Outcome(line=line)
        enforce_duration(groups[0] + refs)  # the turn files, or the recording (not the RTTM)
        dialogue = turn_dialogue(groups[0], table, refs) if mode == TURNS else rttm_dialogue(*groups, refs)
        return Outcome(report=check_dialogue(dialogue))
    except Exception as err:  # noqa: BLE001 - hostile audio may fail in any library: one line, no traceback
        return Outcome(line=_failure(err, files))


def _failure(err: Exception, files: list[Upload]) -> str:
    """The one line for a check that failed: a refusal or ``CheckInputError`` as it is (the
    uploads' names for the temporary paths), a missing module as the extra to install, anything
    else in general words (its traceback to the server's log only)."""
    if isinstance(err, Refused):
        return str(err)
    if isinstance(err, ModuleNotFoundError):
        return missing_extra(err, EXTRA, "Check your audio")
    try:
        from speakersleuth.judges.check import CheckInputError
    except ImportError:  # not installed: no error of it either
        CheckInputError = Refused
    if isinstance(err, CheckInputError):
        return _named(str(err), files)
    logger.exception("Check your audio: the check failed", exc_info=err)
    return "The check failed on these files (the audio could not be processed); nothing was kept."


def _named(message: str, files: list[Upload]) -> str:
    """``message`` with the server's temporary paths replaced by the uploaded files' names."""
    for f in sorted(files, key=lambda f: -len(str(f.path))):
        message = message.replace(str(f.path), f.name)
    message = re.sub(r"\(?--reference (\S+)=FILE\)?", r"a reference clip named \1.wav", message)
    return " ".join(message.split())


def _md(text: str) -> str:
    """``text`` (a file or speaker name) shown as text in Markdown, never as markup."""
    return re.sub(r"([\\`*_{}\[\]()<>#+\-.!|~])", r"\\\1", str(text))


def summary(report) -> str:
    """The verdict in Markdown: how many turns are flagged, the judge, τ and where it comes from,
    then one line per speaker."""
    from speakersleuth.judges.check.results import SCORE_NAMES, flag_rule

    flagged, scored = report.flagged, [t for s in report.speakers for t in s.turns if t.score is not None]
    lines = [
        f"**{len(flagged)} of {len(scored)} turns flagged.** Encoder {report.encoder}, method {report.method} "
        f"(score: {SCORE_NAMES[report.method]}); a turn is flagged when {flag_rule(report.method, report.threshold)}.",
        "",
        f"τ = {report.threshold:g}: {_md(report.threshold_source)}. On speech unlike what it was calibrated on, "
        "a starting point.",
        "",
    ]
    for s in report.speakers:
        which = ", ".join(_md(t.turn) for t in s.flagged)
        how = (
            ""
            if (s.method, s.threshold) == (report.method, report.threshold)
            else f" ({s.method}, τ = {s.threshold:g})"
        )
        verdict = f"{len(s.flagged)} of {sum(t.score is not None for t in s.turns)} turns flagged"
        short = sum(t.status == "too short to judge" for t in s.turns)
        verdict += (f": {which}" if which else ", one voice throughout") + (
            f"; {short} too short to judge" if short else ""
        )
        lines.append(f"- **{_md(s.speaker)}**{how}: {verdict}")
    return "\n".join(lines)


def flagged_frame(report) -> pd.DataFrame:
    """The flagged turns: speaker, turn (an RTTM turn with its span), score and the flag rule."""
    from speakersleuth.judges.check.results import flag_rule

    rows = [
        [s.speaker, f"{t.turn} ({t.text})" if t.text else t.turn, round(t.score, 3), flag_rule(s.method, s.threshold)]
        for s in report.speakers
        for t in s.flagged
    ]
    return pd.DataFrame(rows, columns=FLAGGED_COLUMNS)


def picture(report):
    """The per-speaker similarity strip (``judges.check.report.report_figure``, made without pyplot)
    as a PIL image, rendered in memory."""
    from PIL import Image

    from speakersleuth.judges.check.report import report_figure

    buffer = io.BytesIO()
    report_figure(report).savefig(buffer, format="png", dpi=110)
    buffer.seek(0)
    with Image.open(buffer) as image:
        return image.convert("RGB")


def check_handler(mode, turns, table, recording, rttm, references):
    """The Check button: the outcome shown (status, picture, flagged turns); every upload deleted
    and its widget emptied, whatever the outcome."""
    try:
        outcome = run_check(mode, turns, table, recording, rttm, references)
        if outcome.report is None:
            shown = (f"**Not checked.** {_md(outcome.line)}", None, pd.DataFrame(columns=FLAGGED_COLUMNS))
        else:
            shown = (summary(outcome.report), picture(outcome.report), flagged_frame(outcome.report))
    finally:
        for f in [f for g in (turns, recording, rttm, references) for f in uploads(g)]:
            discard_upload(f.path)
    return (*shown, None, None, None, None)


def _mode_groups(mode: str):
    return gr.update(visible=mode == TURNS), gr.update(visible=mode == RTTM)


def build_check_tab() -> gr.Tab:
    """The "Check your audio" tab, its components and events (call inside ``gr.Tabs``)."""
    with gr.Tab(TAB_NAME, id=TAB_ID) as tab:
        _build_check_page()
    return tab


def _build_check_page() -> None:
    """The tab's components and events."""
    gr.Markdown(INTRODUCTION)
    if (line := unavailable()) is not None:
        gr.Markdown(f"**This Space cannot check audio.** {line}", elem_id="ss-check-unavailable")
    mode = gr.Radio([TURNS, RTTM], value=TURNS, label="What you have", elem_id="ss-check-mode")
    with gr.Group(visible=True) as turn_group:
        turns = FileUpload(
            label="Turn files (audio, one per turn)", file_count="multiple", type="filepath", elem_id="ss-check-turns"
        )
        table = gr.Dataframe(
            headers=SPEAKER_COLUMNS,
            column_count=2,
            type="array",
            interactive=True,
            label="Speaker of each turn (dialogue order)",
            elem_id="ss-check-speakers",
        )
    with gr.Group(visible=False) as rttm_group:
        recording = FileUpload(label="Recording", type="filepath", elem_id="ss-check-recording")
        rttm = FileUpload(label="RTTM file", type="filepath", elem_id="ss-check-rttm")
    references = FileUpload(
        label="Reference clips (optional; each named after its speaker, e.g. host.wav)",
        file_count="multiple",
        type="filepath",
        elem_id="ss-check-references",
    )
    button = gr.Button("Check", variant="primary", elem_id="ss-check-button")
    status = gr.Markdown(elem_id="ss-check-status")
    strip = gr.Image(
        label="Similarity per speaker", type="pil", format="png", interactive=False, elem_id="ss-check-picture"
    )
    flagged = gr.Dataframe(
        headers=FLAGGED_COLUMNS, interactive=False, label="Flagged turns", elem_id="ss-check-flagged"
    )
    mode.change(_mode_groups, mode, [turn_group, rttm_group], api_name=False)
    turns.upload(speaker_table, [turns, table], table, api_name=False)
    button.click(
        check_handler,
        [mode, turns, table, recording, rttm, references],
        [status, strip, flagged, turns, recording, rttm, references],
        concurrency_limit=CHECK_CONCURRENCY,
        concurrency_id="check-audio",
        api_name=False,
    )
