"""AMI Meeting Corpus (Carletta et al. 2005): 100 h of meetings, four participants on close-talk headsets.

Accepted local layout (as lhotse's AMI recipe downloads it)::

    <corpus_dir>/**/<M>/audio/<M>.Headset-<ch>.wav   mic="ihm": one mono file per headset channel
    <corpus_dir>/**/<M>/audio/<M>.Mix-Headset.wav    mic="ihm-mix"
    <corpus_dir>/**/<M>/audio/<M>.Array1-01.wav      mic="sdm"
    <corpus_dir>/ami_public_manual_1.6.2.zip         the NXT manual annotations, or that name as an
                                                     extracted folder, or ``annotations_dir`` (folder or zip)
                                                     holding corpusResources/meetings.xml, words/, segments/

A zip is extracted once into ``output_dir`` (without one, lhotse extracts it next to itself). One
dialogue per meeting (id = meeting name), in the order of ``meetings``; the default is the paper's 16 evaluation meetings (the ``full-corpus-asr``
test partition). Annotations go through lhotse's AMI building blocks (``parse_ami_annotations``
with ``normalize="none"``, ``keep_punctuation=True``, then its supervision preparation); we do not
call ``prepare_ami`` itself because it asserts that every train/dev/test part has recordings, so
it fails on a copy that holds only the evaluation meetings.

Turns: lhotse cuts every NXT segment at its full stops and drops the stops; we put a full stop
back at the end of each piece that ends without punctuation. Pieces are then ordered by start
time and a speaker's consecutive pieces (no other speaker's piece starting in between) merge into
one turn when the pause between them is at most ``max_pause`` seconds. Overlapping speech stays
as it is: a turn's span may overlap its neighbours'. A turn's audio is ``(file, start, end)`` on
the speaker's headset file (``ihm``) or on the single mixed/distant file; all are mono, so
``channel`` is None. Speaker = AMI global name (e.g. ``FEE013``, stable across meetings); gender
from its first letter (F/M), as lhotse does.
"""

from __future__ import annotations

import shutil
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf
from lhotse import RecordingSet, validate_recordings_and_supervisions
from lhotse.qa import fix_manifests
from lhotse.recipes import ami as lhotse_ami

from .base import AudioSpan, Dialogue, DialogueSource, Turn, lhotse_bars

#: The 16 evaluation meetings the paper uses (lhotse's ``full-corpus-asr`` test partition).
AMI_EVAL_MEETINGS = tuple(
    f"{session}{part}" for session in ("ES2004", "IS1009", "TS3003", "EN2002") for part in "abcd"
)
_SINGLE_STREAM = {"ihm-mix": "Mix-Headset", "sdm": "Array1-01"}
MICS = ("ihm", *_SINGLE_STREAM)
_GENDERS = {"F": "female", "M": "male"}
_ANNOTATIONS = "ami_public_manual_1.6.2"


@dataclass
class _Piece:
    speaker: str
    gender: str
    text: str
    start: float
    end: float
    path: Path


