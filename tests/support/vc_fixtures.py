"""Speech-like synthetic voices for the voice-conversion tests and benchmark.

A "speaker" is a source-filter model: a glottal flow-derivative pulse train at the speaker's F0
(with declination and a per-syllable intonation), filtered per syllable by a vowel's formant
resonators whose frequencies scale with the speaker's vocal-tract factor ``vtl`` (1.0 = the adult
male Peterson-Barney table, about 1.17 for an adult female), plus noise-burst consonants between
syllables. Clips of one speaker differ in syllable sequence and intonation (``seed``).

These are test signals, not speech: they have no words, and a speaker encoder trained on real
voices sees them out of domain. Results on them show that a conversion moves what it should
(F0, formants, embeddings), never how well it works on real speech.

>>> clip = speech_like(VOICES["male_a"], 2.0, seed=0)
>>> clip.dtype, clip.shape
(dtype('float32'), (32000,))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter

from speakersleuth.speakersleuth_dataset import SAMPLING_RATE

#: Adult male formant frequencies (Hz) of a few vowels (Peterson & Barney 1952, rounded).
VOWELS = {
    "i": (270, 2290, 3010, 3500),
    "ae": (660, 1720, 2410, 3500),
    "a": (730, 1090, 2440, 3400),
    "u": (300, 870, 2240, 3300),
    "er": (490, 1350, 1690, 3300),
    "o": (570, 840, 2410, 3400),
}
BANDWIDTHS = (80.0, 100.0, 140.0, 200.0)


@dataclass(frozen=True)
class Voice:
    f0: float  # median F0 in Hz
    vtl: float  # formant scale factor relative to the adult male table
    open_quotient: float = 0.6  # glottal open phase share (higher: softer, breathier)
    f0_spread: float = 0.08  # std of the per-syllable log-F0 offsets


VOICES = {
    "male_a": Voice(f0=105.0, vtl=1.0, open_quotient=0.55),
    "male_b": Voice(f0=125.0, vtl=1.05, open_quotient=0.6),
    "female_a": Voice(f0=215.0, vtl=1.18, open_quotient=0.7),
    "female_b": Voice(f0=240.0, vtl=1.12, open_quotient=0.65),
}


def _glottal_source(f0_track: np.ndarray, open_quotient: float) -> np.ndarray:
    """Derivative of a polynomial glottal flow pulse, one pulse per period of ``f0_track``."""
    phase = np.cumsum(f0_track / SAMPLING_RATE) % 1.0
    x = np.clip(phase / open_quotient, 0.0, 1.0)
    flow = np.where(phase < open_quotient, 27 / 4 * x**2 * (1 - x), 0.0)
    return np.diff(flow, prepend=0.0)


def _resonators(signal: np.ndarray, formants: tuple[float, ...]) -> np.ndarray:
    for freq, bw in zip(formants, BANDWIDTHS):
        r = np.exp(-np.pi * bw / SAMPLING_RATE)
        theta = 2 * np.pi * freq / SAMPLING_RATE
        a = [1.0, -2 * r * np.cos(theta), r * r]
        signal = lfilter([sum(a)], a, signal)
    return signal


def speech_like(voice: Voice, seconds: float, seed: int) -> np.ndarray:
    """A clip of ``seconds`` at 16 kHz: syllables of vowels separated by consonant noise."""
    rng = np.random.default_rng(seed)
    n = int(round(seconds * SAMPLING_RATE))
    out = np.zeros(n)
    pos = int(0.05 * SAMPLING_RATE)
    declination = np.exp(np.linspace(0.08, -0.08, n))
    while pos < n - int(0.1 * SAMPLING_RATE):
        length = min(int(rng.uniform(0.14, 0.3) * SAMPLING_RATE), n - pos)
        vowel = VOWELS[rng.choice(list(VOWELS))]
        offset = np.exp(rng.normal(0.0, voice.f0_spread))
        glide = np.exp(np.linspace(0.0, rng.normal(0.0, 0.05), length))
        f0 = voice.f0 * offset * glide * declination[pos : pos + length]
        syllable = _resonators(_glottal_source(f0, voice.open_quotient), tuple(f * voice.vtl for f in vowel))
        out[pos : pos + length] += syllable * np.hanning(length) ** 0.5
        pos += length
        gap = int(rng.uniform(0.03, 0.09) * SAMPLING_RATE)
        if pos + gap < n:  # a fricative-like burst: high-passed noise
            burst = lfilter([1.0, -0.95], [1.0], rng.standard_normal(gap)) * np.hanning(gap)
            out[pos : pos + gap] += 0.02 * burst
        pos += gap
    out += 1e-4 * rng.standard_normal(n)
    return (0.3 * out / np.abs(out).max()).astype(np.float32)


def clips(voice: Voice, count: int, seconds: float, seed: int) -> list[np.ndarray]:
    """``count`` different clips of one voice."""
    return [speech_like(voice, seconds, seed * 1000 + i) for i in range(count)]
