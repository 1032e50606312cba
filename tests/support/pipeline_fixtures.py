"""Tiny corpora for builder tests, spoken by speech-like synthetic voices, one wav per turn.

``SpeechLikeCorpus`` implements ``DialogueSource`` like any corpus module, so the whole build
pipeline (segments, speaker bank, WORLD conversion, verification, publishing) runs on it in
seconds; ``write_dailytalk_speechlike`` writes DailyTalk's real layout with such voices, for
``builder_scripts.sources.dailytalk``, and ``write_ami_speechlike`` AMI's (NXT annotations and
headset wavs); ``speechlike_voicing`` stands in for the TTS voice bank.
Test data only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import soundfile as sf

from speakersleuth.builder_scripts.sources.base import AudioSpan, Dialogue, DialogueSource, Turn
from tests.support.corpus_fixtures import write_ami, write_dailytalk
from tests.support.vc_fixtures import VOICES, Voice, speech_like

SPEAKERS = {  # name: (gender, voice)
    "m1": ("male", VOICES["male_a"]),
    "m2": ("male", VOICES["male_b"]),
    "m3": ("male", Voice(f0=115.0, vtl=0.97, open_quotient=0.58)),
    "f1": ("female", VOICES["female_a"]),
    "f2": ("female", VOICES["female_b"]),
    "f3": ("female", Voice(f0=200.0, vtl=1.15, open_quotient=0.68)),
}
PAIRS = [("m1", "f1"), ("f2", "m2"), ("m3", "f3"), ("f1", "m2"), ("m1", "f3"), ("f2", "m3")]
WORDS = "so what did you think of the film we saw on friday night it was long but i liked the ending".split()


class SpeechLikeCorpus(DialogueSource):
    name = "speechlike"
    license = "CC0-1.0 (generated test signals)"
    hub_license = "cc0-1.0"
    citation = ""
    homepage = "tests/support/pipeline_fixtures.py"

    def __init__(self, root: str | Path, dialogues: int = 6, turns: int = 26):
        self.root = Path(root)
        self.num_dialogues = dialogues
        self.num_turns = turns

    def write(self) -> SpeechLikeCorpus:
        """Record the corpus: one wav per turn under ``root`` (skips files that exist)."""
        for dialogue in self.dialogues():
            for i, turn in enumerate(dialogue.turns):
                if not turn.audio.path.is_file():
                    turn.audio.path.parent.mkdir(parents=True, exist_ok=True)
                    voice = SPEAKERS[turn.speaker][1]
                    sf.write(
                        turn.audio.path,
                        speech_like(voice, turn.audio.end, seed=100 * int(dialogue.dialogue_id) + i),
                        16000,
                    )
        return self

    def dialogues(self) -> Iterator[Dialogue]:
        for d in range(self.num_dialogues):
            a, b = PAIRS[d % len(PAIRS)]
            turns = []
            for i in range(self.num_turns):
                speaker = (a, b)[i % 2]
                gender = SPEAKERS[speaker][0]
                path = self.root / f"d{d}" / f"{i:03d}_{speaker}.wav"
                seconds = 1.1 + 0.1 * ((d + i) % 5)
                words = WORDS[(i * 3) % 12 : (i * 3) % 12 + 4 + i % 3]
                turns.append(Turn(speaker, gender, " ".join(words), AudioSpan(path, 0.0, seconds)))
            yield Dialogue(str(d), self.name, tuple(turns))


#: DailyTalk's two voices: speaker 0 male, speaker 1 female (the genders the source gives them)
DAILYTALK_VOICES = {0: Voice(f0=100.0, vtl=0.98, open_quotient=0.57), 1: Voice(f0=225.0, vtl=1.16, open_quotient=0.66)}


def write_dailytalk_speechlike(root: Path, dialogues: int = 4, turns: int = 26) -> Path:
    """DailyTalk's on-disk layout (``metadata.json``, ``data/<d>/<u>_<spk>_d<d>.wav``) with
    ``dialogues`` dialogues of ``turns`` alternating turns, spoken by ``DAILYTALK_VOICES``."""
    layout = {
        d: [
            (u % 2, " ".join(WORDS[(u * 3) % 12 : (u * 3) % 12 + 4 + u % 3]), 1.1 + 0.1 * ((d + u) % 5))
            for u in range(turns)
        ]
        for d in range(dialogues)
    }
    write_dailytalk(root, layout, sr=16000)
    for d, utterances in layout.items():
        for u, (spk, _, seconds) in enumerate(utterances):
            sf.write(
                root / "data" / str(d) / f"{u}_{spk}_d{d}.wav",
                speech_like(DAILYTALK_VOICES[spk], seconds, seed=1000 * d + u),
                16000,
            )
    return root


#: AMI meetings of two participants, a woman and a man each (global names as in AMI: gender first)
AMI_SPEAKERS = {
    "ES2002a": (
        ("FEE005", Voice(f0=205.0, vtl=1.14, open_quotient=0.7)),
        ("MEE006", Voice(f0=112.0, vtl=0.99, open_quotient=0.56)),
    ),
    "ES2003a": (
        ("FEE009", Voice(f0=232.0, vtl=1.19, open_quotient=0.64)),
        ("MEE010", Voice(f0=132.0, vtl=1.03, open_quotient=0.6)),
    ),
    "ES2004a": (
        ("FEO011", Voice(f0=195.0, vtl=1.1, open_quotient=0.68)),
        ("MEO012", Voice(f0=98.0, vtl=0.96, open_quotient=0.54)),
    ),
}


def write_ami_speechlike(root: Path, turns: int = 26) -> tuple[Path, tuple[str, ...]]:
    """AMI's layout (``amicorpus/<M>/audio/<M>.Headset-<ch>.wav``, the NXT annotations zip) for the
    meetings of ``AMI_SPEAKERS``: ``turns`` alternating turns of about 2 s with 0.3 s pauses, each
    headset spoken by its participant's voice. Returns the folder and the meeting names."""
    meetings, length = {}, 0.0
    for m, meeting in enumerate(AMI_SPEAKERS):
        segments: list[list] = [[], []]
        start = 0.3
        for u in range(turns):
            seconds = 1.8 + 0.15 * ((m + u) % 5)
            words = WORDS[(u * 3) % 12 : (u * 3) % 12 + 4 + u % 3]
            step = seconds / len(words)
            segments[u % 2].append(
                (
                    start,
                    start + seconds,
                    [(round(start + i * step, 3), round(start + (i + 1) * step, 3), w) for i, w in enumerate(words)],
                )
            )
            start += seconds + 0.3
        length = max(
            length, float(np.ceil(start + 0.5))
        )  # whole seconds: write_ami sizes its arrays by int(seconds * sr)
        meetings[meeting] = {
            agent: {"global_name": name, "channel": c, "segments": segments[c]}
            for c, (agent, (name, _)) in enumerate(zip("AB", AMI_SPEAKERS[meeting]))
        }
    write_ami(root, meetings, seconds=length)
    for meeting, speakers in AMI_SPEAKERS.items():
        for c, (_, voice) in enumerate(speakers):
            sf.write(
                root / "amicorpus" / meeting / "audio" / f"{meeting}.Headset-{c}.wav",
                speech_like(voice, length, seed=_seed(meeting, str(c))),
                16000,
            )
    return root, tuple(AMI_SPEAKERS)


def _seed(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("/".join(parts).encode()).digest()[:4], "big")


def speechlike_voicing(monkeypatch) -> None:
    """Make the TTS voice bank speak speech-like clips: each bank voice gets a voice of its gender
    (F0 and vocal tract drawn from its id), a text its estimated duration."""
    from speakersleuth.builder_scripts.sources.chitchat_tts import estimate_duration
    from speakersleuth.builder_scripts.tts.voice_bank import Voicer

    def synthesize(self, voice_id: str, text: str) -> Path:
        path = self.path(voice_id, text)
        if not path.is_file():
            rng = np.random.default_rng(_seed(voice_id))
            female = Voicer.voice(voice_id).gender == "female"
            voice = Voice(
                f0=rng.uniform(195, 250) if female else rng.uniform(95, 130),
                vtl=rng.uniform(1.1, 1.2) if female else rng.uniform(0.95, 1.05),
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            sf.write(path, speech_like(voice, estimate_duration(text), seed=_seed(voice_id, text)), 16000)
        return path

    monkeypatch.setattr(Voicer, "synthesize", synthesize)
