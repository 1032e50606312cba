"""A tiny recorded-style corpus for builder tests: speech-like synthetic voices, one wav per turn.

It implements ``DialogueSource`` like any corpus module, so the whole build pipeline (segments,
speaker bank, WORLD conversion, verification, publishing) runs on it in seconds. Test data only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import soundfile as sf

from builder_scripts.sources.base import AudioSpan, Dialogue, DialogueSource, Turn
from tests.vc_fixtures import VOICES, Voice, speech_like

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
    citation = ""
    homepage = "tests/pipeline_fixtures.py"

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
                    sf.write(turn.audio.path, speech_like(voice, turn.audio.end, seed=100 * int(dialogue.dialogue_id) + i), 16000)
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
                words = WORDS[(i * 3) % 12: (i * 3) % 12 + 4 + i % 3]
                turns.append(Turn(speaker, gender, " ".join(words), AudioSpan(path, 0.0, seconds)))
            yield Dialogue(str(d), self.name, tuple(turns))
