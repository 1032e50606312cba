"""The one interface every source corpus implements: it yields dialogues of ordered turns.

A corpus module (``dailytalk.py``, ``ami.py``, ``behavior_sd.py``, ``bazinga.py``,
``chitchat_tts.py``) defines one ``DialogueSource`` subclass and registers it in
``builder_scripts.sources.SOURCES``; adding a corpus is adding one file.

Every source is built the same way, as lhotse's ``prepare_<corpus>(corpus_dir, output_dir)``:
``Source(corpus_dir=..., output_dir=..., **options)``. ``corpus_dir`` is the local corpus folder
(optional only where ``corpus_required`` is False: the embedded TTS source reads its package),
``output_dir`` a folder of the source's own for anything it derives (manifests, decoded audio,
voicing), and the options are the source's keywords. The constructor checks the folder against the
source's ``layout``; a missing or incomplete corpus raises ``CorpusLayoutError``, one line naming
what is missing and the expected layout.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path


class CorpusLayoutError(ValueError):
    """A corpus folder is missing, incomplete or not in the layout its source reads."""


@dataclass(frozen=True)
class AudioSpan:
    """Where a turn's audio lives: a whole file, or ``[start, end)`` seconds of one channel of it."""

    path: Path
    start: float | None = None
    end: float | None = None
    channel: int | None = None

    @property
    def duration(self) -> float | None:
        return None if self.start is None or self.end is None else self.end - self.start


#: Speaking rate used to estimate a turn's duration before its audio exists (TTS sources).
WORDS_PER_SECOND = 3.0


@dataclass(frozen=True)
class Turn:
    speaker: str
    gender: str  # "female" | "male"
    text: str
    audio: AudioSpan

    @property
    def duration(self) -> float:
        """The span's duration when known, else an estimate from the word count."""
        known = self.audio.duration
        return known if known is not None else len(self.text.split()) / WORDS_PER_SECOND


@dataclass(frozen=True)
class Dialogue:
    dialogue_id: str  # the corpus's own id, e.g. "23" for DailyTalk dialogue 23
    source: str  # the source's registry name, e.g. "dailytalk"
    turns: tuple[Turn, ...]
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def speakers(self) -> list[str]:
        return sorted({t.speaker for t in self.turns})


class DialogueSource(ABC):
    """A corpus on local disk, read as dialogues. Subclasses set the class attributes."""

    name: str  # registry name, used in ids and on the dataset card
    license: str  # the terms in words, with the attribution they ask for (the card lists it)
    #: The license as the Hub names it (https://huggingface.co/docs/hub/repositories-licenses):
    #: the card's ``license:`` lists those of a build's sources; "unknown" where none is stated.
    hub_license: str
    citation: str
    homepage: str
    #: The corpus folder this source reads, in one line (for error messages).
    layout: str
    #: Whether ``corpus_dir`` must be given (False: the source has a default corpus).
    corpus_required: bool = True
    #: How far planned turn durations must clear the segment rules' minimums: 1 where durations
    #: are measured; more where they are estimates (TTS), so that few segments fail the re-check
    #: on the voiced durations (a failure wastes the voicing and needs a replacement).
    duration_slack: float = 1.0
    #: Whether long work (voicing, reading a corpus) shows a bar; ``make_source`` sets it from the build's options.
    progress: bool = True

    def __init__(self, corpus_dir: str | Path | None, output_dir: str | Path | None):
        """Keep the two folders; refuse a required ``corpus_dir`` that is not given, and one that
        does not exist or is not a folder."""
        if corpus_dir is None and self.corpus_required:
            raise self.layout_error("no corpus folder given")
        if corpus_dir is not None and not Path(corpus_dir).exists():
            raise self.layout_error(f"corpus folder {corpus_dir} does not exist")
        if corpus_dir is not None and not Path(corpus_dir).is_dir():
            raise self.layout_error(f"{corpus_dir} is not a folder")
        self.corpus_dir = None if corpus_dir is None else Path(corpus_dir)
        self.output_dir = None if output_dir is None else Path(output_dir)

    def layout_error(self, problem: str) -> CorpusLayoutError:
        """``problem`` (what is missing or wrong, with its path) as one line with the expected layout."""
        return CorpusLayoutError(f"{self.name}: {problem}; expected {self.layout}")

    @abstractmethod
    def dialogues(self) -> Iterator[Dialogue]:
        """Yield the corpus's dialogues in a deterministic order."""

    def prepare(self, workers: int = 1, progress: bool = True) -> None:
        """One-off work before the corpus is read (a TTS source normalises its text into a cache),
        in ``workers`` processes, so that shard processes started afterwards find it done; a
        progress bar unless ``progress`` is false. The default has nothing to do."""

    def voicing_seconds(self, turn: Turn) -> float:
        """Estimated CPU seconds ``ensure_audio`` spends on this turn: 0 for recorded corpora (the
        audio exists); a TTS source gives its engines' cost. Used to balance the shards."""
        return 0.0

    def ensure_audio(self, dialogue: Dialogue, turn_indices: list[int]) -> None:
        """Make sure the audio of these turns exists on disk.

        Recorded corpora have it already (this default checks the files); a TTS source voices
        only the turns a segment needs, into its cache, here.
        """
        for i in turn_indices:
            path = dialogue.turns[i].audio.path
            if not Path(path).is_file():
                raise FileNotFoundError(
                    f"{self.name} dialogue {dialogue.dialogue_id} turn {i}: missing audio file {path}"
                )

    def speaker_pool(
        self,
        dialogues: list[Dialogue],
        clips_per_speaker: int = 4,
        min_seconds: float = 1.5,
        share: tuple[int, int] = (0, 1),
    ) -> dict[str, tuple[str, list[AudioSpan]]]:
        """Substitute speakers for voice conversion: ``{speaker: (gender, clips)}``.

        This default takes each speaker of ``dialogues`` with up to ``clips_per_speaker`` of its
        turns of at least ``min_seconds``; a TTS source overrides it with its voice bank and
        voices it, starting with its ``share`` (worker i of n) when n processes build at once.
        """
        pool: dict[str, tuple[str, list[AudioSpan]]] = {}
        for dialogue in dialogues:
            for turn in dialogue.turns:
                gender, clips = pool.setdefault(turn.speaker, (turn.gender, []))
                if len(clips) < clips_per_speaker and turn.duration >= min_seconds:
                    clips.append(turn.audio)
        return {name: entry for name, entry in pool.items() if entry[1]}


@contextmanager
def lhotse_bars(shown: bool, *modules):
    """lhotse's recipe code in ``modules`` with its progress bars, or (``--no-progress``) without:
    it takes no option for them, so each module's ``tqdm`` is a disabled one while it runs."""
    bars = [(module, module.tqdm) for module in modules]
    if not shown:
        for module, bar in bars:
            module.tqdm = partial(bar, disable=True)
    try:
        yield
    finally:
        for module, bar in bars:
            module.tqdm = bar
