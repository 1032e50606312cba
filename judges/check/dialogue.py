"""A dialogue as the check takes it: turns (an id, a speaker, a clip, optional text), optional
reference clips per speaker and optional candidate clips (regenerations) per turn.

A ``Clip`` is a file, a span of a file (an RTTM segment), encoded bytes (a benchmark row's FLAC) or
samples in memory. ``validate`` checks a dialogue before any model runs: every file there and
readable, every clip at least ``MIN_TURN_SECONDS`` long, every speaker judgeable (two turns, or
one and a reference clip); each problem is one ``CheckInputError`` line naming the file.

>>> turns = [Turn("1", "A", Clip.from_file("a1.wav")), Turn("2", "B", Clip.from_file("b1.wav"))]
>>> Dialogue(turns).speakers
['A', 'B']
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from speakersleuth.judges.cache import clip_key
from speakersleuth.judges.check.audio import audio_info, decode, span_key
from speakersleuth.judges.check.errors import CheckInputError
from speakersleuth.speech.audio import SAMPLING_RATE, check_waveform, resample

#: The shortest clip the check judges: below it a speaker embedding says little about a voice.
MIN_TURN_SECONDS = 0.5


@dataclass(eq=False)
class Clip:
    """One piece of audio: a file or a span of it (``path``, ``start``, ``end`` in seconds),
    encoded bytes (``data``, as a benchmark row stores them) or ``samples`` at ``sampling_rate``.

    ``key`` names its content for the embedding cache (a file: its bytes' sha256 and the span;
    bytes: their sha256, as ``judges.cache`` keys a benchmark clip); ``load`` decodes it to 16 kHz
    mono float32.
    """

    path: Path | None = None
    start: float | None = None
    end: float | None = None
    data: bytes | None = None
    samples: np.ndarray | None = None
    sampling_rate: int = SAMPLING_RATE
    name: str = ""

    @classmethod
    def from_file(cls, path: str | os.PathLike, start: float | None = None, end: float | None = None) -> Clip:
        """A clip of a file, or of its span ``start``..``end`` (seconds)."""
        return cls(path=Path(path), start=start, end=end)

    def describe(self) -> str:
        """How messages and reports name the clip: its file (and span), or its name."""
        if self.path is None:
            return self.name or "audio in memory"
        if self.start is None and self.end is None:
            return str(self.path)
        return f"{self.path} [{self.start or 0:.2f}-{self.end:.2f} s]"

    def key(self) -> str:
        """The content key of the embedding cache (computed without decoding)."""
        if self.data is not None:
            return clip_key(self.data)
        if self.samples is not None:
            wave = np.ascontiguousarray(self.samples, dtype=np.float32)
            return hashlib.sha256(f"check-samples:{self.sampling_rate}:".encode() + wave.tobytes()).hexdigest()
        return span_key(self.path, self.start, self.end)

    def load(self) -> np.ndarray:
        """The clip as a 16 kHz mono float32 waveform (``CheckInputError`` when it is all zeros)."""
        if self.data is not None:
            from speakersleuth.speakersleuth_dataset import load_waveform

            wave = load_waveform(self.data, where=self.describe())
        elif self.samples is not None:
            wave = resample(_mono(self.samples, self.describe()), self.sampling_rate)
        else:
            wave = decode(self.path, self.start, self.end)
        if not np.any(wave):
            raise CheckInputError(f"{self.describe()}: every sample is zero (digital silence); no voice to judge")
        return wave

    def seconds(self) -> float:
        """Its length in seconds (a file's from its header; raises ``CheckInputError`` if unreadable)."""
        if self.samples is not None:
            return len(_mono(self.samples, self.describe())) / self.sampling_rate
        if self.data is not None:
            try:
                info = sf.info(io.BytesIO(self.data))
            except Exception as err:  # noqa: BLE001 - libsndfile's errors vary by format
                raise CheckInputError(f"{self.describe()}: cannot read audio ({err})") from None
            return info.frames / info.samplerate
        if self.end is not None:
            return self.end - (self.start or 0.0)
        return audio_info(self.path).seconds - (self.start or 0.0)


#: The most channels an in-memory clip may have: a 2-D array's shorter side, at most this, is its channels.
MAX_CHANNELS = 8


def _mono(samples, where: str) -> np.ndarray:
    """In-memory samples as a mono waveform: 1-D as given; 2-D (samples x channels, as soundfile
    reads them, or channels x samples, as torch holds them: the shorter side, at most
    ``MAX_CHANNELS``, is the channels) averaged over the channels. ``CheckInputError`` otherwise."""
    wave = np.asarray(samples)
    if wave.ndim == 2 and min(wave.shape) <= MAX_CHANNELS:
        wave = wave.mean(axis=int(np.argmin(wave.shape)))
    if wave.ndim != 1:
        raise CheckInputError(
            f"{where}: samples of shape {np.shape(samples)}; give 1-D samples, or 2-D with at most "
            f"{MAX_CHANNELS} channels"
        )
    try:
        return check_waveform(wave, where)
    except ValueError as err:
        raise CheckInputError(str(err)) from None


@dataclass(eq=False)
class Turn:
    """One turn: ``id`` (unique in its dialogue), ``speaker``, its ``audio`` (None for a turn
    still to choose, given by its candidates alone), optional ``text``, ``candidates`` (label ->
    clip: regenerations to rank) and, for calibration, ``label`` (``consistent`` or
    ``inconsistent``)."""

    id: str
    speaker: str
    audio: Clip | None
    text: str = ""
    candidates: dict[str, Clip] = field(default_factory=dict)
    label: str | None = None

    def __post_init__(self) -> None:
        """Ids and speakers as text, as a manifest gives them (``Turn(7, "A", ...)`` is turn ``"7"``)."""
        self.id, self.speaker = _name(self.id, "a turn id"), _name(self.speaker, f"the speaker of turn {self.id!r}")
        self.candidates = {_name(label, f"a candidate of turn {self.id!r}"): c for label, c in self.candidates.items()}


def _name(value, what: str) -> str:
    """An id or speaker as text: a str, or an int (not a bool); ``CheckInputError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (str, int, np.integer)) or not str(value).strip():
        raise CheckInputError(f"{what} is {value!r}; give a non-empty str or an int")
    return str(value).strip()


@dataclass(eq=False)
class Dialogue:
    """Turns in order, reference clips by speaker, a ``name`` (reports), the ``source`` file it
    was read from (messages) and ``notes`` on it for the report (overlapping segments)."""

    turns: list[Turn]
    references: dict[str, Clip] = field(default_factory=dict)
    name: str = "dialogue"
    source: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def speakers(self) -> list[str]:
        """The speakers, in order of their first turn."""
        return list(dict.fromkeys(t.speaker for t in self.turns))

    def turns_of(self, speaker: str) -> list[Turn]:
        return [t for t in self.turns if t.speaker == speaker]


def validate(dialogue: Dialogue, *, needs_reference: bool = False, min_seconds: float = MIN_TURN_SECONDS) -> float:
    """Refuse, in one line naming the file, what the check cannot judge.

    Arguments
    ---------
    dialogue : Dialogue
        The dialogue to check.
    needs_reference : bool
        True when the method compares turns with a reference clip: every speaker needs one.
    min_seconds : float
        The shortest clip accepted (default ``MIN_TURN_SECONDS``, 0.5 s).

    Returns
    -------
    float
        The seconds of audio of its turns (candidates and references not counted).

    Raises ``CheckInputError``: a turn id used twice, a candidate labelled as its turn, a file missing or unreadable, a clip shorter
    than ``min_seconds``, a speaker with fewer than two turns and no reference clip (or none when
    ``needs_reference``), a reference for a speaker with no turn.
    """
    where = dialogue.source or dialogue.name
    if not dialogue.turns:
        raise CheckInputError(f"{where}: no turns")
    seen: set[str] = set()
    for turn in dialogue.turns:
        if turn.id in seen:
            raise CheckInputError(f"{where}: turn {turn.id!r} appears twice")
        seen.add(turn.id)
        if turn.audio is None and not turn.candidates:
            raise CheckInputError(f"{where}: turn {turn.id!r} has neither audio nor candidates")
        if turn.audio is not None and turn.id in turn.candidates:
            raise CheckInputError(f"{where}: a candidate of turn {turn.id!r} has the turn's own name; rename it")
    total = 0.0
    for clip, what in _clips(dialogue):
        seconds = clip.seconds()
        if seconds < min_seconds:
            raise CheckInputError(
                f"{clip.describe()}: {what} is {seconds:.2f} s long; the check needs at least {min_seconds:g} s"
            )
        total += seconds if what.startswith("turn") else 0.0
    for speaker in dialogue.references:
        if speaker not in dialogue.speakers:
            raise CheckInputError(f"{where}: a reference clip is given for speaker {speaker!r}, who has no turn")
    for speaker in dialogue.speakers:
        _check_speaker(dialogue, speaker, needs_reference, where)
    return total


def _clips(dialogue: Dialogue) -> list[tuple[Clip, str]]:
    """Every clip of the dialogue with what it is, for messages."""
    found = []
    for turn in dialogue.turns:
        if turn.audio is not None:
            found.append((turn.audio, f"turn {turn.id!r} (speaker {turn.speaker!r})"))
        found += [(clip, f"candidate {label!r} for turn {turn.id!r}") for label, clip in turn.candidates.items()]
    found += [(clip, f"the reference clip of speaker {s!r}") for s, clip in dialogue.references.items()]
    return found


def _check_speaker(dialogue: Dialogue, speaker: str, needs_reference: bool, where: str) -> None:
    turns = dialogue.turns_of(speaker)
    voiced = [t for t in turns if t.audio is not None]
    has_reference = speaker in dialogue.references
    if needs_reference and not has_reference:
        raise CheckInputError(
            f"{where}: speaker {speaker!r} has no reference clip, which the reference method needs "
            f"(--reference {speaker}=FILE, or a 'reference' column)"
        )
    if len(voiced) < 2 and not has_reference:
        ids = ", ".join(repr(t.id) for t in turns)
        raise CheckInputError(
            f"{where}: speaker {speaker!r} has only one turn with audio ({ids}); consistency needs two "
            f"turns or a reference clip of the speaker (--reference {speaker}=FILE)"
        )
