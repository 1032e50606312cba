"""A small dialogue of real speech for the "Check your audio" tab's tests: turn files of two
speakers voiced by the embedded TTS bank (halves of each voice's two texts, 1.2 s or more each),
one of the host's turns spoken by another voice, so the check is expected to flag it; the same
turns as one recording with its RTTM; and ``as_uploads``, copies laid out as Gradio lays out
uploads (each file in a folder of its own), since the tab deletes what it was given."""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from tests.support.check_inputs import write_recording
from tests.support.tts_voices import TEXTS

HOST, GUEST, INTRUDER = "pm_joe", "kf_alpha", "km_kumo"
RATE = 16_000


@dataclass(frozen=True)
class CheckDialogue:
    """The turn files in dialogue order with their speakers, their manifest, the intruder's
    file name, and the same turns as ``recording`` + ``rttm``."""

    folder: Path
    turns: list[Path]
    speakers: list[str]
    manifest: Path
    intruder: str
    recording: Path
    rttm: Path


def _halves(clip: np.ndarray) -> list[np.ndarray]:
    half = len(clip) // 2
    return [clip[:half], clip[half:]]


def write_check_dialogue(folder: Path, tts_cache: Path) -> CheckDialogue:
    """Render the voices (cached in ``tts_cache``) and write the dialogue under ``folder``."""
    from speakersleuth.builder_scripts.tts.voice_bank import Voicer

    voicer = Voicer(tts_cache, threads=1)
    clips = {v: [sf.read(voicer.synthesize(v, t), dtype="float32")[0] for t in TEXTS] for v in (HOST, GUEST, INTRUDER)}
    host = [h for c in clips[HOST] for h in _halves(c)]
    guest = [h for c in clips[GUEST] for h in _halves(c)]
    intruder = _halves(clips[INTRUDER][0])[0]
    order = [host[0], guest[0], host[1], guest[1], intruder, guest[2], host[2], guest[3], host[3]]
    speakers = ["host", "guest"] * 4 + ["host"]
    folder.mkdir(parents=True, exist_ok=True)
    turns = []
    for i, (speaker, audio) in enumerate(zip(speakers, order), 1):
        turns.append(folder / f"{i:02d}_{speaker}.wav")
        sf.write(turns[-1], audio, RATE)
    manifest = folder / "manifest.csv"
    manifest.write_text(
        "turn,speaker,path\n" + "".join(f"{p.name},{s},{p.name}\n" for p, s in zip(turns, speakers)), encoding="utf-8"
    )
    recording, rttm = write_recording(
        list(zip(speakers, order)), folder, "session", 0.2, leading_gap=False, suffix=".wav"
    )
    return CheckDialogue(folder, turns, speakers, manifest, turns[4].name, recording, rttm)


def as_uploads(paths: list[Path], root: Path, names: list[str] | None = None) -> list[str]:
    """Copies of ``paths`` laid out as Gradio's uploads (``root/<random>/<name>``), as strings."""
    copies = []
    for i, path in enumerate(paths):
        target = root / uuid.uuid4().hex / (names[i] if names else path.name)
        target.parent.mkdir(parents=True)
        shutil.copyfile(path, target)
        copies.append(str(target))
    return copies
