"""Bazinga! (Lerner et al., LREC 2022): TV-series and film soundtracks with time-coded manual transcripts.

The Hub copy (``bazinga/bazinga``) is gated and loads through a script that ``datasets`` >= 4
cannot run, so this module reads a plain local export instead; whoever has access writes it
(e.g. with ``datasets<4`` and the loader's ``audio=True``). Accepted layout::

    <data_dir>/speakers.csv                        header ``speaker,gender``; gender female|male
    <data_dir>/transcripts/<episode>.csv           header ``speaker,start,end,text``; one row per
                                                   speech turn, times in seconds on the episode audio
    <data_dir>/audio/<episode>.{wav,flac,ogg,mp3}  the episode soundtrack (any rate)

``<episode>`` is Bazinga's identifier, e.g. ``TheBigBangTheory.Season01.Episode01``. One dialogue
per episode, in identifier order; turns in order of start time (rows with empty text are
skipped), each a ``(soundtrack, start, end)`` span with ``channel=None`` (all channels; mix a
multichannel soundtrack down). Speaker labels are global: every label in a transcript needs a
row in ``speakers.csv``, and labels must be unique across series (prefix them with the series if
two series share a name).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import soundfile as sf

from .base import AudioSpan, Dialogue, DialogueSource, Turn

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".mp3")
_GENDERS = ("female", "male")
_END_TOLERANCE = 0.1  # seconds a turn may run past the end of the soundtrack (then clipped)


class Bazinga(DialogueSource):
    name = "bazinga"
    license = "unknown: gated on the Hub; audio from commercial TV series and films"
    homepage = "https://huggingface.co/datasets/bazinga/bazinga"
    citation = (
        "@inproceedings{lerner2022bazinga,\n"
        "  title={Bazinga! A Dataset for Multi-Party Dialogues Structuring},\n"
        "  author={Lerner, Paul and Bergo{\\\"e}nd, Juliette and Guinaudeau, Camille and Bredin, Herv{\\'e} "
        "and others},\n"
        "  booktitle={Proceedings of LREC 2022},\n  pages={3434--3441},\n  year={2022}\n}"
    )

    def __init__(self, data_dir: str | Path):
        self.data_dir = Path(data_dir)

    def dialogues(self) -> Iterator[Dialogue]:
        genders = self._genders()
        transcripts = sorted((self.data_dir / "transcripts").glob("*.csv"))
        if not transcripts:
            raise FileNotFoundError(f"Bazinga: no transcripts {self.data_dir / 'transcripts'}/<episode>.csv")
        for transcript in transcripts:
            episode = transcript.stem
            audio = self._audio(episode)
            try:
                duration = sf.info(audio).duration
            except sf.LibsndfileError as e:
                raise ValueError(f"Bazinga: unreadable audio {audio} ({e})") from e
            turns = []
            for where, row in _rows(transcript, ("speaker", "start", "end", "text")):
                if not row["text"].strip():
                    continue
                try:
                    start, end = float(row["start"]), float(row["end"])
                except ValueError:
                    raise ValueError(f"{where}: start/end {row['start']!r}/{row['end']!r} are not numbers") from None
                if not 0 <= start < end <= duration + _END_TOLERANCE:
                    raise ValueError(f"{where}: turn {start}-{end} s is outside the {duration:.2f} s audio {audio}")
                if row["speaker"] not in genders:
                    raise ValueError(f"{where}: speaker {row['speaker']!r} has no row in {self.data_dir / 'speakers.csv'}")
                turns.append(Turn(row["speaker"], genders[row["speaker"]], row["text"].strip(),
                                  AudioSpan(audio, start, min(end, duration))))
            turns.sort(key=lambda t: (t.audio.start, t.audio.end))
            yield Dialogue(episode, self.name, tuple(turns))

    def _genders(self) -> dict[str, str]:
        path = self.data_dir / "speakers.csv"
        genders = {}
        for where, row in _rows(path, ("speaker", "gender")):
            gender = row["gender"].strip().lower()
            if gender not in _GENDERS:
                raise ValueError(f"{where}: gender {row['gender']!r} is not one of {_GENDERS}")
            genders[row["speaker"]] = gender
        return genders

    def _audio(self, episode: str) -> Path:
        for suffix in AUDIO_SUFFIXES:
            path = self.data_dir / "audio" / f"{episode}{suffix}"
            if path.is_file():
                return path
        raise FileNotFoundError(f"Bazinga: missing audio {self.data_dir / 'audio' / episode}"
                                f"{{{','.join(AUDIO_SUFFIXES)}}} for {self.data_dir / 'transcripts' / episode}.csv")


def _rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[str, dict]]:
    """``("file:line", row)`` for each row of a CSV file that must have ``columns``."""
    if not path.is_file():
        raise FileNotFoundError(f"Bazinga: missing {path}")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"Bazinga: {path} lacks column(s) {missing}; header is {reader.fieldnames}")
        for row in reader:
            if any(row[c] is None for c in columns):
                raise ValueError(f"Bazinga: {path}:{reader.line_num}: too few fields")
            yield f"Bazinga: {path}:{reader.line_num}", row
