"""Behavior-SD (Lee, Kim & Kim, NAACL 2025): 108K synthesised full-duplex dialogues with behaviour labels.

Accepted local layout (``corpus_dir``): a local copy of the Hub dataset ``yhytoto12/behavior-sd``, i.e. a folder
with ``.parquet`` files or ``datasets``-style ``.arrow`` files (stream or file format) anywhere
below it. With ``split`` set, a file belongs to the split when a folder on its path is named
``<split>`` or its name holds ``<split>`` between ``-``/``_``/``.`` separators (``data/test-00000-
of-00002.parquet``, ``test/data-00000-of-00001.arrow``). Each row is one dialogue with the card's
fields ``soda_split``, ``soda_index``, ``utterances`` (``uttr_idx``, ``speaker_idx``, ``tts_text``,
``start_time``, ``end_time`` in seconds on the dialogue timeline), ``tts_speaker_ids`` and
``tts_genders`` (``"female"``/``"male"``), plus one audio column holding the whole dialogue as a
``{bytes, path}`` struct (the ``datasets`` Audio storage; ``path`` is read, relative to the data
file, only when ``bytes`` is empty). The card does not name that column, so it is found by type
or given as ``audio_column``.

Each dialogue's audio is decoded with soundfile and cached as
``<output_dir>/<split>/<soda_split>-<soda_index>.wav`` (``all`` for ``split=None``; a rerun reuses
the wavs, so clear them if the data files change).
Turns are spans of that wav, in ``uttr_idx`` order, and may overlap. Mono audio gives
``channel=None``; audio with one channel per speaker (not confirmed for this corpus) gives
``channel=speaker_idx``; any other channel count is an error. Speaker = the
TTS voice id ``tts_speaker_ids[speaker_idx]``, which is what identifies the voice across
dialogues; gender = ``tts_genders[speaker_idx]``.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf
from tqdm.auto import tqdm

from speakersleuth.speech.files import atomic_path

from .base import AudioSpan, Dialogue, DialogueSource, Turn

REQUIRED_COLUMNS = ("soda_split", "soda_index", "utterances", "tts_speaker_ids", "tts_genders")
_GENDERS = ("female", "male")
_END_TOLERANCE = 0.1  # seconds an utterance may run past the end of the audio (then clipped)
_BATCH_ROWS = 16


class BehaviorSD(DialogueSource):
    name = "behavior_sd"
    license = "CC-BY-4.0"
    hub_license = "cc-by-4.0"
    homepage = "https://huggingface.co/datasets/yhytoto12/behavior-sd"
    citation = (
        "@inproceedings{lee2025behaviorsd,\n"
        "  title={Behavior-SD: Behaviorally Aware Spoken Dialogue Generation with Large Language Models},\n"
        "  author={Lee, Sehun and Kim, Kang-wook and Kim, Gunhee},\n"
        "  booktitle={Proceedings of NAACL 2025},\n  year={2025}\n}"
    )
    layout = (
        "a copy of the Hub dataset yhytoto12/behavior-sd: <corpus_dir>/**/*.parquet or *.arrow, "
        "the split's files named <split>-*.parquet or under a <split>/ folder"
    )

    def __init__(
        self,
        corpus_dir: str | Path,
        output_dir: str | Path,
        split: str | None = "test",
        audio_column: str | None = None,
    ):
        super().__init__(corpus_dir, output_dir)
        self.split = split
        self.wav_dir = self.output_dir / (split or "all")
        self.audio_column = audio_column
        self._data_files = self._files()

    def dialogues(self) -> Iterator[Dialogue]:
        seen: set[str] = set()
        for path in self._data_files:
            schema, num_rows, batches = self._open(path)
            audio_column = self._find_audio_column(path, schema)
            rows = (row for batch in batches([*REQUIRED_COLUMNS, audio_column]) for row in batch.to_pylist())
            for row in tqdm(
                rows, total=num_rows, desc=f"Behavior-SD {path.name}", unit="dialogue", disable=not self.progress
            ):
                dialogue = self._dialogue(row, row[audio_column], path)
                if dialogue.dialogue_id in seen:
                    raise self.layout_error(f"dialogue {dialogue.dialogue_id} appears twice (again in {path})")
                seen.add(dialogue.dialogue_id)
                yield dialogue

    def _files(self) -> list[Path]:
        word = re.compile(rf"(^|[-_.]){re.escape(self.split)}([-_.]|$)") if self.split else None
        files = sorted(
            p
            for p in self.corpus_dir.rglob("*")
            if p.suffix in (".parquet", ".arrow")
            and p.is_file()
            and (word is None or self.split in p.relative_to(self.corpus_dir).parts[:-1] or word.search(p.stem))
        )
        if not files:
            raise self.layout_error(f"no .parquet/.arrow files for split {self.split!r} under {self.corpus_dir}")
        return files

    def _find_audio_column(self, path: Path, schema: pa.Schema) -> str:
        missing = [c for c in REQUIRED_COLUMNS if c not in schema.names]
        if missing:
            raise self.layout_error(f"{path} lacks column(s) {missing}; it has {schema.names}")
        if self.audio_column is not None:
            if self.audio_column not in schema.names:
                raise self.layout_error(f"{path} has no audio column {self.audio_column!r}; it has {schema.names}")
            return self.audio_column
        found = [
            f.name
            for f in schema
            if pa.types.is_struct(f.type)
            and {"bytes", "path"} <= {f.type.field(i).name for i in range(f.type.num_fields)}
        ]
        if len(found) != 1:
            raise self.layout_error(
                f"{path} has {len(found)} audio columns ({{bytes, path}} structs: {found}) "
                f"among {schema.names}; the dialogue audio must be exactly one"
            )
        return found[0]

    def _dialogue(self, row: dict, audio: dict | None, path: Path) -> Dialogue:
        dialogue_id = f"{row['soda_split']}-{row['soda_index']}"
        where = f"{path} dialogue {dialogue_id}"
        wav = self.wav_dir / f"{dialogue_id}.wav"
        if not wav.is_file():
            self._decode_to_wav(audio, path.parent, wav, where)
        info = sf.info(wav)
        speakers, genders = row["tts_speaker_ids"], row["tts_genders"]
        if info.channels not in (1, len(speakers)):
            raise self.layout_error(f"{where}: audio has {info.channels} channels for {len(speakers)} speakers")
        turns = []
        for u in sorted(row["utterances"], key=lambda u: u["uttr_idx"]):
            spk, start, end = u["speaker_idx"], u["start_time"], u["end_time"]
            if genders[spk] not in _GENDERS:
                raise self.layout_error(f"{where}: tts_genders[{spk}] is {genders[spk]!r}, not one of {_GENDERS}")
            if not 0 <= start < end <= info.duration + _END_TOLERANCE:
                raise self.layout_error(
                    f"{where}: utterance {u['uttr_idx']} spans {start}-{end} s outside the {info.duration:.2f} s audio"
                )
            channel = None if info.channels == 1 else spk
            span = AudioSpan(wav, float(start), float(min(end, info.duration)), channel)
            turns.append(Turn(speakers[spk], genders[spk], u["tts_text"], span))
        return Dialogue(dialogue_id, self.name, tuple(turns))

    def _open(self, path: Path) -> tuple[pa.Schema, int, Callable[[list[str]], Iterator[pa.RecordBatch]]]:
        """(schema, row count, columns -> record batches) of one parquet or Arrow IPC file."""
        try:
            if path.suffix == ".parquet":
                pf = pq.ParquetFile(path)
                return pf.schema_arrow, pf.metadata.num_rows, lambda cols: pf.iter_batches(_BATCH_ROWS, columns=cols)
            source = pa.memory_map(str(path))
            try:
                table = pa.ipc.open_stream(source).read_all()
            except pa.ArrowInvalid:
                table = pa.ipc.open_file(source).read_all()
            return table.schema, table.num_rows, lambda cols: iter(table.select(cols).to_batches(_BATCH_ROWS))
        except (pa.ArrowException, OSError) as e:
            raise self.layout_error(f"cannot read {path} as {path.suffix[1:]} ({e})") from e

    def _decode_to_wav(self, audio: dict | None, base: Path, wav: Path, where: str) -> None:
        """Decode a ``{bytes, path}`` audio cell and write it, atomically, as 16-bit wav."""
        if audio and audio.get("bytes"):
            source, name = io.BytesIO(audio["bytes"]), f"the embedded bytes ({audio.get('path')})"
        elif audio and audio.get("path"):
            source = name = base / audio["path"]
            if not source.is_file():
                raise self.layout_error(f"{where}: missing audio file {source}")
        else:
            raise self.layout_error(f"{where}: empty audio cell")
        try:
            data, sr = sf.read(source, dtype="float32", always_2d=True)
        except sf.LibsndfileError as e:
            raise self.layout_error(f"{where}: cannot decode {name} ({e})") from e
        with atomic_path(wav) as tmp:  # shard processes may decode it at once
            sf.write(tmp, data, sr, subtype="PCM_16", format="WAV")
