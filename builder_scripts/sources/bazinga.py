"""Bazinga! (Lerner et al., LREC 2022): TV-series and film soundtracks with time-coded manual transcripts.

The Hub copy (``bazinga/bazinga``) is gated and loads through a script that ``datasets`` >= 4
cannot run, so this module reads a plain local export instead; whoever has access writes it
(e.g. with ``datasets<4`` and the loader's ``audio=True``). Accepted layout::

    <corpus_dir>/speakers.csv                        header ``speaker,gender``; gender female|male
    <corpus_dir>/transcripts/<episode>.csv           header ``speaker,start,end,text``; one row per
                                                     speech turn, times in seconds on the episode audio
    <corpus_dir>/audio/<episode>.{wav,flac,ogg,mp3}  the episode soundtrack (any rate)

``<episode>`` is Bazinga's identifier, e.g. ``TheBigBangTheory.Season01.Episode01``. One dialogue
per episode, in identifier order; turns in order of start time (rows with empty text are
skipped), each a ``(soundtrack, start, end)`` span with ``channel=None`` (all channels; mix a
multichannel soundtrack down). Speaker labels are global: every label in a transcript needs a
row in ``speakers.csv``, and labels must be unique across series (prefix them with the series if
two series share a name). The source derives nothing, so ``output_dir`` is not used.
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
    hub_license = "unknown"
    homepage = "https://huggingface.co/datasets/bazinga/bazinga"
    citation = (
        "@inproceedings{lerner2022bazinga,\n"
        "  title={Bazinga! A Dataset for Multi-Party Dialogues Structuring},\n"
        "  author={Lerner, Paul and Bergo{\\\"e}nd, Juliette and Guinaudeau, Camille and Bredin, Herv{\\'e} "
        "and others},\n"
        "  booktitle={Proceedings of LREC 2022},\n  pages={3434--3441},\n  year={2022}\n}"
    )
    layout = (
        "<corpus_dir>/speakers.csv (speaker,gender), <corpus_dir>/transcripts/<episode>.csv "
        "(speaker,start,end,text) and <corpus_dir>/audio/<episode>.{wav,flac,ogg,mp3}"
    )

    def __init__(self, corpus_dir: str | Path, output_dir: str | Path | None = None):
        super().__init__(corpus_dir, output_dir)
        self._genders = self._read_genders()
        self._transcripts = sorted((self.corpus_dir / "transcripts").glob("*.csv"))
        if not self._transcripts:
            raise self.layout_error(f"no transcripts {self.corpus_dir / 'transcripts'}/<episode>.csv")
        self._audio = {t.stem: self._audio_of(t.stem) for t in self._transcripts}

    def dialogues(self) -> Iterator[Dialogue]:
        for transcript in self._transcripts:
            episode = transcript.stem
            audio = self._audio[episode]
            try:
                duration = sf.info(audio).duration
            except sf.LibsndfileError as e:
                raise self.layout_error(f"unreadable audio {audio} ({e})") from e
            turns = []
            for where, row in self._rows(transcript, ("speaker", "start", "end", "text")):
                if not row["text"].strip():
                    continue
                try:
                    start, end = float(row["start"]), float(row["end"])
                except ValueError:
                    raise self.layout_error(
                        f"{where}: start/end {row['start']!r}/{row['end']!r} are not numbers"
                    ) from None
                if not 0 <= start < end <= duration + _END_TOLERANCE:
                    raise self.layout_error(
                        f"{where}: turn {start}-{end} s is outside the {duration:.2f} s audio {audio}"
                    )
                if row["speaker"] not in self._genders:
                    raise self.layout_error(
                        f"{where}: speaker {row['speaker']!r} has no row in {self.corpus_dir / 'speakers.csv'}"
                    )
                turns.append(
                    Turn(
                        row["speaker"],
                        self._genders[row["speaker"]],
                        row["text"].strip(),
                        AudioSpan(audio, start, min(end, duration)),
                    )
                )
            turns.sort(key=lambda t: (t.audio.start, t.audio.end))
            yield Dialogue(episode, self.name, tuple(turns))

    def _read_genders(self) -> dict[str, str]:
        genders = {}
        for where, row in self._rows(self.corpus_dir / "speakers.csv", ("speaker", "gender")):
            gender = row["gender"].strip().lower()
            if gender not in _GENDERS:
                raise self.layout_error(f"{where}: gender {row['gender']!r} is not one of {_GENDERS}")
            genders[row["speaker"]] = gender
        return genders

    def _audio_of(self, episode: str) -> Path:
        for suffix in AUDIO_SUFFIXES:
            path = self.corpus_dir / "audio" / f"{episode}{suffix}"
            if path.is_file():
                return path
        raise self.layout_error(
            f"missing audio {self.corpus_dir / 'audio' / episode}"
            f"{{{','.join(AUDIO_SUFFIXES)}}} for {self.corpus_dir / 'transcripts' / episode}.csv"
        )

    def _rows(self, path: Path, columns: tuple[str, ...]) -> Iterator[tuple[str, dict]]:
        """``("file:line", row)`` for each row of a CSV file that must have ``columns``."""
        if not path.is_file():
            raise self.layout_error(f"missing {path}")
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            try:
                missing = [c for c in columns if c not in (reader.fieldnames or [])]
                if missing:
                    raise self.layout_error(f"{path} lacks column(s) {missing}; its header is {reader.fieldnames}")
                for row in reader:
                    if any(row[c] is None for c in columns):
                        raise self.layout_error(f"{path}:{reader.line_num}: too few fields")
                    yield f"{path}:{reader.line_num}", row
            except (UnicodeDecodeError, csv.Error) as e:
                raise self.layout_error(
                    f"{path} is not a UTF-8 CSV file with columns {','.join(columns)} ({e})"
                ) from e
