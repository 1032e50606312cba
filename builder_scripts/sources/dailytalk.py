"""DailyTalk (Lee, Park & Kim, ICASSP 2023): 2,541 DailyDialog conversations re-recorded in a studio.

Accepted local layout, the corpus zip extracted (what lhotse's ``prepare_daily_talk`` reads)::

    <corpus_dir>/metadata.json                  {"<d>": {"<u>": {"speaker": 0|1, "text", "index", ...}}}
    <corpus_dir>/data/<d>/<u>_<spk>_d<d>.wav    one file per turn (the .txt beside it is not read)

Dialogues come in numeric order of ``<d>`` (id ``"<d>"``), turns in numeric order of ``<u>``;
a turn's audio is its whole wav, ``[0, duration)``. The whole corpus has two voices, speakers
``dailytalk_spk0`` and ``dailytalk_spk1``. Genders follow lhotse's recipe, speaker 1 female and
speaker 0 male; we have not checked that mapping against the paper. With ``output_dir`` the
lhotse manifests are written there (by ``prepare``, or on the first read) and reused after.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import soundfile as sf
from lhotse import load_manifest
from lhotse.audio import recording_set as lhotse_recordings
from lhotse.recipes.daily_talk import prepare_daily_talk

from .base import AudioSpan, Dialogue, DialogueSource, Turn, lhotse_bars

_RECORDING_ID = re.compile(r"dailytalk_(?P<u>\d+)_(?P<spk>\d+)_d(?P<d>\d+)")
_GENDERS = {"F": "female", "M": "male"}
_MANIFESTS = ("dailytalk_recordings_all.jsonl.gz", "dailytalk_supervisions_all.jsonl.gz")


class DailyTalk(DialogueSource):
    name = "dailytalk"
    license = "CC-BY-SA-4.0"
    hub_license = "cc-by-sa-4.0"
    homepage = "https://github.com/keonlee9420/DailyTalk"
    citation = (
        "@inproceedings{lee2023dailytalk,\n"
        "  title={DailyTalk: Spoken Dialogue Dataset for Conversational Text-to-Speech},\n"
        "  author={Lee, Keon and Park, Kyumin and Kim, Daeyoung},\n"
        "  booktitle={ICASSP 2023},\n  year={2023},\n  note={arXiv:2207.01063}\n}"
    )
    layout = "<corpus_dir>/metadata.json and <corpus_dir>/data/<d>/<u>_<spk>_d<d>.wav (the extracted DailyTalk zip)"

    def __init__(self, corpus_dir: str | Path, output_dir: str | Path | None = None):
        super().__init__(corpus_dir, output_dir)
        if not self._cached():
            self._check_layout()

    def prepare(self, workers: int = 1, progress: bool = True) -> None:
        """Write the lhotse manifests into ``output_dir`` once, before shard processes read them."""
        if self.output_dir is not None and not self._cached():
            self._manifests(progress)

    def dialogues(self) -> Iterator[Dialogue]:
        recordings, supervisions = self._manifests(self.progress)
        turns: dict[int, dict[int, Turn]] = defaultdict(dict)
        for sup in supervisions:
            ids = _RECORDING_ID.fullmatch(sup.recording_id)
            recording = recordings[sup.recording_id]
            turns[int(ids["d"])][int(ids["u"])] = Turn(
                speaker=sup.speaker,
                gender=_GENDERS[sup.gender],
                text=sup.text,
                audio=AudioSpan(Path(recording.sources[0].source), 0.0, recording.duration),
            )
        for d in sorted(turns):
            yield Dialogue(str(d), self.name, tuple(turns[d][u] for u in sorted(turns[d])))

    def _cached(self) -> bool:
        return self.output_dir is not None and all((self.output_dir / f).is_file() for f in _MANIFESTS)

    def _manifests(self, progress: bool):
        if self._cached():
            return tuple(load_manifest(self.output_dir / f) for f in _MANIFESTS)
        with lhotse_bars(progress, lhotse_recordings):  # its scan of the wavs has a bar
            return prepare_daily_talk(self.corpus_dir, output_dir=self.output_dir)

    def _check_layout(self) -> None:
        """Raise ``CorpusLayoutError`` naming the first missing or unreadable file before lhotse reads the corpus."""
        meta_path, data = self.corpus_dir / "metadata.json", self.corpus_dir / "data"
        for path, present in ((meta_path, meta_path.is_file()), (data, data.is_dir())):
            if not present:
                raise self.layout_error(f"missing {path}")
        try:
            meta = json.loads(meta_path.read_bytes())
            utterances = [(d, u, utt["speaker"]) for d, dialog in meta.items() for u, utt in dialog.items()]
        except (ValueError, AttributeError, KeyError, TypeError) as e:
            raise self.layout_error(f"{meta_path} is not the DailyTalk metadata ({e!r})") from e
        if not utterances:
            raise self.layout_error(f"{meta_path} lists no utterances")
        for d, u, spk in utterances:
            wav = data / d / f"{u}_{spk}_d{d}.wav"
            if not wav.is_file():
                raise self.layout_error(f"dialogue {d} utterance {u}: missing {wav}")
            try:
                sf.info(wav)
            except sf.LibsndfileError as e:
                raise self.layout_error(f"unreadable audio {wav} ({e})") from e