class AMI(DialogueSource):
    name = "ami"
    license = "CC-BY-4.0"
    hub_license = "cc-by-4.0"
    homepage = "https://groups.inf.ed.ac.uk/ami/corpus/"
    citation = (
        "@inproceedings{carletta2005ami,\n"
        "  title={The AMI Meeting Corpus: A Pre-announcement},\n"
        "  author={Carletta, Jean and others},\n"
        "  booktitle={Machine Learning for Multimodal Interaction (MLMI)},\n"
        "  pages={28--39},\n  year={2005}\n}"
    )
    layout = (
        "<corpus_dir>/**/<meeting>/audio/<meeting>.Headset-<n>.wav (or .Mix-Headset.wav, .Array1-01.wav) "
        f"for each meeting and the NXT annotations <corpus_dir>/{_ANNOTATIONS}.zip (or that folder) with "
        "corpusResources/meetings.xml, words/ and segments/"
    )

    def __init__(
        self,
        corpus_dir: str | Path,
        output_dir: str | Path | None = None,
        annotations_dir: str | Path | None = None,
        mic: str = "ihm",
        meetings: Sequence[str] = AMI_EVAL_MEETINGS,
        max_pause: float = 1.0,
    ):
        """``output_dir``: where an annotations zip is extracted (None: next to the zip, as lhotse does)."""
        super().__init__(corpus_dir, output_dir)
        if mic not in MICS:
            raise ValueError(f"AMI: mic must be one of {MICS}, got {mic!r}")
        self.annotations = Path(annotations_dir) if annotations_dir is not None else self._default_annotations()
        self.mic = mic
        self.meetings = tuple(meetings)
        self.max_pause = max_pause
        channels = self._agent_channels()
        self._audio = {m: self._audio_paths(m, channels[m]) for m in self.meetings}

    def dialogues(self) -> Iterator[Dialogue]:
        with lhotse_bars(self.progress, lhotse_ami):
            audio = RecordingSet.from_recordings(r for m in self.meetings for r in self._recordings(m, self._audio[m]))
            try:
                annotations = lhotse_ami.parse_ami_annotations(
                    self._annotation_folder(), normalize="none", keep_punctuation=True
                )
            except ET.ParseError as e:
                raise self.layout_error(
                    f"corrupt XML in the words/ or segments/ files of {self.annotations} ({e})"
                ) from e
            if self.mic == "ihm":
                supervisions = lhotse_ami.prepare_supervision_ihm(audio, annotations)
            else:
                supervisions = lhotse_ami.prepare_supervision_other(audio, annotations)
        silent = sorted(set(self.meetings) - {s.recording_id for s in supervisions})
        if silent:
            raise self.layout_error(
                f"no transcribed speech for meetings {silent} in {self.annotations} "
                f"(words/ and segments/ files missing?)"
            )
        audio, supervisions = fix_manifests(audio, supervisions)
        validate_recordings_and_supervisions(audio, supervisions)
        by_meeting = defaultdict(list)
        for s in supervisions:
            by_meeting[s.recording_id].append(s)
        for meeting in self.meetings:
            yield Dialogue(
                meeting, self.name, self._turns(audio[meeting], by_meeting[meeting]), meta={"mic": self.mic}
            )

    def _turns(self, recording, supervisions) -> tuple[Turn, ...]:
        paths = {src.channels[0]: Path(src.source) for src in recording.sources}
        merged: list[_Piece] = []
        for s in sorted(supervisions, key=lambda s: (s.start, s.end, s.speaker)):
            text = _with_full_stop(" ".join(s.text.split()))
            if not text:
                continue
            if s.gender not in _GENDERS:
                raise ValueError(f"AMI {recording.id}: speaker {s.speaker!r} has no F/M gender letter")
            path = paths[s.channel] if self.mic == "ihm" else paths[0]
            last = merged[-1] if merged else None
            if last is not None and last.speaker == s.speaker and s.start - last.end <= self.max_pause:
                last.text, last.end = f"{last.text} {text}", max(last.end, s.end)
            else:
                merged.append(_Piece(s.speaker, _GENDERS[s.gender], text, s.start, s.end, path))
        return tuple(Turn(p.speaker, p.gender, p.text, AudioSpan(p.path, p.start, p.end)) for p in merged)

    def _default_annotations(self) -> Path:
        for candidate in (self.corpus_dir / _ANNOTATIONS, self.corpus_dir / f"{_ANNOTATIONS}.zip"):
            if candidate.exists():
                return candidate
        raise self.layout_error(
            f"no annotations: neither {self.corpus_dir / _ANNOTATIONS} nor "
            f"{self.corpus_dir / _ANNOTATIONS}.zip exists; put AMI's manual annotations zip (or its extracted folder) there"
        )

    def _annotation_folder(self) -> Path:
        """What lhotse reads: an annotations zip is extracted once into ``output_dir``, so the
        corpus folder is never written (lhotse alone would extract it next to the zip)."""
        if self.annotations.suffix != ".zip" or self.output_dir is None:
            return self.annotations
        folder = self.output_dir / _ANNOTATIONS
        if not folder.is_dir():
            self.output_dir.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{_ANNOTATIONS}-", dir=self.output_dir))
            with zipfile.ZipFile(self.annotations) as z:
                z.extractall(tmp)
            try:
                tmp.rename(folder)
            except OSError:  # another process extracted it first
                shutil.rmtree(tmp)
        return folder

    def _agent_channels(self) -> dict[str, list[int]]:
        """{meeting: its speakers' headset channels} from meetings.xml, for the wanted meetings, after
        checking that the annotation files lhotse will read are there."""
        member = "corpusResources/meetings.xml"
        if self.annotations.suffix == ".zip":
            if not self.annotations.is_file():
                raise self.layout_error(f"missing annotations zip {self.annotations}")
            try:
                with zipfile.ZipFile(self.annotations) as z:
                    names = set(z.namelist())
                    meetings_xml = z.read(member) if member in names else None
            except zipfile.BadZipFile as e:
                raise self.layout_error(f"{self.annotations} is not a zip file ({e})") from e
        else:
            names = {p.relative_to(self.annotations).as_posix() for p in self.annotations.glob("*/*.xml")}
            meetings_xml = (self.annotations / member).read_bytes() if member in names else None
        if meetings_xml is None:
            raise self.layout_error(f"missing {self.annotations}/{member}")
        try:
            agents = {
                m.attrib["observation"]: {s.attrib["nxt_agent"]: int(s.attrib["channel"]) for s in m}
                for m in ET.fromstring(meetings_xml)
            }
        except (ET.ParseError, KeyError, ValueError) as e:
            raise self.layout_error(f"{self.annotations}/{member} is not AMI's meetings.xml ({e!r})") from e
        unknown = [m for m in self.meetings if m not in agents]
        if unknown:
            raise self.layout_error(f"meetings {unknown} are not in {self.annotations}/{member}")
        for m in self.meetings:
            for agent in agents[m]:
                words = f"words/{m}.{agent}.words.xml"
                if f"segments/{m}.{agent}.segments.xml" in names and words not in names:
                    raise self.layout_error(f"missing {self.annotations}/{words}")
        return {m: sorted(agents[m].values()) for m in self.meetings}

    def _audio_paths(self, meeting: str, channels: list[int]) -> list[Path]:
        """The meeting's audio files for ``mic``, after checking every needed one exists."""
        where = f"{self.corpus_dir}/**/{meeting}/audio"
        stream = _SINGLE_STREAM.get(self.mic)
        pattern = f"{meeting}.Headset-[0-9].wav" if stream is None else f"{meeting}.{stream}.wav"
        paths = sorted(self.corpus_dir.glob(f"**/{meeting}/audio/{pattern}"))
        needed = [f"{meeting}.Headset-{ch}.wav" for ch in channels] if stream is None else [pattern]
        missing = sorted(set(needed) - {p.name for p in paths})
        if missing:
            raise self.layout_error(f"meeting {meeting}: missing audio {', '.join(f'{where}/{n}' for n in missing)}")
        return paths

    def _recordings(self, meeting: str, paths: list[Path]):
        """The meeting's lhotse Recording(s), after checking every file opens."""
        for p in paths:
            try:
                sf.info(p)
            except sf.LibsndfileError as e:
                raise self.layout_error(f"meeting {meeting}: unreadable audio {p} ({e})") from e
        if self.mic in _SINGLE_STREAM:
            return lhotse_ami.prepare_audio_single(paths[:1], self.mic)
        recordings = lhotse_ami.prepare_audio_grouped(paths)
        # lhotse numbers headset sources by sorted position; a gap (Headset-1 absent, Headset-2 present)
        # would put a speaker on the wrong file.
        for src in recordings[meeting].sources:
            if Path(src.source).name != f"{meeting}.Headset-{src.channels[0]}.wav":
                raise self.layout_error(
                    f"meeting {meeting}: headset files under {self.corpus_dir}/**/{meeting}/audio "
                    f"are not numbered 0..n-1 without gaps; found {[p.name for p in paths]}"
                )
        return recordings


def _with_full_stop(text: str) -> str:
    """Restore the full stop lhotse drops where it splits a segment (see the module docstring)."""
    return text if not text or text[-1] in ".?!,;:-" else text + "."
